"""How every figure of the package draws its curves: styles that tell 20 curves apart, and the
empirical distribution function as a few thousand steps. Shared by the fit's figures and the
runs' (kept apart from both, so that drawing a run's figures loads nothing of the fitting)."""

from __future__ import annotations

import matplotlib
import numpy as np

#: Points of the empirical distribution function drawn (quantiles), enough for a smooth curve.
ECDF_POINTS = 2_000
#: Curves are told apart by colour, line style and marker together: 10 colours alone repeat.
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = "osD^v<>pPhX*"


def curve_style(index: int) -> dict:
    """Colour, line style and marker of the ``index``-th curve of a plot: no two of the first 20
    curves share colour and line style."""
    return {
        "color": matplotlib.colormaps["tab10"](index % 10),
        "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
        "marker": MARKERS[index % len(MARKERS)],
        "markevery": 0.1,
        "markersize": 4,
    }


def ecdf_points(sample: np.ndarray, points: int = ECDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``points`` steps (value, cumulative share) of the empirical distribution function
    of a non-empty ``sample``, evenly spread in probability."""
    ordered = np.sort(sample)
    levels = np.linspace(0.0, 1.0, min(points, len(ordered)))
    picks = np.minimum((levels * len(ordered)).astype(int), len(ordered) - 1)
    return ordered[picks], (picks + 1) / len(ordered)
