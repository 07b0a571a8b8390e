"""Step functions of time built from intervals (tasks running, tasks suspended), and time averages.

A step function is a table ``time``, ``value``: the value holds from its time until the next row's;
it is 0 before the first row.
"""

from __future__ import annotations

import numpy as np
import polars as pl


def interval_steps(start: pl.Series | np.ndarray, end: pl.Series | np.ndarray, weight=1.0) -> pl.DataFrame:
    """The sum over intervals [start, end[ of their ``weight`` (a number or one per interval)."""
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    weight = np.broadcast_to(np.asarray(weight, dtype=float), start.shape)
    changes = pl.DataFrame({"time": np.concatenate([start, end]), "change": np.concatenate([weight, -weight])})
    return (
        changes.group_by("time")
        .agg(pl.col("change").sum())
        .sort("time")
        .select("time", pl.col("change").cum_sum().alias("value"))
    )


def time_average(time: np.ndarray, value: np.ndarray, start: float, end: float) -> float:
    """Mean of the step function (``time``, ``value``) over [start, end] (``start`` < ``end``)."""
    if not end > start:
        raise ValueError(f"time_average needs start < end (got {start}, {end})")
    time, value = np.asarray(time, dtype=float), np.asarray(value, dtype=float)
    edges = np.clip(np.concatenate([[start], time, [end]]), start, end)
    levels = np.concatenate([[0.0], value])
    return float(np.sum(levels * np.diff(edges)) / (end - start))
