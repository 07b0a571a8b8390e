"""Test-only extraction of the model paper's task sample from trace parts (not a lifecycle parser).

The paper keeps the tasks with exactly three events, SUBMIT, SCHEDULE and FINISH or KILL
(Section 2, 95 % of the tasks); within a few parts these are the tasks whose whole life falls
inside them. Submission time = SUBMIT, makespan = end - SCHEDULE. Tasks present at the start of
the trace (times before the window) are left out. This is deliberately simple and only feeds
tests and benchmarks; the project's trace reader is written elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from batsim_google.trace.reader import read_batches
from batsim_google.trace.schema import BEFORE_WINDOW, MICROSECONDS, TIME_OFFSET_S, TaskEvent

COLUMNS = ["time", "job_id", "task_index", "event_type", "priority", "scheduling_class"]


def three_event_tasks(trace: Path) -> pl.DataFrame:
    frame = pl.concat(
        pl.from_arrow(batch.select(COLUMNS)) for _, batch in read_batches([trace], "task_events")
    )
    event = pl.col("event_type")
    seconds = pl.col("time") / MICROSECONDS - TIME_OFFSET_S
    at = lambda code: seconds.filter(event == int(code)).first()  # noqa: E731
    tasks = (
        frame.group_by("job_id", "task_index")
        .agg(
            pl.len().alias("events"),
            (pl.col("time") == BEFORE_WINDOW).any().alias("before_window"),
            (event == int(TaskEvent.SUBMIT)).sum().alias("submits"),
            (event == int(TaskEvent.SCHEDULE)).sum().alias("schedules"),
            event.filter(event.is_in([int(TaskEvent.FINISH), int(TaskEvent.KILL)])).first().alias("end_event"),
            at(TaskEvent.SUBMIT).alias("subtime"),
            at(TaskEvent.SCHEDULE).alias("start"),
            seconds.filter(event.is_in([int(TaskEvent.FINISH), int(TaskEvent.KILL)])).first().alias("end"),
            pl.col("priority").last().alias("google_priority"),
            pl.col("scheduling_class").last(),
        )
        .filter(
            (pl.col("events") == 3) & (pl.col("submits") == 1) & (pl.col("schedules") == 1)
            & pl.col("end_event").is_not_null() & ~pl.col("before_window")
        )
    )
    return tasks.select(
        "subtime", (pl.col("end") - pl.col("start")).alias("makespan"), "end_event",
        "google_priority", "scheduling_class",
    ).sort("subtime")
