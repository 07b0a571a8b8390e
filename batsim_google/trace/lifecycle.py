"""Task lifecycles rebuilt from ``task_events``: attempts and tasks as columnar records.

The state after an event depends on the event only (:mod:`.transitions`), so a whole chunk of rows
is checked at once: sorted by task (:mod:`.task_rows`), each row's previous state is its
predecessor's event (or the state carried from earlier chunks), and a table says which (state,
event) pairs are possible. An impossible row is skipped (or, strict, reported) and the check runs
again on what is left. The rebuild itself is index arithmetic on numpy arrays
(:mod:`.records`): cumulative sums and segment reductions cut a chunk's rows into attempts, and
tasks held from earlier chunks (:mod:`.held`) are found by binary search on the task key.

Memory is bounded by the tasks in flight: one record per pending or running task, plus tasks that
ended less than ``grace`` seconds ago (they may be resubmitted: in the sample 99.9 % of
resubmissions come within 15 minutes, the latest after 2.6 hours). A task silent for longer is
reported closed; a later resubmission then starts a new task record. Reading files into chunks
for this core is :mod:`.rebuild`'s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from batsim_google.trace.attempts import ATTEMPT_SCHEMA, ATTRIBUTES, TASK_SCHEMA, LifecycleBatch
from batsim_google.trace.held import HeldTasks
from batsim_google.trace.records import Records, UserCodes, concat, numpy_type
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent, seconds
from batsim_google.trace.task_rows import TaskRows
from batsim_google.trace.transitions import ALLOWED, IS_END, IS_UPDATE, STATE_AFTER, State, impossible_reason
from batsim_google.trace.vocabulary import DEFAULT_GRACE

#: Columns of a held record: a task record without durations, plus its state and last event's time.
_CARRIED = {
    **{name: kind for name, kind in TASK_SCHEMA.items() if name not in ("wait", "makespan")},
    "state": pl.Int8,
    "last_time": pl.Float64,
}
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


def _starts(values: np.ndarray) -> np.ndarray:
    """Mask of the first element of each run of equal values."""
    change = np.ones(len(values), dtype=bool)
    change[1:] = values[1:] != values[:-1]
    return change


def _sums(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sum of ``values[starts[i]:ends[i] + 1]`` for each i."""
    total = np.cumsum(values)
    return total[ends] - total[starts] + values[starts]


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
        chunk = TaskRows(rows, self.users, self.held)
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
            return LifecycleBatch(pl.DataFrame(schema=ATTEMPT_SCHEMA), closed, now=self.now)
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
            attempts.frame(ATTEMPT_SCHEMA, self.users),
            closed.frame(TASK_SCHEMA, self.users),
            time[submitted][order],
            new_task[submitted][order],
            chunk.synthesized()[submitted][order],
            now=self.now,
        )

    def _hold(
        self, held: np.ndarray, untouched: Records, segments: Records | None = None, rows: np.ndarray | None = None
    ) -> None:
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

    def _lives(self, chunk: TaskRows, time: np.ndarray, task: np.ndarray, held: np.ndarray):
        """Split each task's rows where it was dead for longer than the grace period.

        Returns the life index of each row, the held row each life continues (``-1`` for a new
        life), and the held rows closed because their task was quiet too long.
        """
        first = _starts(task)
        late = np.zeros(len(task), dtype=bool)
        with np.errstate(invalid="ignore"):  # -inf - -inf: not late
            quiet = time[1:] - time[:-1] > self.grace
        late[1:] = (chunk.event[1:] == TaskEvent.SUBMIT) & IS_END[chunk.event[:-1]] & quiet
        life = np.cumsum(first | late) - 1
        first_rows = np.flatnonzero(first)
        rows = held[task[first_rows]]
        held_time = self._held_values("last_time", rows, np.inf)
        stale = (self._held_values("state", rows, State.UNSEEN) == State.DEAD) & (
            held_time < time[first_rows] - self.grace
        )
        continued = np.full(life[-1] + 1, -1)
        continued[life[first_rows]] = np.where(stale, -1, rows)
        return life, continued, rows[stale]

    def _reorder_ties(self, path: Path, chunk: TaskRows, group: np.ndarray, carried_state: np.ndarray) -> None:
        """Swap two rows of a task that share a time when their file order is impossible and the
        swapped one possible (e.g. SCHEDULE written before SUBMIT): the trace is sorted by time
        only, and "may contain both SUBMIT and SCHEDULE events for the exact same microsecond".
        Pairs split between two chunks are not seen: their rows are judged in file order."""
        event = chunk.event
        before = _states_before(event, group, carried_state)
        bad = ~ALLOWED[before, event]
        pair = (group[1:] == group[:-1]) & (chunk.time[1:] == chunk.time[:-1]) & (bad[1:] | bad[:-1])
        pair &= ALLOWED[before[:-1], event[1:]] & ALLOWED[STATE_AFTER[event[1:]], event[:-1]]
        pair[1:] &= ~pair[:-1]  # no row in two pairs (of a chain of three, only the first is kept)
        left = np.flatnonzero(pair)
        if left.size == 0:
            return
        first = chunk.lines(np.array([left[0], left[0] + 1])).tolist()
        self.account.note(
            path,
            f"{left.size} pair(s) of rows of a task with the same time taken in the order "
            f"their lifecycle allows (first: lines {min(first)} and {max(first)})",
        )
        order = np.arange(len(event))
        order[left], order[left + 1] = left + 1, left
        chunk.keep(order)

    def _valid(self, path: Path, chunk: TaskRows, group: np.ndarray, carried_state: np.ndarray) -> np.ndarray:
        """Mask of rows with a possible lifecycle; impossible ones are rejected one per task per pass."""
        event = chunk.event
        keep = np.ones(len(event), dtype=bool)
        rows = slice(None)  # every row, without a copy
        while True:
            groups, events = group[rows], event[rows]
            before = _states_before(events, groups, carried_state)
            bad = ~ALLOWED[before, events]
            if not bad.any():
                return keep
            bad_rows = np.flatnonzero(keep)[bad]
            _, first_bad = np.unique(group[bad_rows], return_index=True)
            drop = bad_rows[first_bad]
            states, codes, lines = before[bad][first_bad], event[drop], chunk.lines(drop)
            order = np.argsort(lines, kind="stable")
            for state, code in dict.fromkeys(zip(states[order].tolist(), codes[order].tolist())):
                which = (states == state) & (codes == code)
                self.account.reject(path, np.sort(lines[which]), impossible_reason(state, code))
            keep[drop] = False
            rows = np.flatnonzero(keep)

    def _segments(self, chunk: TaskRows, time: np.ndarray, life: np.ndarray, continued: np.ndarray) -> Records:
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
        ended = IS_END[event[ends]]
        values["end"], valid["end"] = np.where(ended, time[ends], np.nan), ended
        values["end_event"], valid["end_event"] = event[ends].astype(np.int8), ended
        for name in ATTRIBUTES:
            values[name], valid[name] = fill(name, *chunk.last_valid(name, starts, ends))
        values["events"] = add("events", (ends - starts + 1).astype(np.int32), carried)
        values["updates"] = add("updates", _sums(IS_UPDATE[event], starts, ends).astype(np.int32), carried)
        values["missing_info"], valid["missing_info"] = self._missing_info(chunk, starts, held, carried)
        values["task_events"] = add("task_events", per_segment(life_last - life_first + 1).astype(np.int32), counted)
        synthesized = per_segment(_sums(chunk.synthesized(), life_first, life_last)).astype(np.int32)
        values["synthesized_events"] = add("synthesized_events", synthesized, counted)
        values["attempts"] = attempts_before + per_segment(_sums(submitted, life_first, life_last)).astype(np.int32)
        life_submit = submitted[life_first]
        first_submit, first_submit_valid = (
            per_segment(np.where(life_submit, time[life_first], np.nan)),
            per_segment(life_submit),
        )
        prior = counted[self.held.valid("first_submit")[held[counted]]]  # the held record's comes first
        first_submit[prior], first_submit_valid[prior] = self.held.column("first_submit")[held[prior]], True
        values["first_submit"], valid["first_submit"] = first_submit, first_submit_valid
        values["state"] = STATE_AFTER[event[ends]]
        values["last_time"] = time[ends]
        return Records(values, valid)

    def _missing_info(self, chunk: TaskRows, starts: np.ndarray, held: np.ndarray, carried: np.ndarray):
        """Per segment, the largest missing-info code of its rows and of the attempt's held record."""
        values = (
            np.full(len(starts), -1, dtype=np.int8)
            if chunk.missing is None
            else np.maximum.reduceat(chunk.missing, starts)
        )
        valid = values != -1
        prior = carried[self.held.valid("missing_info")[held[carried]]]
        values[prior] = np.where(
            valid[prior],
            np.maximum(values[prior], self.held.column("missing_info")[held[prior]]),
            self.held.column("missing_info")[held[prior]],
        )
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
            _with_durations(live).frame(ATTEMPT_SCHEMA, self.users),
            _with_durations(held).frame(TASK_SCHEMA, self.users),
            now=self.now,
        )


def _states_before(events: np.ndarray, groups: np.ndarray, carried_state: np.ndarray) -> np.ndarray:
    """Each row's state before its event: its predecessor's, or its task's carried state."""
    first = _starts(groups)
    before = np.empty(len(events), dtype=np.intp)
    before[1:] = STATE_AFTER[events[:-1]]
    before[first] = carried_state[groups[first]]
    return before
