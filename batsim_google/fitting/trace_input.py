"""The Google trace as a fitting input: the model paper's tasks, from their rebuilt lifecycles.

Fitting uses the population of the paper's Tables 3-7 (:func:`~batsim_google.trace.population.
paper_population`): three-event tasks ended by FINISH or KILL, with their submission time, the
makespan of their one attempt, their end event, priority (0-11) and scheduling class. Tasks whose
makespan is unknown (a time before or after the trace window) are counted, not fitted. Their job
ID and user come along for job-level arrivals; so, when the trace has job_events, does each job's
own record (:func:`trace_job_records`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from batsim_google.trace.population import paper_population
from batsim_google.trace.reader import read_batches
from batsim_google.trace.rebuild import rebuild
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent, seconds
from batsim_google.trace.vocabulary import DEFAULT_GRACE

CENSORED = "makespan unknown (a time outside the trace window)"


def trace_task_table(
    sources: Iterable[str | Path],
    account: RowAccount,
    *,
    grace: float = DEFAULT_GRACE,
    workers: int = 1,
    progress: bool = False,
) -> tuple[pl.DataFrame, Counter]:
    """The fitting table of the trace in ``sources`` and the modeled tasks left out, by reason."""
    frames, left_out = [], Counter()
    for batch in rebuild(sources, account, grace=grace, workers=workers, progress=progress):
        tasks = paper_population(batch.tasks)
        known = tasks.filter(pl.col("makespan").is_not_null() & pl.col("first_submit").is_finite())
        left_out[CENSORED] += tasks.height - known.height
        frames.append(
            known.select(
                pl.col("first_submit").alias("subtime"),
                "makespan",
                "end_event",
                pl.col("priority").alias("google_priority"),
                "scheduling_class",
                "job_id",
                "user",
            )
        )
    return pl.concat(frames).sort("subtime"), left_out


def trace_job_records(sources: Iterable[str | Path], account: RowAccount) -> pl.DataFrame:
    """Each job's first SUBMIT in job_events: ``job_id``, ``job_submit`` (seconds from the window
    start, finite), and the job's ``job_user`` and ``job_scheduling_class``."""
    frames = []
    for _, batch in read_batches(sources, "job_events", account=account):
        # job events share the task events' codes
        submits = pl.from_arrow(batch).filter(pl.col("event_type") == int(TaskEvent.SUBMIT))
        account.used += batch.num_rows
        frames.append(
            submits.select(
                "job_id",
                pl.Series("job_submit", seconds(submits["time"].to_numpy()), dtype=pl.Float64),
                pl.col("user").alias("job_user"),
                pl.col("scheduling_class").alias("job_scheduling_class"),
            )
        )
    if not frames:
        return pl.DataFrame(schema={"job_id": pl.Int64, "job_submit": pl.Float64})
    return (
        pl.concat(frames)
        .filter(pl.col("job_submit").is_finite())
        .sort("job_submit")
        .group_by("job_id", maintain_order=True)
        .first()
    )
