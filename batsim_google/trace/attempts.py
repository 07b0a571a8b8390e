"""What the lifecycle rebuild hands out: attempt and task records, as polars schemas, by batch.

An *attempt* is one submission of a task up to its end; a *task* record is its last attempt plus
counts over all its attempts. Stats, conversion, fitting and SWF logs all read these columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

#: Attributes of an attempt: the last value seen, so updates (UPDATE_*) are taken into account.
ATTRIBUTES = [
    "machine_id",
    "user",
    "scheduling_class",
    "priority",
    "cpu_request",
    "memory_request",
    "disk_request",
    "different_machine",
]

#: Columns of an attempt record. Times are seconds from the window start (-inf: before it,
#: +inf: after it); ``schedule`` is null if never scheduled, ``end``/``end_event`` null while open.
#: ``wait`` and ``makespan`` are null unless both their times are ordinary.
ATTEMPT_SCHEMA = {
    "job_id": pl.Int64,
    "task_index": pl.Int64,
    "attempt": pl.Int32,
    "submit": pl.Float64,
    "schedule": pl.Float64,
    "end": pl.Float64,
    "end_event": pl.Int8,
    "wait": pl.Float64,
    "makespan": pl.Float64,
    "machine_id": pl.Int64,
    "user": pl.String,
    "scheduling_class": pl.Int8,
    "priority": pl.Int8,
    "cpu_request": pl.Float64,
    "memory_request": pl.Float64,
    "disk_request": pl.Float64,
    "different_machine": pl.Int8,
    "events": pl.Int32,
    "updates": pl.Int32,
    "missing_info": pl.Int8,
}
#: A task record is its last attempt plus the whole task's counts (``synthesized_events``: rows
#: with missing info, over all its attempts).
TASK_SCHEMA = {
    **ATTEMPT_SCHEMA,
    "task_events": pl.Int32,
    "synthesized_events": pl.Int32,
    "attempts": pl.Int32,
    "first_submit": pl.Float64,
}


@dataclass
class LifecycleBatch:
    """What one chunk of rows completed: ended attempts, closed tasks, and submission times."""

    attempts: pl.DataFrame
    tasks: pl.DataFrame
    #: Times (s) of the SUBMIT rows used, in time order, whether each starts a new task, and
    #: whether the trace synthesized it (missing info set); none by default.
    submits: np.ndarray = field(default_factory=lambda: np.empty(0))
    new_task: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=bool))
    synthesized_submit: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=bool))
    #: Time (s) of the last row read when the batch was made: the input's end for the last batch.
    now: float = -np.inf
