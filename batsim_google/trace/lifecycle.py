"""Task lifecycles rebuilt from ``task_events``: attempts and tasks as columnar records.

A task (job ID, task index) goes through attempts SUBMIT -> [SCHEDULE] -> end (EVICT, FAIL,
FINISH, KILL, LOST), possibly with UPDATE_PENDING / UPDATE_RUNNING in between, and may be submitted
again after any end. The state after an event depends on the event only (format document,
"Job and task life cycles"), so a whole chunk of rows is checked at once: sorted by task, each row's
previous state is its predecessor's event (or the state carried from earlier chunks), and a table
says which (state, event) pairs are possible. An impossible row is skipped (or, strict, reported)
and the check runs again on what is left. The rebuild itself is index arithmetic on numpy arrays
(:mod:`.records`): cumulative sums and segment reductions cut a chunk's rows into attempts, and
tasks held from earlier chunks (:mod:`.held`) are found by binary search on the task key.

Memory is bounded by the tasks in flight: one record per pending or running task, plus tasks that
ended less than ``grace`` seconds ago (they may be resubmitted: in the sample 99.9 % of
resubmissions come within 15 minutes, the latest after 2.6 hours). A task silent for longer is
reported closed; a later resubmission then starts a new task record.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np
import polars as pl
import pyarrow as pa
from tqdm import tqdm

from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.held import HeldTasks
from batsim_google.trace.readahead import ReadAhead
from batsim_google.trace.reader import read_batches, source_files
from batsim_google.trace.records import Records, UserCodes, concat, numpy_type
from batsim_google.trace.schema import TaskEvent, seconds
from batsim_google.trace.vocabulary import DEFAULT_GRACE
from batsim_google.trace.task_keys import key_order, packable, task_ids, task_keys

#: Rows processed together: large enough to amortize the per-chunk work, small enough to stay flat.
CHUNK_ROWS = 1 << 18
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
#: A task record is its last attempt plus the whole task's counts (``synthesized_events``: rows
#: with missing info, over all its attempts).
TASK_SCHEMA = {
    **ATTEMPT_SCHEMA, "task_events": pl.Int32, "synthesized_events": pl.Int32, "attempts": pl.Int32,
    "first_submit": pl.Float64,
}
#: The model paper's population (Section 2): tasks with exactly three events, SUBMIT, SCHEDULE and
#: an end, that end by FINISH (finite tasks) or KILL (services); 95 % of the trace's tasks.
MODELED_ENDS = {"finish": TaskEvent.FINISH, "kill": TaskEvent.KILL}


def paper_population(tasks: pl.DataFrame) -> pl.DataFrame:
    """The task records of :data:`MODELED_ENDS`' three-event tasks that were scheduled (Tables 3-7,
    the fitted data): SUBMIT, SCHEDULE, end; not e.g. SUBMIT, UPDATE_PENDING, KILL."""
    ends = [int(code) for code in MODELED_ENDS.values()]
    return tasks.filter((pl.col("task_events") == 3) & pl.col("end_event").is_in(ends) & pl.col("schedule").is_not_null())


_CARRIED = {
    **{name: kind for name, kind in TASK_SCHEMA.items() if name not in ("wait", "makespan")},
    "state": pl.Int8, "last_time": pl.Float64,
}


@dataclass
class LifecycleBatch:
    """What one chunk of rows completed: ended attempts, closed tasks, and submission times."""

    attempts: pl.DataFrame
    tasks: pl.DataFrame
    #: Times (s) of the SUBMIT rows used, in time order, whether each starts a new task, and
    #: whether the trace synthesized it (missing info set).
    submits: np.ndarray
    new_task: np.ndarray
    synthesized_submit: np.ndarray


#: Held record columns that may be null.
_NULLABLE = ["submit", "schedule", "end", "end_event", *ATTRIBUTES, "missing_info", "first_submit"]
_HELD_TYPES = {name: numpy_type(kind) for name, kind in _CARRIED.items()}


def _with_durations(records: Records) -> Records:
    """Add ``wait`` (submit -> schedule) and ``makespan`` (schedule -> end): null unless both
    times are ordinary."""
    values, valid = dict(records.values), dict(records.valid)
    for name, start, stop in (("wait", "submit", "schedule"), ("makespan", "schedule", "end")):
        first, last = values[start], values[stop]
        valid[name] = records.is_valid(start) & records.is_valid(stop) & np.isfinite(first) & np.isfinite(last)
        values[name] = np.where(valid[name], last - np.where(valid[name], first, 0.0), np.nan)
    return Records(values, valid)


def _numpy(column: pa.ChunkedArray, fill: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """Values of a numeric column (nulls replaced by ``fill``) and its validity (None: no null)."""
    if column.null_count == 0:
        return column.to_numpy(), None
    series = pl.from_arrow(column)
    return series.fill_null(fill).to_numpy(), series.is_not_null().to_numpy()


def _starts(values: np.ndarray) -> np.ndarray:
    """Mask of the first element of each run of equal values."""
    change = np.ones(len(values), dtype=bool)
    change[1:] = values[1:] != values[:-1]
    return change


def _sums(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sum of ``values[starts[i]:ends[i] + 1]`` for each i."""
    total = np.cumsum(values)
    return total[ends] - total[starts] + values[starts]


class _Rows:
    """One chunk's rows sorted by task (stable: a task's rows keep their file order), as numpy
    columns. Attributes stay in file order, reached through ``seq``: only the rows that records
    take them from are gathered."""

    def __init__(self, rows: pa.Table, users: UserCodes, held: HeldTasks) -> None:
        job, task = rows.column("job_id").to_numpy(), rows.column("task_index").to_numpy()
        if held.packed and not packable(job, task):
            held.use_pairs()
        keys = task_keys(job, task, held.packed)
        #: Row of the chunk (file order) of each sorted row.
        self.seq = key_order(keys)
        self.key = keys[self.seq]
        self.time = rows.column("time").to_numpy()[self.seq]
        self.event = rows.column("event_type").to_numpy()[self.seq].astype(np.intp)
        self._line = rows.column("line").to_numpy()
        missing = rows.column("missing_info")
        #: None when no row has missing info (the common case)
        self.missing = None if missing.null_count == len(missing) else _numpy(missing, -1)[0][self.seq]
        #: name: (values in file order, validity in sorted order or None without nulls)
        self.attributes: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        self._at_ends: tuple[np.ndarray, np.ndarray] | None = None  # segment ends, their file rows
        for name in ATTRIBUTES:
            column = rows.column(name)
            if name == "user":
                values, valid = users.encode(column), column.is_valid().to_numpy() if column.null_count else None
            else:
                values, valid = _numpy(column)
            self.attributes[name] = (values, None if valid is None else valid[self.seq])

    def __len__(self) -> int:
        return len(self.seq)

    def keep(self, mask: np.ndarray) -> None:
        """Keep the sorted rows of ``mask``, or put them in an order (an index array)."""
        for name in ("seq", "key", "time", "event", "missing"):
            if getattr(self, name) is not None:
                setattr(self, name, getattr(self, name)[mask])
        self.attributes = {
            name: (values, None if valid is None else valid[mask]) for name, (values, valid) in self.attributes.items()
        }

    def ids(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Job IDs and task indices of sorted rows."""
        return task_ids(self.key[rows])

    def lines(self, rows: np.ndarray) -> np.ndarray:
        """Line numbers (in their file) of sorted rows."""
        return self._line[self.seq[rows]]

    def synthesized(self) -> np.ndarray:
        """Mask of the sorted rows the trace synthesized (missing info set)."""
        return np.zeros(len(self), dtype=bool) if self.missing is None else self.missing >= 0

    def last_valid(self, name: str, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per segment (sorted rows ``starts[i]`` to ``ends[i]``), the last non-null value of an
        attribute, and whether there is one."""
        values, valid = self.attributes[name]
        if valid is None:
            if self._at_ends is None or self._at_ends[0] is not ends:
                self._at_ends = (ends, self.seq[ends])
            return values[self._at_ends[1]], np.ones(len(ends), dtype=bool)
        position = np.maximum.accumulate(np.where(valid, np.arange(len(valid)), -1))[ends]
        found = position >= starts
        return values[self.seq[np.where(found, position, 0)]], found


class TaskLifecycles:
    """Feed chunks of task_events rows in file order; collect ended attempts and closed tasks."""

    def __init__(self, account: RowAccount, grace: float = DEFAULT_GRACE) -> None:
        self.account = account
        self.grace = grace
        self.users = UserCodes()
        self.held = HeldTasks(_HELD_TYPES, _NULLABLE)
        self.now = -np.inf

    @property
    def open(self) -> pl.DataFrame:
        """The held tasks (pending, running, or dead within the grace period), in the order they
        were last touched."""
        return self.held.records(self.held.rows()).frame(_CARRIED, self.users)

    def feed(self, path: Path, rows: pa.Table) -> LifecycleBatch:
        """Process rows (with a ``line`` column) of one file, in file order."""
        chunk = _Rows(rows, self.users, self.held)
        task_start = _starts(chunk.key)
        task = np.cumsum(task_start) - 1
        held = self.held.find(chunk.key[task_start])
        carried_state = self._held_values("state", held, State.UNSEEN)
        self._reorder_ties(path, chunk, task, carried_state)
        keep = self._valid(path, chunk, task, carried_state)
        self.account.used += int(keep.sum())
        kept_tasks = np.zeros(len(held), dtype=bool)
        kept_tasks[task[keep]] = True
        untouched = self.held.records(held[~kept_tasks & (held >= 0)])  # held again, as they were
        if not keep.all():
            chunk.keep(keep)
            task = task[keep]
        if len(chunk) == 0:
            self._hold(held, untouched)
            closed = _with_durations(self._expired()).frame(TASK_SCHEMA, self.users)
            return LifecycleBatch(pl.DataFrame(schema=ATTEMPT_SCHEMA), closed, *_no_submits())
        time = seconds(chunk.time)
        self.now = max(self.now, float(np.max(time, initial=-np.inf, where=np.isfinite(time))))
        life, continued, stale_rows = self._lives(chunk, time, task, held)
        segments = self._segments(chunk, time, life, continued)
        stale = self.held.records(stale_rows)
        latest = np.flatnonzero(np.append(segments.values["life"][1:] != segments.values["life"][:-1], True))
        last_life = np.append(task[1:] != task[:-1], True)[np.append(life[1:] != life[:-1], True)]
        self._hold(held, untouched, segments, latest[last_life])
        attempts = _with_durations(segments.take(np.flatnonzero(segments.valid["end_event"])))
        closed = _with_durations(concat([stale, segments.take(latest[~last_life]), self._expired()]))
        submitted = chunk.event == TaskEvent.SUBMIT
        new_task = _starts(life) & (continued < 0)[life]  # a life that continues no held record
        order = np.argsort(chunk.seq[submitted], kind="stable")
        return LifecycleBatch(
            attempts.frame(ATTEMPT_SCHEMA, self.users), closed.frame(TASK_SCHEMA, self.users),
            time[submitted][order], new_task[submitted][order], chunk.synthesized()[submitted][order],
        )

    def _hold(self, held: np.ndarray, untouched: Records, segments: Records | None = None, rows: np.ndarray | None = None) -> None:
        """Replace the held records of a chunk's tasks: tasks all of whose rows were rejected
        are held again as they were, then the latest records of the others (``segments[rows]``)."""
        self.held.release(held[held >= 0])
        if len(untouched):
            self.held.add(untouched)
        if segments is not None:
            self.held.add(segments, rows)

    def _held_values(self, name: str, rows: np.ndarray, default) -> np.ndarray:
        """A column of held records at ``rows``, ``default`` where a row is -1 (not held)."""
        values = np.full(len(rows), default, dtype=_HELD_TYPES[name])
        found = rows >= 0
        values[found] = self.held.column(name)[rows[found]]
        return values

    def _lives(self, chunk: _Rows, time: np.ndarray, task: np.ndarray, held: np.ndarray):
        """Split each task's rows where it was dead for longer than the grace period.

        Returns the life index of each row, the held row each life continues (``-1`` for a new
        life), and the held rows closed because their task was quiet too long.
        """
        first = _starts(task)
        late = np.zeros(len(task), dtype=bool)
        with np.errstate(invalid="ignore"):  # -inf - -inf: not late
            quiet = time[1:] - time[:-1] > self.grace
        late[1:] = (chunk.event[1:] == TaskEvent.SUBMIT) & _IS_END[chunk.event[:-1]] & quiet
        life = np.cumsum(first | late) - 1
        first_rows = np.flatnonzero(first)
        rows = held[task[first_rows]]
        held_time = self._held_values("last_time", rows, np.inf)
        stale = (self._held_values("state", rows, State.UNSEEN) == State.DEAD) & (held_time < time[first_rows] - self.grace)
        continued = np.full(life[-1] + 1, -1)
        continued[life[first_rows]] = np.where(stale, -1, rows)
        return life, continued, rows[stale]

    def _reorder_ties(self, path: Path, chunk: _Rows, group: np.ndarray, carried_state: np.ndarray) -> None:
        """Swap two rows of a task that share a time when their file order is impossible and the
        swapped one possible (e.g. SCHEDULE written before SUBMIT): the trace is sorted by time
        only, and "may contain both SUBMIT and SCHEDULE events for the exact same microsecond".
        Pairs split between two chunks are not seen: their rows are judged in file order."""
        event = chunk.event
        before = _states_before(event, group, carried_state)
        bad = ~_ALLOWED[before, event]
        pair = (group[1:] == group[:-1]) & (chunk.time[1:] == chunk.time[:-1]) & (bad[1:] | bad[:-1])
        pair &= _ALLOWED[before[:-1], event[1:]] & _ALLOWED[_STATE_AFTER[event[1:]], event[:-1]]
        pair[1:] &= ~pair[:-1]  # no row in two pairs (of a chain of three, only the first is kept)
        left = np.flatnonzero(pair)
        if left.size == 0:
            return
        first = chunk.lines(np.array([left[0], left[0] + 1])).tolist()
        self.account.note(path, f"{left.size} pair(s) of rows of a task with the same time taken in the order "
                                    f"their lifecycle allows (first: lines {min(first)} and {max(first)})")
        order = np.arange(len(event))
        order[left], order[left + 1] = left + 1, left
        chunk.keep(order)

    def _valid(self, path: Path, chunk: _Rows, group: np.ndarray, carried_state: np.ndarray) -> np.ndarray:
        """Mask of rows with a possible lifecycle; impossible ones are rejected one per task per pass."""
        event = chunk.event
        keep = np.ones(len(event), dtype=bool)
        rows = slice(None)  # every row, without a copy
        while True:
            groups, events = group[rows], event[rows]
            before = _states_before(events, groups, carried_state)
            bad = ~_ALLOWED[before, events]
            if not bad.any():
                return keep
            bad_rows = np.flatnonzero(keep)[bad]
            _, first_bad = np.unique(group[bad_rows], return_index=True)
            drop = bad_rows[first_bad]
            states, codes, lines = before[bad][first_bad], event[drop], chunk.lines(drop)
            order = np.argsort(lines, kind="stable")
            for state, code in dict.fromkeys(zip(states[order].tolist(), codes[order].tolist())):
                which = (states == state) & (codes == code)
                self.account.reject(path, np.sort(lines[which]), _lifecycle_reason(state, code))
            keep[drop] = False
            rows = np.flatnonzero(keep)

    def _segments(self, chunk: _Rows, time: np.ndarray, life: np.ndarray, continued: np.ndarray) -> Records:
        """Cut valid rows (sorted by task) into attempt segments, a SUBMIT or a new life starting
        one, and complete each with what its life's held record brings: one record per segment,
        with the held columns and ``life``, in segment order.

        A segment that does not start with SUBMIT continues the attempt of its life's held record
        (the checks guarantee there is one); the counts of a life continue its held record's.
        """
        event = chunk.event
        life_start = _starts(life)
        submitted = event == TaskEvent.SUBMIT
        starts = np.flatnonzero(life_start | submitted)
        ends = np.append(starts[1:], len(event)) - 1
        segment_life = life[starts]
        opens = submitted[starts]
        first_segment = np.flatnonzero(_starts(segment_life))
        segments_per_life = np.diff(np.append(first_segment, len(starts)))
        life_first = np.flatnonzero(life_start)
        life_last = np.append(life_first[1:], len(event)) - 1

        def per_segment(per_life: np.ndarray) -> np.ndarray:
            return np.repeat(per_life, segments_per_life)

        held = continued[segment_life]
        counted = np.flatnonzero(held >= 0)  # segments of lives that continue a held record
        carried = np.flatnonzero(~opens & (held >= 0))  # segments that continue a held attempt

        def fill(name: str, values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Null values of carried segments taken from the held record."""
            take = carried[~valid[carried]]
            values[take] = self.held.column(name)[held[take]]
            valid[take] = self.held.valid(name)[held[take]]
            return values, valid

        def add(name: str, values: np.ndarray, segments: np.ndarray) -> np.ndarray:
            values[segments] += self.held.column(name)[held[segments]]
            return values

        values: dict[str, np.ndarray] = {"life": segment_life}
        valid: dict[str, np.ndarray] = {}
        values["job_id"], values["task_index"] = chunk.ids(starts)
        attempts_before = add("attempts", np.zeros(len(starts), dtype=np.int32), counted)
        submits = np.cumsum(opens, dtype=np.int32)
        values["attempt"] = attempts_before + submits - per_segment(submits[first_segment] - opens[first_segment]) - 1
        values["submit"], valid["submit"] = fill("submit", np.where(opens, time[starts], np.nan), opens.copy())
        scheduled = np.flatnonzero(event == TaskEvent.SCHEDULE)
        segment = np.cumsum(life_start | submitted) - 1
        schedule, schedule_valid = np.full(len(starts), np.nan), np.zeros(len(starts), dtype=bool)
        schedule[segment[scheduled]], schedule_valid[segment[scheduled]] = time[scheduled], True
        values["schedule"], valid["schedule"] = fill("schedule", schedule, schedule_valid)
        ended = _IS_END[event[ends]]
        values["end"], valid["end"] = np.where(ended, time[ends], np.nan), ended
        values["end_event"], valid["end_event"] = event[ends].astype(np.int8), ended
        for name in ATTRIBUTES:
            values[name], valid[name] = fill(name, *chunk.last_valid(name, starts, ends))
        values["events"] = add("events", (ends - starts + 1).astype(np.int32), carried)
        values["updates"] = add("updates", _sums(_IS_UPDATE[event], starts, ends).astype(np.int32), carried)
        values["missing_info"], valid["missing_info"] = self._missing_info(chunk, starts, held, carried)
        values["task_events"] = add("task_events", per_segment(life_last - life_first + 1).astype(np.int32), counted)
        synthesized = per_segment(_sums(chunk.synthesized(), life_first, life_last)).astype(np.int32)
        values["synthesized_events"] = add("synthesized_events", synthesized, counted)
        values["attempts"] = attempts_before + per_segment(_sums(submitted, life_first, life_last)).astype(np.int32)
        life_submit = submitted[life_first]
        first_submit, first_submit_valid = per_segment(np.where(life_submit, time[life_first], np.nan)), per_segment(life_submit)
        prior = counted[self.held.valid("first_submit")[held[counted]]]  # the held record's comes first
        first_submit[prior], first_submit_valid[prior] = self.held.column("first_submit")[held[prior]], True
        values["first_submit"], valid["first_submit"] = first_submit, first_submit_valid
        values["state"] = _STATE_AFTER[event[ends]]
        values["last_time"] = time[ends]
        return Records(values, valid)

    def _missing_info(self, chunk: _Rows, starts: np.ndarray, held: np.ndarray, carried: np.ndarray):
        """Per segment, the largest missing-info code of its rows and of the attempt's held record."""
        values = np.full(len(starts), -1, dtype=np.int8) if chunk.missing is None else np.maximum.reduceat(chunk.missing, starts)
        valid = values != -1
        prior = carried[self.held.valid("missing_info")[held[carried]]]
        values[prior] = np.where(valid[prior], np.maximum(values[prior], self.held.column("missing_info")[held[prior]]),
                                 self.held.column("missing_info")[held[prior]])
        valid[prior] = True
        return values, valid

    def _expired(self) -> Records:
        """Report and forget tasks dead for longer than the grace period."""
        old = self.held.rows(
            (self.held.column("state") == State.DEAD) & (self.held.column("last_time") < self.now - self.grace)
        )
        expired = self.held.records(old)
        self.held.release(old)
        return expired

    def finish(self) -> LifecycleBatch:
        """End of input: open attempts (end null) and every task still held."""
        held = self.held.records(self.held.rows())
        self.held.clear()
        live = held.take(np.flatnonzero(held.values["state"] != State.DEAD))
        return LifecycleBatch(
            _with_durations(live).frame(ATTEMPT_SCHEMA, self.users), _with_durations(held).frame(TASK_SCHEMA, self.users),
            *_no_submits(),
        )


def _no_submits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The submission columns of a batch without submissions."""
    return np.empty(0), np.empty(0, dtype=bool), np.empty(0, dtype=bool)


def _states_before(events: np.ndarray, groups: np.ndarray, carried_state: np.ndarray) -> np.ndarray:
    """Each row's state before its event: its predecessor's, or its task's carried state."""
    first = _starts(groups)
    before = np.empty(len(events), dtype=np.intp)
    before[1:] = _STATE_AFTER[events[:-1]]
    before[first] = carried_state[groups[first]]
    return before


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
    verify: bool = False,
    workers: int = 1,
    until: Callable[[TaskLifecycles], bool] | None = None,
    progress: bool = False,
) -> Iterator[LifecycleBatch]:
    """Lifecycles of the task_events in ``sources``, chunk by chunk, then what is left held.

    ``until`` is asked after each chunk whether reading can stop early (e.g. a conversion window
    is complete); the rows read so far are all accounted for either way. ``workers`` > 1 reads and
    checks chunks in a thread ahead of the rebuild (:mod:`.readahead`), ``workers`` - 1 part files
    at a time (see :func:`~.reader.read_batches`); the results are the same.
    """
    lifecycles = TaskLifecycles(account, grace)
    files = source_files(sources, "task_events")

    def chunks(reading: RowAccount) -> Iterator[tuple[int, Path, pa.Table]]:
        batches = read_batches(
            files, "task_events", account=reading, line_numbers=True,
            verify=verify, workers=max(workers - 1, 1), file_ends=True,
        )
        gathered = _Chunks(batches)
        try:
            for path, chunk in gathered:
                yield gathered.files, path, chunk
        finally:
            batches.close()

    source = ReadAhead(chunks, account) if workers > 1 else closing(chunks(account))
    with source as items, tqdm(total=len(files), unit=" files", disable=not progress, desc="task_events") as bar:
        for files_done, path, chunk in items:
            bar.update(files_done - bar.n)
            yield lifecycles.feed(path, chunk)
            if until is not None and until(lifecycles):
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
