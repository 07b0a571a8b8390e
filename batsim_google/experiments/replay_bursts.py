"""The bursts of a replayed window: evictions per minute, and how the window's largest jobs waited.

A quiet hour's medians hide what decides a scheduler comparison: a job of thousands of tasks
submitted at once, and the mass evictions that come with it. On both tables of attempts
(:mod:`.replay_fidelity`), over the window ``[0, duration)``:

- ``evictions_per_minute``: attempts evicted in each whole minute of the window;
- ``largest_jobs``: the :data:`LARGEST_JOBS` jobs with the most tasks submitted in the window in
  the trace (ties by job id), each with the figures of :func:`.replay_fidelity.band_figures`
  (``tasks``, ``median_wait_s``, ``p90_wait_s``, ``share_started_60s``, ``never_started``) of its
  attempts, real and simulated.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from batsim_google.experiments.replay_fidelity import MINUTE, band_figures

#: How many of the window's largest jobs the report follows.
LARGEST_JOBS = 5
#: The figures of a job's attempts the report keeps.
JOB_FIGURES = ("tasks", "median_wait_s", "p90_wait_s", "share_started_60s", "never_started")


def evictions_per_minute(attempts: pl.DataFrame, duration: float) -> np.ndarray:
    """Attempts evicted in each whole minute of ``[0, duration)``."""
    minutes = int(duration // MINUTE)
    ends = attempts.filter(pl.col("evicted") & pl.col("end").is_not_null())["end"].to_numpy()
    counts, _ = np.histogram(ends, bins=np.arange(minutes + 1) * MINUTE)
    return counts


def submitted_in(attempts: pl.DataFrame, duration: float) -> pl.DataFrame:
    """The attempts submitted in ``[0, duration)``."""
    return attempts.filter((pl.col("submit") >= 0) & (pl.col("submit") < duration))


def largest_jobs(attempts: pl.DataFrame, duration: float, count: int = LARGEST_JOBS) -> pl.DataFrame:
    """``job``, ``group`` and ``tasks`` (distinct tasks submitted in the window) of the ``count``
    jobs with the most, most first."""
    return (
        submitted_in(attempts, duration)
        .filter(pl.col("job").is_not_null())
        .group_by("job")
        .agg(pl.col("group").first(), pl.col("task").n_unique().alias("tasks"))
        .sort(["tasks", "job"], descending=[True, False])
        .head(count)
    )


def waits(attempts: pl.DataFrame, duration: float) -> np.ndarray:
    """Waits of the attempts submitted in the window, sorted; inf for those not started in it."""
    rows = submitted_in(attempts, duration)
    start = rows["start"].to_numpy().astype(float)
    start = np.where(np.isnan(start) | (start >= duration), math.inf, start)
    return np.sort(start - rows["submit"].to_numpy())


def job_waits(attempts: pl.DataFrame, job: str, duration: float) -> np.ndarray:
    """:func:`waits` of ``job``'s attempts."""
    return waits(attempts.filter(pl.col("job") == job), duration)


def bursts(real: pl.DataFrame, simulated: pl.DataFrame, duration: float) -> dict:
    """The report's ``bursts`` key (see the module)."""
    jobs = []
    for job, group, tasks in largest_jobs(real, duration).iter_rows():
        sides = {}
        for name, table in (("real", real), ("simulated", simulated)):
            figures = band_figures(table.filter(pl.col("job") == job), duration)
            sides[name] = {key: figures[key] for key in JOB_FIGURES}
        jobs.append({"job": job, "group": group, "tasks": tasks, **sides})
    return {
        "evictions_per_minute": {
            name: evictions_per_minute(table, duration).tolist()
            for name, table in (("real", real), ("simulated", simulated))
        },
        "largest_jobs": jobs,
    }
