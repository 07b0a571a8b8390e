"""Means over replications: bootstrap percentile intervals, the Student-t half-width, and how many
replications an error target needs.

Replications of a simulation (different seeds) are independent draws of its metrics. The campaign
summary gives a metric's mean over ``n`` of them the *bootstrap percentile* interval: the
``alpha/2`` and ``1 - alpha/2`` quantiles of the means of ``BOOTSTRAP_RESAMPLES`` resamples (drawn
with replacement, from a generator of fixed seed, so a summary is reproducible). That interval lies
within the values seen, so a metric that cannot be negative (energy, makespan, waiting) never gets
an interval below 0, as Student-t's ``mean +- t s / sqrt(n)`` did on skewed samples of few seeds;
it does not assume the mean normal. One replication has no interval. With few replications (say
under 10) any interval is rough: the table shows ``n`` beside it.

Gaevoy et al. set "the error of simulation" to 5 % and derive from the central limit theorem how
many replications that takes: the ``n`` for which the normal interval's half-width
``z(1 - alpha/2) s / sqrt(n)`` is 5 % of the mean, ``n = (z s / (0.05 mean))^2``, from the spread
``s`` the replications show (``validate`` uses it, with the Student-t half-width).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import stats

CONFIDENCE = 0.95
ERROR = 0.05
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20_160_616


def half_width(std: np.ndarray, n: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """Half-width of the Student-t interval of a mean of ``n`` values of sample std ``std``
    (NaN when n < 2)."""
    std, n = np.asarray(std, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        quantile = stats.t.ppf(0.5 + confidence / 2, n - 1)
        return np.where(n >= 2, quantile * std / np.sqrt(n), np.nan)


def bootstrap_interval(
    values,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    rng: np.random.Generator | None = None,
) -> tuple[float, float] | None:
    """Bootstrap percentile interval of the mean of ``values``; None for fewer than 2 values."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return None
    rng = np.random.default_rng(BOOTSTRAP_SEED) if rng is None else rng
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    low, high = np.quantile(means, [0.5 - confidence / 2, 0.5 + confidence / 2])
    return float(low), float(high)


def aggregate(frame: pl.DataFrame, keys: list[str], metrics: list[str], confidence: float = CONFIDENCE) -> pl.DataFrame:
    """One row per group of ``keys`` and metric: ``n`` (non-null values), ``mean``, ``std``,
    ``ci_low``, ``ci_high`` (bootstrap percentile at ``confidence``; null when n < 2)."""
    long = frame.unpivot(index=keys, on=metrics, variable_name="metric", value_name="value").with_columns(
        pl.col("value").cast(pl.Float64)
    )
    grouped = (
        long.drop_nulls("value")
        .group_by([*keys, "metric"], maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col("value").mean().alias("mean"),
            pl.col("value").std().alias("std"),
            pl.col("value").alias("values"),
        )
    )
    intervals = [bootstrap_interval(values.to_numpy(), confidence) or (None, None) for values in grouped["values"]]
    return (
        grouped.drop("values")
        .with_columns(
            pl.Series("ci_low", [low for low, _ in intervals], dtype=pl.Float64),
            pl.Series("ci_high", [high for _, high in intervals], dtype=pl.Float64),
        )
        .fill_nan(None)
    )


def replications_needed(mean: float, std: float, error: float = ERROR, confidence: float = CONFIDENCE) -> int | None:
    """Replications for a normal interval of half-width ``error`` x |mean| (Gaevoy et al.'s rule);
    None when the mean is 0 or the spread unknown."""
    if not (math.isfinite(mean) and math.isfinite(std)) or mean == 0:
        return None
    z = stats.norm.ppf(0.5 + confidence / 2)
    return max(1, math.ceil((z * std / (error * abs(mean))) ** 2))
