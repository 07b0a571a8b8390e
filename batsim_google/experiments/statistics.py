"""Means over replications: Student-t confidence intervals, and how many replications an error
target needs.

Replications of a simulation (different seeds) are independent draws of its metrics, so a metric's
mean over ``n`` of them has the Student-t interval ``mean +- t(1 - alpha/2, n - 1) s / sqrt(n)``.
Gaevoy et al. set "the error of simulation" to 5 % and derive from the central limit theorem how
many replications that takes: the ``n`` for which the normal interval's half-width
``z(1 - alpha/2) s / sqrt(n)`` is 5 % of the mean, ``n = (z s / (0.05 mean))^2``, from the spread
``s`` the replications show.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import stats

CONFIDENCE = 0.95
ERROR = 0.05


def half_width(std: np.ndarray, n: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """Half-width of the Student-t interval of a mean of ``n`` values of sample std ``std``
    (NaN when n < 2)."""
    std, n = np.asarray(std, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        quantile = stats.t.ppf(0.5 + confidence / 2, n - 1)
        return np.where(n >= 2, quantile * std / np.sqrt(n), np.nan)


def aggregate(frame: pl.DataFrame, keys: list[str], metrics: list[str], confidence: float = CONFIDENCE) -> pl.DataFrame:
    """One row per group of ``keys`` and metric: ``n`` (non-null values), ``mean``, ``std``,
    ``ci_low``, ``ci_high`` (Student-t at ``confidence``)."""
    long = frame.unpivot(index=keys, on=metrics, variable_name="metric", value_name="value").with_columns(
        pl.col("value").cast(pl.Float64)
    )
    grouped = long.drop_nulls("value").group_by([*keys, "metric"], maintain_order=True).agg(
        pl.len().alias("n"), pl.col("value").mean().alias("mean"), pl.col("value").std().alias("std"),
    )
    half = half_width(grouped["std"].fill_null(np.nan).to_numpy(), grouped["n"].to_numpy(), confidence)
    return grouped.with_columns(
        (pl.col("mean") - pl.Series(half)).alias("ci_low"), (pl.col("mean") + pl.Series(half)).alias("ci_high")
    ).fill_nan(None)


def replications_needed(mean: float, std: float, error: float = ERROR, confidence: float = CONFIDENCE) -> int | None:
    """Replications for a normal interval of half-width ``error`` x |mean| (Gaevoy et al.'s rule);
    None when the mean is 0 or the spread unknown."""
    if not (math.isfinite(mean) and math.isfinite(std)) or mean == 0:
        return None
    z = stats.norm.ppf(0.5 + confidence / 2)
    return max(1, math.ceil((z * std / (error * abs(mean))) ** 2))
