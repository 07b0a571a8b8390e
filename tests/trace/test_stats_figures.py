"""The trace's CDF figures: each curve rises from the share of zeros (left of the log axis) at its
first value, its count in the legend, so that a group of three tasks reads as such."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from batsim_google.trace.stats import LogHistogram
from batsim_google.trace.stats_figures import _cdf


def test_a_cdf_starts_at_its_zeros_and_counts_its_values(tmp_path, monkeypatch):
    saved, save = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, path, **kw: (saved.append(self), save(self, path, **kw)))
    gaps = LogHistogram()
    gaps.add(np.array([0.0, 2.0, 2.0, 50.0]))
    three = LogHistogram()
    three.add(np.array([760.0, 760.0, 760.0]))
    _cdf(tmp_path / "cdf.png", [("gaps (4)", gaps), ("production (3)", three)], "s", "title")
    first, single = saved[0].axes[0].lines
    assert first.get_ydata()[0] == pytest.approx(0.25)  # the zero, left of the log axis
    assert single.get_ydata()[0] == 0.0 and single.get_ydata()[-1] == pytest.approx(1.0)  # a step, not a stub
    assert [t.get_text() for t in saved[0].axes[0].get_legend().get_texts()] == ["gaps (4)", "production (3)"]
