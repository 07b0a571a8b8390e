"""The Google trace as a fitting input: the model paper's tasks, from their rebuilt lifecycles.

Fitting uses the population of the paper's Tables 3-7 (:func:`~batsim_google.trace.population.
paper_population`): three-event tasks ended by FINISH or KILL, with their submission time, the
makespan of their one attempt, their end event, priority (0-11) and scheduling class. Tasks whose
makespan is unknown (a time before or after the trace window) are counted, not fitted. Their job
ID and user come along for job-level arrivals; so, when the trace has job_events, does each job's
own record (:func:`trace_job_records`).

With ``censored``, the tasks the window cuts come too (:mod:`.censored` fits their lifetimes):
tasks submitted and scheduled in the window and still running at the input's end (``censored``,
their makespan a lower bound, kind ``service``: they were not seen to finish) and the attempts
running at the window's start (``resident``: submitted at 0, their makespan the residual life from
0 to their end, or censored at the input's end; an eviction or a lost task censors it too, since it
would have gone on). Their ``end_event`` is null when censored. The other tasks submitted in the
input (never scheduled; ended by EVICT, FAIL or LOST, or with more than three events) come as
rows without a makespan, ``no_lifetime`` saying why: no lifetime law can use them, but they are
submissions, so the arrival rate, the jobs' sizes and the classes' requests count them
(:mod:`.model_fit`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.trace.population import paper_population
from batsim_google.trace.reader import read_batches
from batsim_google.trace.rebuild import rebuild
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent, seconds
from batsim_google.trace.vocabulary import DEFAULT_GRACE

CENSORED = "makespan unknown (a time outside the trace window)"
#: Ends that stop a resident's life; an eviction or a lost task only censors it.
LIFE_ENDS = (int(TaskEvent.FINISH), int(TaskEvent.KILL), int(TaskEvent.FAIL))
#: The trace's columns a task carries into the table as they are.
CARRIED = ("scheduling_class", "job_id", "user", "cpu_request", "memory_request")


def trace_task_table(
    sources: Iterable[str | Path],
    account: RowAccount,
    *,
    grace: float = DEFAULT_GRACE,
    workers: int = 1,
    progress: bool = False,
    censored: bool = False,
) -> tuple[pl.DataFrame, Counter]:
    """The fitting table of the trace in ``sources`` and the tasks left out of the lifetime fits, by
    reason (without ``censored``: left out of the table; with it: in the table as tasks without a
    lifetime, their reason in ``no_lifetime``, beside the cut tasks flagged ``censored`` and
    ``resident``; module docstring)."""
    frames, left_out, cut, lifeless, now = [], Counter(), [], [], -np.inf
    for batch in rebuild(sources, account, grace=grace, workers=workers, progress=progress):
        now = max(now, batch.now)
        tasks = paper_population(batch.tasks)
        known = tasks.filter(pl.col("makespan").is_not_null() & pl.col("first_submit").is_finite())
        if censored:
            cut.append(_cut(batch))
            lifeless.append(_without_lifetime(batch.tasks, known))
        else:
            left_out[CENSORED] += tasks.height - known.height
        frames.append(
            known.select(
                pl.col("first_submit").alias("subtime"),
                "makespan",
                "end_event",
                pl.col("priority").alias("google_priority"),
                *CARRIED,
            )
        )
    table = pl.concat(frames)
    if censored:
        flags = [pl.lit(False).alias("censored"), pl.lit(False).alias("resident")]
        table = pl.concat(
            [table.with_columns(flags), *(_cut_rows(frame, now) for frame in cut), *lifeless],
            how="diagonal_relaxed",
        )
        left_out.update(table["no_lifetime"].drop_nulls().to_list())
    return table.sort("subtime"), left_out


NEVER_SCHEDULED = "never scheduled"
OTHER_LIFECYCLE = "ended by EVICT, FAIL or LOST, or with more than three events"


def _without_lifetime(tasks: pl.DataFrame, known: pl.DataFrame) -> pl.DataFrame:
    """The tasks submitted in the input that neither the paper's population (``known``) nor the
    still running hold: submitted at their first SUBMIT, no makespan, and why in ``no_lifetime``."""
    submitted = tasks.filter(pl.col("first_submit").is_finite())
    still_open = (pl.col("end").is_null() & pl.col("schedule").is_finite()).fill_null(False)
    others = submitted.filter(~still_open).join(
        known.select("job_id", "task_index"), on=["job_id", "task_index"], how="anti"
    )
    return others.select(
        pl.col("first_submit").alias("subtime"),
        pl.lit(None, pl.Float64).alias("makespan"),
        pl.lit(None, pl.Int8).alias("end_event"),
        pl.col("priority").alias("google_priority"),
        *CARRIED,
        pl.lit(False).alias("censored"),
        pl.lit(False).alias("resident"),
        pl.when(pl.col("schedule").is_null())
        .then(pl.lit(NEVER_SCHEDULED))
        .otherwise(pl.lit(OTHER_LIFECYCLE))
        .alias("no_lifetime"),
    )


def _cut(batch) -> pl.DataFrame:
    """Of one batch, the attempts running at the window's start and the tasks submitted and
    scheduled in it and still open (their end comes from the input's end, known at the last batch)."""
    resident = batch.attempts.filter(pl.col("schedule") == -np.inf).with_columns(pl.lit(True).alias("resident"))
    still_open = batch.tasks.filter(
        pl.col("end").is_null() & pl.col("schedule").is_finite() & pl.col("first_submit").is_finite()
    ).with_columns(pl.lit(False).alias("resident"))
    keep = [
        "first_submit",
        "schedule",
        "end",
        "end_event",
        "priority",
        *CARRIED,
        "resident",
    ]
    return pl.concat(
        [resident.with_columns(pl.lit(0.0).alias("first_submit")).select(keep), still_open.select(keep)],
        how="vertical_relaxed",
    )


def _cut_rows(frame: pl.DataFrame, now: float) -> pl.DataFrame:
    ended = pl.col("end").is_not_null() & pl.col("end").is_finite() & pl.col("end_event").is_in(LIFE_ENDS)
    stop = pl.when(pl.col("end").is_not_null() & pl.col("end").is_finite()).then(pl.col("end")).otherwise(now)
    began = pl.when(pl.col("resident")).then(0.0).otherwise(pl.col("schedule"))
    return frame.select(
        pl.col("first_submit").alias("subtime"),
        (stop - began).alias("makespan"),
        pl.when(ended).then(pl.col("end_event")).otherwise(None).cast(pl.Int8).alias("end_event"),
        pl.col("priority").alias("google_priority"),
        *CARRIED,
        (~ended).alias("censored"),
        "resident",
    )


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
