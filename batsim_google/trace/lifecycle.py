"""Task lifecycles rebuilt from ``task_events``: attempts and tasks as columnar records.

A task (job ID, task index) goes through attempts SUBMIT -> [SCHEDULE] -> end (EVICT, FAIL,
FINISH, KILL, LOST), possibly with UPDATE_PENDING / UPDATE_RUNNING in between, and may be submitted
again after any end. The state after an event depends on the event only (format document,
"Job and task life cycles"), so a whole chunk of rows is checked at once: sorted by task, each row's
previous state is its predecessor's event (or the state carried from earlier chunks), and a table
says which (state, event) pairs are possible. An impossible row is skipped (or, strict, reported)
and the check runs again on what is left.

Memory is bounded by the tasks in flight: one row per pending or running task, plus tasks that
ended less than ``grace`` seconds ago (they may be resubmitted: in the sample 99.9 % of
resubmissions come within 15 minutes, the latest after 2.6 hours). A task silent for longer is
reported closed; a later resubmission then starts a new task record.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np
import polars as pl
import pyarrow as pa
from tqdm import tqdm

from .accounting import RowAccount
from .reader import read_batches, source_files
from .schema import TaskEvent, seconds

#: Rows processed together: large enough to amortize the per-chunk work, small enough to stay flat.
CHUNK_ROWS = 1 << 18
#: Default time (s) a dead task is kept, waiting for a resubmission, before it is reported closed.
DEFAULT_GRACE = 3600.0
KEY = ["job_id", "task_index"]
#: Attributes of an attempt: the last value seen, so updates (UPDATE_*) are taken into account.
ATTRIBUTES = [
    "machine_id", "user", "scheduling_class", "priority", "cpu_request", "memory_request",
    "disk_request", "different_machine",
]


class State(IntEnum):
    """State of a task between events."""

    UNSEEN = 0
    PENDING = 1
    RUNNING = 2
    DEAD = 3


ENDS = (TaskEvent.EVICT, TaskEvent.FAIL, TaskEvent.FINISH, TaskEvent.KILL, TaskEvent.LOST)
UPDATES = (TaskEvent.UPDATE_PENDING, TaskEvent.UPDATE_RUNNING)

_STATE_AFTER = np.zeros(len(TaskEvent), dtype=np.int8)
_STATE_AFTER[[TaskEvent.SUBMIT, TaskEvent.UPDATE_PENDING]] = State.PENDING
_STATE_AFTER[[TaskEvent.SCHEDULE, TaskEvent.UPDATE_RUNNING]] = State.RUNNING
_STATE_AFTER[list(ENDS)] = State.DEAD

#: Possible (state before, event) pairs. A pending task may also end (FAIL/KILL while pending are
#: documented; EVICT and LOST while pending occur in the trace), but only a running one finishes.
_ALLOWED = np.zeros((len(State), len(TaskEvent)), dtype=bool)
_ALLOWED[[State.UNSEEN, State.DEAD], TaskEvent.SUBMIT] = True
_ALLOWED[State.PENDING, [TaskEvent.SCHEDULE, TaskEvent.UPDATE_PENDING]] = True
_ALLOWED[State.PENDING, [TaskEvent.EVICT, TaskEvent.FAIL, TaskEvent.KILL, TaskEvent.LOST]] = True
_ALLOWED[State.RUNNING, [*ENDS, TaskEvent.UPDATE_RUNNING]] = True

_IS_END = np.zeros(len(TaskEvent), dtype=bool)
_IS_END[list(ENDS)] = True
_IS_UPDATE = np.zeros(len(TaskEvent), dtype=bool)
_IS_UPDATE[list(UPDATES)] = True

#: Columns of an attempt record. Times are seconds from the window start (-inf: before it,
#: +inf: after it); ``schedule`` is null if never scheduled, ``end``/``end_event`` null while open.
#: ``wait`` and ``makespan`` are null unless both their times are ordinary.
ATTEMPT_SCHEMA = {
    "job_id": pl.Int64, "task_index": pl.Int64, "attempt": pl.Int32,
    "submit": pl.Float64, "schedule": pl.Float64, "end": pl.Float64, "end_event": pl.Int8,
    "wait": pl.Float64, "makespan": pl.Float64,
    "machine_id": pl.Int64, "user": pl.String, "scheduling_class": pl.Int8, "priority": pl.Int8,
    "cpu_request": pl.Float64, "memory_request": pl.Float64, "disk_request": pl.Float64,
    "different_machine": pl.Int8, "events": pl.Int32, "updates": pl.Int32, "missing_info": pl.Int8,
}
#: A task record is its last attempt plus the whole task's counts.
TASK_SCHEMA = {**ATTEMPT_SCHEMA, "task_events": pl.Int32, "attempts": pl.Int32, "first_submit": pl.Float64}
#: The model paper's population (Section 2): tasks with exactly three events, SUBMIT, SCHEDULE and
#: an end, that end by FINISH (finite tasks) or KILL (services); 95 % of the trace's tasks.
MODELED_ENDS = {"finish": TaskEvent.FINISH, "kill": TaskEvent.KILL}


def paper_population(tasks: pl.DataFrame) -> pl.DataFrame:
    """The task records of :data:`MODELED_ENDS`' three-event tasks (Tables 3-7, the fitted data)."""
    ends = [int(code) for code in MODELED_ENDS.values()]
    return tasks.filter((pl.col("task_events") == 3) & pl.col("end_event").is_in(ends))


_CARRIED = {
    **{name: kind for name, kind in TASK_SCHEMA.items() if name not in ("wait", "makespan")},
    "state": pl.Int8, "last_time": pl.Float64,
}


@dataclass
class LifecycleBatch:
    """What one chunk of rows completed: ended attempts, closed tasks, and submission times."""

    attempts: pl.DataFrame
    tasks: pl.DataFrame
    #: Times (s) of the SUBMIT rows used, in time order, and whether each starts a new task.
    submits: np.ndarray
    new_task: np.ndarray


def _with_durations(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    def span(start: str, stop: str) -> pl.Expr:
        ordinary = pl.col(start).is_finite() & pl.col(stop).is_finite()
        return pl.when(ordinary).then(pl.col(stop) - pl.col(start)).otherwise(None)

    return frame.with_columns(wait=span("submit", "schedule"), makespan=span("schedule", "end")).select(
        [pl.col(name).cast(kind) for name, kind in schema.items()]
    )


def _last_valid(frame: pl.DataFrame, names: list[str], starts: np.ndarray, ends: np.ndarray) -> dict[str, pl.Series]:
    """Per segment (rows ``starts[i]`` to ``ends[i]``), the last non-null value of each column."""
    rows = np.arange(frame.height)
    result = {}
    for name in names:
        column = frame[name]
        if column.null_count() == 0:
            result[name] = column.gather(ends)
            continue
        position = np.where(column.is_not_null().to_numpy(), rows, -1)
        last = np.maximum.reduceat(position, starts)
        values = column.gather(np.maximum(last, 0))
        result[name] = pl.select(pl.when(pl.Series(last >= starts)).then(values).otherwise(None)).to_series().alias(name)
    return result


class TaskLifecycles:
    """Feed chunks of task_events rows in file order; collect ended attempts and closed tasks."""

    def __init__(self, account: RowAccount, grace: float = DEFAULT_GRACE) -> None:
        self.account = account
        self.grace = grace
        self.open = pl.DataFrame(schema=_CARRIED)
        self.now = -np.inf

    def feed(self, path: Path, rows: pa.Table) -> LifecycleBatch:
        """Process rows (with a ``line`` column) of one file, in file order."""
        frame = pl.from_arrow(rows).with_row_index("seq").sort(KEY, maintain_order=True)
        task = _group_ids(frame)
        task_first = np.flatnonzero(np.append(True, task[1:] != task[:-1]))
        carried = self._take_carried(frame.select(KEY).gather(task_first))
        carried_state = carried["state"].fill_null(State.UNSEEN).to_numpy().astype(np.intp)
        keep = self._valid(path, frame, task, carried_state)
        self.account.used += int(keep.sum())
        kept_tasks = np.zeros(len(task_first), dtype=bool)
        kept_tasks[task[keep]] = True
        untouched = carried.filter(pl.Series(~kept_tasks) & pl.col("state").is_not_null())
        if not keep.all():
            frame, task = frame.filter(pl.Series(keep)), task[keep]
        if frame.height == 0:
            self.open = pl.concat([self.open, untouched])
            return LifecycleBatch(pl.DataFrame(schema=ATTEMPT_SCHEMA), self._expire(), np.empty(0), np.empty(0, dtype=bool))
        time = seconds(frame["time"].to_numpy())
        life, held, stale = self._lives(frame, time, task, carried)
        attempts, latest, submits, new_task = self._apply(frame, time, life, carried, held)
        last_life = np.append(task[1:] != task[:-1], True)[np.append(life[1:] != life[:-1], True)]
        self.open = pl.concat([self.open, untouched, latest.filter(pl.Series(last_life))])
        ended_lives = _with_durations(latest.filter(pl.Series(~last_life)), TASK_SCHEMA)
        closed = pl.concat([_with_durations(stale, TASK_SCHEMA), ended_lives, self._expire()])
        return LifecycleBatch(attempts, closed, submits, new_task)

    def _lives(self, frame: pl.DataFrame, time: np.ndarray, task: np.ndarray, carried: pl.DataFrame):
        """Split each task's rows where it was dead for longer than the grace period.

        Returns the life index of each row, the index in ``carried`` of the held row each life
        continues (``-1`` for a new life), and the held rows closed because their task was quiet
        too long.
        """
        event = frame["event_type"].to_numpy()
        first = np.ones(frame.height, dtype=bool)
        first[1:] = task[1:] != task[:-1]
        late = np.zeros(frame.height, dtype=bool)
        with np.errstate(invalid="ignore"):  # -inf - -inf: not late
            quiet = time[1:] - time[:-1] > self.grace
        late[1:] = (event[1:] == TaskEvent.SUBMIT) & _IS_END[event[:-1]] & quiet
        life = np.cumsum(first | late) - 1
        first_rows = np.flatnonzero(first)
        held_task = task[first_rows]
        held_state = carried["state"].fill_null(State.UNSEEN).to_numpy()[held_task]
        held_time = carried["last_time"].fill_null(np.inf).to_numpy()[held_task]
        stale = (held_state == State.DEAD) & (held_time < time[first_rows] - self.grace)
        source = np.full(life[-1] + 1 if len(life) else 0, -1)
        source[life[first_rows]] = np.where(stale, -1, held_task)
        return life, source, carried[held_task[stale]]

    def _take_carried(self, keys: pl.DataFrame) -> pl.DataFrame:
        """The held rows of these tasks, aligned with ``keys`` (nulls for tasks not held), taken out."""
        found = keys.join(self.open.with_row_index("held"), on=KEY, how="left", maintain_order="left")
        remaining = np.ones(self.open.height, dtype=bool)
        remaining[found["held"].drop_nulls().to_numpy()] = False
        self.open = self.open.filter(pl.Series(remaining))
        return found.drop("held")

    def _valid(self, path: Path, frame: pl.DataFrame, group: np.ndarray, carried_state: np.ndarray) -> np.ndarray:
        """Mask of rows with a possible lifecycle; impossible ones are rejected one per task per pass."""
        event = frame["event_type"].to_numpy().astype(np.intp)
        lines = frame["line"].to_numpy()
        keep = np.ones(frame.height, dtype=bool)
        while True:
            rows = np.flatnonzero(keep)
            first = np.ones(len(rows), dtype=bool)
            first[1:] = group[rows][1:] != group[rows][:-1]
            before = np.empty(len(rows), dtype=np.intp)
            before[1:] = _STATE_AFTER[event[rows][:-1]]
            before[first] = carried_state[group[rows][first]]
            bad = ~_ALLOWED[before, event[rows]]
            if not bad.any():
                return keep
            bad_rows = rows[bad]
            _, first_bad = np.unique(group[bad_rows], return_index=True)
            drop = bad_rows[first_bad]
            states, events = before[bad][first_bad], event[drop]
            order = np.argsort(lines[drop], kind="stable")
            for state, code in dict.fromkeys(zip(states[order].tolist(), events[order].tolist())):
                which = (states == state) & (events == code)
                self.account.reject(path, np.sort(lines[drop][which]), _lifecycle_reason(state, code))
            keep[drop] = False

    def _apply(self, frame: pl.DataFrame, time: np.ndarray, group: np.ndarray, carried: pl.DataFrame, held: np.ndarray):
        """Cut valid rows (sorted by task) into attempt segments; a SUBMIT or a new life starts one.

        ``group`` numbers the lives of tasks; ``held[life]`` is the row of ``carried`` a life
        continues, or -1.

        Returns the ended attempts, the latest row of every life (in life order), and the
        submission times (in time order) with whether each starts a new task.
        """
        event = frame["event_type"].to_numpy().astype(np.intp)
        group_start = np.ones(frame.height, dtype=bool)
        group_start[1:] = group[1:] != group[:-1]
        is_submit = event == TaskEvent.SUBMIT
        starts = np.flatnonzero(group_start | is_submit)
        ends = np.append(starts[1:], frame.height) - 1
        segment = np.cumsum(group_start | is_submit) - 1
        self.now = max(self.now, float(np.max(time, initial=-np.inf, where=np.isfinite(time))))

        segment_group = group[starts]
        segment_submit = is_submit[starts].astype(np.int32)
        first_segment = np.flatnonzero(np.append(True, segment_group[1:] != segment_group[:-1]))
        segments_per_task = np.diff(np.append(first_segment, len(starts)))
        submits_so_far = np.cumsum(segment_submit)
        submits_so_far -= np.repeat(submits_so_far[first_segment] - segment_submit[first_segment], segments_per_task)
        task_first = np.flatnonzero(group_start)
        rows_per_task = np.diff(np.append(task_first, frame.height))
        scheduled = np.flatnonzero(event == TaskEvent.SCHEDULE)
        schedule = np.full(len(starts), np.nan)
        schedule[segment[scheduled]] = time[scheduled]
        ended = _IS_END[event[ends]]
        missing = frame["missing_info"].fill_null(-1).to_numpy().astype(np.int8)
        segments = pl.DataFrame(
            {
                "job_id": frame["job_id"].gather(starts),
                "task_index": frame["task_index"].gather(starts),
                "continues": segment_submit == 0,
                "submits": submits_so_far,
                "last": np.append(segment_group[1:] != segment_group[:-1], True),
                "submit": np.where(segment_submit == 1, time[starts], np.nan),
                "schedule": schedule,
                "end": np.where(ended, time[ends], np.nan),
                "end_event": np.where(ended, event[ends], -1).astype(np.int8),
                "events": (ends - starts + 1).astype(np.int32),
                "updates": np.add.reduceat(_IS_UPDATE[event], starts).astype(np.int32),
                "missing_info": np.maximum.reduceat(missing, starts),
                "last_time": time[ends],
                "state": _STATE_AFTER[event[ends]],
                "task_rows": np.repeat(rows_per_task, segments_per_task).astype(np.int32),
                "task_submits": np.repeat(np.add.reduceat(is_submit, task_first), segments_per_task).astype(np.int32),
                "task_first_submit": np.repeat(np.where(is_submit[task_first], time[task_first], np.nan), segments_per_task),
                **_last_valid(frame, ATTRIBUTES, starts, ends),
            },
            nan_to_null=True,
        ).with_columns(pl.col("end_event", "missing_info").replace(-1, None))
        padded = pl.concat([carried, carried.clear(1)])  # the last row (all null) for new lives
        continued = padded[np.where(held >= 0, held, carried.height)[segment_group]]
        merged = _merge_carried(pl.concat([segments, continued.drop(KEY).select(pl.all().name.suffix("_c"))], how="horizontal"))
        attempts = _with_durations(merged.filter(pl.col("end_event").is_not_null()), ATTEMPT_SCHEMA)
        latest = merged.filter(pl.col("last")).select(list(_CARRIED))
        new_task = group_start & (held < 0)[group]
        order = np.argsort(frame["seq"].to_numpy()[is_submit], kind="stable")
        return attempts, latest, time[is_submit][order], new_task[is_submit][order]

    def _expire(self) -> pl.DataFrame:
        """Report and forget tasks dead for longer than the grace period."""
        old = (pl.col("state") == State.DEAD) & (pl.col("last_time") < self.now - self.grace)
        closed = self.open.filter(old)
        self.open = self.open.filter(~old)
        return _with_durations(closed, TASK_SCHEMA)

    def finish(self) -> LifecycleBatch:
        """End of input: open attempts (end null) and every task still held."""
        live = self.open.filter(pl.col("state") != State.DEAD)
        attempts = _with_durations(live, ATTEMPT_SCHEMA)
        tasks = _with_durations(self.open, TASK_SCHEMA)
        self.open = self.open.clear()
        return LifecycleBatch(attempts, tasks, np.empty(0), np.empty(0, dtype=bool))


def _merge_carried(merged: pl.DataFrame) -> pl.DataFrame:
    """Complete segments that continue an attempt begun in an earlier chunk (held columns ``*_c``)
    and number the attempts of each task."""
    cont = pl.col("continues")

    def from_carried(name: str) -> pl.Expr:
        return pl.when(cont).then(pl.coalesce(name, f"{name}_c")).otherwise(pl.col(name)).alias(name)

    return merged.with_columns(
        *(from_carried(name) for name in ["submit", "schedule", *ATTRIBUTES]),
        pl.when(cont).then(pl.col("events") + pl.col("events_c")).otherwise("events").alias("events"),
        pl.when(cont).then(pl.col("updates") + pl.col("updates_c")).otherwise("updates").alias("updates"),
        pl.when(cont).then(pl.max_horizontal("missing_info", "missing_info_c")).otherwise("missing_info").alias("missing_info"),
        (pl.col("attempts_c").fill_null(0) + pl.col("submits") - 1).cast(pl.Int32).alias("attempt"),
        (pl.col("task_events_c").fill_null(0) + pl.col("task_rows")).alias("task_events"),
        (pl.col("attempts_c").fill_null(0) + pl.col("task_submits")).alias("attempts"),
        pl.coalesce("first_submit_c", "task_first_submit").alias("first_submit"),
    )


def _group_ids(frame: pl.DataFrame) -> np.ndarray:
    """Consecutive id per task in a frame sorted by task."""
    job = frame["job_id"].to_numpy()
    index = frame["task_index"].to_numpy()
    change = np.ones(frame.height, dtype=bool)
    change[1:] = (job[1:] != job[:-1]) | (index[1:] != index[:-1])
    return np.cumsum(change) - 1


def _lifecycle_reason(state: int, event: int) -> str:
    name = TaskEvent(event).name
    if state == State.UNSEEN:
        return f"impossible lifecycle: {name} of a task not submitted in the input"
    return f"impossible lifecycle: {name} of a {State(state).name.lower()} task"


def rebuild(
    sources: Iterable[str | Path],
    account: RowAccount,
    *,
    grace: float = DEFAULT_GRACE,
    synthesized: bool = True,
    verify: bool = False,
    workers: int = 1,
    until: Callable[[TaskLifecycles], bool] | None = None,
    progress: bool = False,
) -> Iterator[LifecycleBatch]:
    """Lifecycles of the task_events in ``sources``, chunk by chunk, then what is left held.

    ``until`` is asked after each chunk whether reading can stop early (e.g. a conversion window
    is complete); the rows read so far are all accounted for either way.
    """
    lifecycles = TaskLifecycles(account, grace)
    files = source_files(sources, "task_events")
    batches = read_batches(
        files, "task_events", account=account, synthesized=synthesized, line_numbers=True,
        verify=verify, workers=workers, file_ends=True,
    )
    chunks = _Chunks(batches)
    with tqdm(total=len(files), unit=" files", disable=not progress, desc="task_events") as bar:
        for path, chunk in chunks:
            bar.update(chunks.files - bar.n)
            yield lifecycles.feed(path, chunk)
            if until is not None and until(lifecycles):
                batches.close()
                break
    yield lifecycles.finish()


class _Chunks:
    """Batches of one file gathered into tables of about :data:`CHUNK_ROWS` rows.

    A table is handed out as soon as it is full or its file ends, before anything more is read,
    so a reader stopped early leaves no row read but unprocessed.
    """

    def __init__(self, batches: Iterator[tuple[Path, pa.RecordBatch | None]]) -> None:
        self.batches = batches
        self.pending: list[pa.RecordBatch] = []
        self.files = 0

    def __iter__(self) -> Iterator[tuple[Path, pa.Table]]:
        rows = 0
        for path, batch in self.batches:
            if batch is None:
                self.files += 1
            else:
                self.pending.append(batch)
                rows += batch.num_rows
            if self.pending and (batch is None or rows >= CHUNK_ROWS):
                table, self.pending, rows = pa.Table.from_batches(self.pending), [], 0
                yield path, table
