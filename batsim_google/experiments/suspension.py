"""Time spent suspended, the ICCP study's measure (Duong, Loo, Tan): from an eviction to the
task's next start.

An evicted task waits (with ``--restart delayed``, K seconds and then in the queue like any task;
with ``immediate``, in the queue at once) until one of its jobs starts again: that interval is a
suspension, and a task evicted several times adds them up. Stops by machine failures are not
evictions and do not count. A task that never starts again after an eviction is suspended until
it ended (e.g. killed by its user while waiting), or until the end of the run if it never did or
was still queued then (the interval is *censored* there); a task the scheduler gave up at the
eviction (outcome ``not_restarted``) ended there and is not waiting.
"""

from __future__ import annotations

import polars as pl

from batsim_google.experiments.timeline import interval_steps
from batsim_google.scheduling.tasks import Outcome, StopReason


def suspension_intervals(jobs: pl.DataFrame, tasks: pl.DataFrame, run_end: float) -> pl.DataFrame:
    """One row per suspension: ``task_id``, ``start`` (the evicted job's end), ``end`` (the next
    start, the task's end, or ``run_end``) and ``censored``. ``jobs``: :func:`.outputs.started_jobs`;
    ``tasks``: the accounting's tasks (``task_id``, ``outcome``, ``ended``)."""
    following = (
        jobs.select("task_id", "starting_time", "finish_time", "end_reason")  # not a copy of every column sorted
        .sort("task_id", "starting_time")
        .with_columns(pl.col("starting_time").shift(-1).over("task_id").alias("next_start"))
    )
    evicted = following.filter(pl.col("end_reason") == StopReason.EVICTION.value).join(
        tasks.select("task_id", "outcome", "ended"), on="task_id", how="left"
    )
    waiting = pl.col("next_start").is_not_null() | (pl.col("outcome") != Outcome.NOT_RESTARTED.value).fill_null(True)
    ended_waiting = pl.col("ended").is_not_null() & (pl.col("outcome") != Outcome.PENDING_AT_END.value).fill_null(False)
    censored = pl.col("next_start").is_null() & ~ended_waiting
    return evicted.filter(waiting).select(
        "task_id",
        pl.col("finish_time").alias("start"),
        pl.coalesce("next_start", pl.when(ended_waiting).then(pl.col("ended")), pl.lit(run_end)).alias("end"),
        censored.alias("censored"),
    )


def suspension_per_task(intervals: pl.DataFrame) -> pl.Series:
    """Total time suspended of every task suspended at least once (seconds)."""
    per_task = intervals.group_by("task_id", maintain_order=True).agg(  # the same mean's bits in every process
        (pl.col("end") - pl.col("start")).sum().alias("suspended")
    )
    return per_task["suspended"]


def suspended_over_time(intervals: pl.DataFrame) -> pl.DataFrame:
    """Number of tasks suspended at each time (a step function, see :mod:`.timeline`)."""
    return interval_steps(intervals["start"], intervals["end"])
