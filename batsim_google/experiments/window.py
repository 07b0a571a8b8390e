"""The measurement window: the span of simulated time a run's metrics are taken over.

A run starts empty and, without a horizon, lasts until its longest service ends: both ends are
far from the steady state a study means to measure. A window ``[start, end]`` (``start``: the
warm-up, ``end``: the horizon, or the run's end) keeps the metrics to that span:

- CPU-seconds (utilization, delivered work) and the load's energy count each job's *share* of
  its run inside the window: a job running from ``a`` to ``b`` counts
  ``max(0, min(b, end) - max(a, start))`` seconds;
- Batsim's energy is its cumulative ``out_consumed_energy.csv`` read at both ends; between two of
  its records the power is constant (Batsim writes one at every job start and end and power state
  change), so the reading is a linear interpolation, exact;
- waiting times and slowdowns are those of the tasks (jobs) *submitted* in ``[start, end)``.

``run``'s default window is the workload's *span* (:func:`span_window`): from the first submission
to the last one plus the mean gap between two submissions. That is the time the arrivals stand
for (n submissions spaced g apart stand for n x g seconds, and the last one's own slot is inside,
so every task is counted), the cell under the workload's load. After it the cell only drains:
the longest jobs end alone (a Google workload's services run for weeks), and a window to the
run's end measures that tail, not the cell. The span depends on no single job's duration, as
"the last submission + its duration" would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from batsim_google.errors import ParameterError
from batsim_google.parameters import MAX_TIME_S


@dataclass(frozen=True)
class Window:
    """``[start, end]`` in simulated seconds; ``end`` None: the run's end."""

    start: float = 0.0
    end: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start) and 0 <= self.start <= MAX_TIME_S):
            raise ParameterError(f"warmup must be a number of seconds >= 0 and <= {MAX_TIME_S:.4g} (got {self.start})")
        if self.end is not None and not self.end <= MAX_TIME_S:
            raise ParameterError(f"the horizon must be <= {MAX_TIME_S:.4g} seconds (got {self.end:g})")
        if self.end is not None and not self.end > self.start:
            raise ParameterError(f"the horizon ({self.end:g} s) must come after the warm-up ({self.start:g} s)")

    def bounds(self, run_end: float) -> tuple[float, float]:
        """The window's ends in a run that ended at ``run_end``; an empty window is an error, but in
        a run in which no job ran (``run_end`` 0, e.g. every job rejected) it has no figure."""
        end = run_end if self.end is None else min(self.end, run_end)
        if end <= self.start and run_end > 0:
            raise ParameterError(f"the warm-up ({self.start:g} s) leaves nothing of a run that ended at {run_end:g} s")
        return self.start, max(end, self.start)


def window_of(warmup: float = 0.0, horizon: float | None = None) -> Window | None:
    """The window of a warm-up and a horizon (0 or None: none), None when neither is set: the
    metrics of the whole run."""
    if not warmup and not horizon:
        return None
    return Window(float(warmup), float(horizon) if horizon else None)


def span_window(submissions: np.ndarray, warmup: float = 0.0) -> Window | None:
    """The workload's span (see the module) from its jobs' submission times, started at the
    ``warmup`` if later than the first submission; None when there is no span to measure (one
    job, all at once, or a warm-up past it)."""
    times = np.asarray(submissions, dtype=float)
    if times.size < 2 or times.min() == times.max():
        return None
    first, last = float(times.min()), float(times.max())
    end = last + (last - first) / (times.size - 1)
    return Window(max(first, float(warmup)), end) if warmup < end else None


def seconds_inside(start: str, finish: str, low: float, high: float) -> pl.Expr:
    """Seconds of ``[start, finish]`` inside ``[low, high]`` (0 when apart)."""
    inside = pl.min_horizontal(pl.col(finish), pl.lit(high)) - pl.max_horizontal(pl.col(start), pl.lit(low))
    return inside.clip(lower_bound=0.0)


def clipped_jobs(jobs: pl.DataFrame, low: float, high: float) -> pl.DataFrame:
    """The jobs that ran inside ``[low, high]``, their ``starting_time``, ``finish_time`` and
    ``execution_time`` cut to it."""
    clipped = jobs.filter((pl.col("finish_time") > low) & (pl.col("starting_time") < high)).with_columns(
        pl.col("starting_time").clip(lower_bound=low),
        pl.col("finish_time").clip(upper_bound=high),
    )
    return clipped.with_columns((pl.col("finish_time") - pl.col("starting_time")).alias("execution_time"))


def submitted_inside(column: str, low: float, high: float) -> pl.Expr:
    """Whether a submission time falls in ``[low, high)``."""
    return (pl.col(column) >= low) & (pl.col(column) < high)


def energy_between(records: pl.DataFrame, low: float, high: float) -> float:
    """Joules consumed between ``low`` and ``high``, from Batsim's cumulative ``time``,
    ``energy`` records (0 J at time 0; nothing after the last record: the run had ended)."""
    times = np.concatenate([[0.0], records["time"].to_numpy()])
    energy = np.concatenate([[0.0], records["energy"].to_numpy()])
    return float(np.interp(high, times, energy) - np.interp(low, times, energy))
