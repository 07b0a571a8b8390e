"""Rebuilt tasks -> Batsim workload, in the generator's format (:mod:`batsim_google.generation.batsim_json`).

A Batsim job is either one task attempt (SUBMIT to its end) or one task: submitted at its first
submission, lasting the makespan of its last attempt (the run that ended it; earlier attempts were
interrupted by Google's scheduler, whose choices the simulated scheduler makes anew). A job ended
by FINISH is a ``task`` of that makespan; one ended by KILL is a ``service`` whose lifetime is its
observed duration (the model paper's reading of Kill-ended tasks, Section 4.2); other ends
(FAIL, EVICT, LOST, when selected) are ``task`` s of the time they ran.

With ``initial_state``, the records alive at the window start are written too, submitted at the
start (:mod:`.initial_state`): the cell does not start empty. A record of the window whose end is
not in the input is written *censored*, as a service lasting until the input's end
(:mod:`.censoring`), with the KILL-ended records: a selection of end events without ``kill``
leaves both out.

With ``faithful`` (attempts only), every end event is kept, evicted attempts are folded into the
next attempt of their task (:mod:`.eviction_chains`) and the records running at the start carry
their ``trace_machine``, on which the scheduler keeps them.

Every record reaching the converter is either written or excluded for the first of these reasons,
so that ``records = written + excluded``: submitted outside the window (and, with the initial
state, not alive at its start), with a synthesized event
(when those are dropped), still open at the end of the input (censored, when ``kill`` is not
selected), pending at the start and never scheduled in the input, end event not selected, never scheduled (and ended: killed or failed while pending),
makespan unknown (SWF: an unknown run time),
priority group not selected, scheduling class not selected, no CPU or memory request, (logs with
processor counts) processor count unknown or zero, more processors than ``nb_res``, run on a
machine sampled out (scaled replays, :mod:`.sampling`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl

from batsim_google.errors import ParameterError
from batsim_google.generation.batsim_json import TIME_DECIMALS, WorkloadWriter
from batsim_google.generation.walltime import NO_WALLTIMES, WalltimeMode, walltime_rng
from batsim_google.model.priority import unit_priority
from batsim_google.trace.censoring import (
    INPUT_END,
    NEVER_SCHEDULED,
    SCHEDULED,
    censored,
    censored_delay,
    scheduled_in_input,
)
from batsim_google.trace.eviction_chains import fold_evictions
from batsim_google.trace.initial_state import RUNNING, initial_delay, initial_flag
from batsim_google.trace.lifecycle import TaskLifecycles
from batsim_google.trace.rebuild import rebuild
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample
from batsim_google.trace.schema import TaskEvent
from batsim_google.trace.transitions import State
from batsim_google.trace.vocabulary import DEFAULT_GRACE, END_EVENT_NAMES, PRIORITY_GROUPS

END_EVENTS = {name: int(TaskEvent[name.upper()]) for name in END_EVENT_NAMES}
Granularity = Literal["attempt", "task"]


@dataclass(frozen=True)
class Selection:
    """Which records become jobs, and how."""

    start: float = 0.0
    end: float = math.inf
    per: Granularity = "attempt"
    priority_groups: tuple[str, ...] = tuple(PRIORITY_GROUPS)
    end_events: tuple[str, ...] = ("finish", "kill")
    scheduling_classes: tuple[int, ...] = (0, 1, 2, 3)
    #: KILL-ended records are services (Google); False makes every job a task (e.g. SWF logs).
    kill_is_service: bool = True
    #: Records without CPU and memory requests are excluded (True) or written with nulls.
    require_requests: bool = True
    #: Priority in ]0, 1] for records without a Google priority (logs that have none).
    unknown_priority: float = 0.5
    #: Records with an event the trace synthesized (missing info set) are kept (True) or excluded.
    synthesized: bool = True
    #: Records alive at the window start are written, submitted at the start (the cell's initial
    #: state), or excluded as submitted outside the window (False).
    initial_state: bool = False
    #: A scaled replay: the records of machines kept with probability machines / 12,583; None: all.
    sample: MachineSample | None = None
    #: A task-level faithful replay (:mod:`.eviction_chains`): attempts, every end event, evicted
    #: attempts folded into the next one; with ``pin_running``, the tasks running at the window
    #: start carry the trace's machine (``trace_machine``), on which the scheduler keeps them.
    faithful: bool = False
    pin_running: bool = True
    #: Times rounded to this many seconds (None: not rounded).
    grain: float | None = None
    #: The jobs' walltimes (:mod:`batsim_google.generation.walltime`), ``user-estimate`` drawn from
    #: ``walltime_seed``.
    walltime: WalltimeMode = NO_WALLTIMES
    walltime_seed: int = 0

    def __post_init__(self) -> None:
        if self.per not in ("attempt", "task"):
            raise ParameterError(f"a job is one 'attempt' or one 'task' (got {self.per!r})")
        if not self.start < self.end:
            raise ParameterError(f"--start ({self.start}) must be before --end ({self.end})")
        unknown = set(self.priority_groups) - set(PRIORITY_GROUPS)
        if unknown:
            raise ParameterError(f"unknown priority group(s) {sorted(unknown)}; use {list(PRIORITY_GROUPS)}")
        unknown = set(self.end_events) - set(END_EVENTS)
        if unknown:
            raise ParameterError(f"unknown end event(s) {sorted(unknown)}; use {list(END_EVENTS)}")
        if not set(self.scheduling_classes) <= {0, 1, 2, 3}:
            raise ParameterError(f"scheduling classes are 0-3 (got {list(self.scheduling_classes)})")
        if self.faithful and self.per != "attempt":
            raise ParameterError("a faithful replay has one job per attempt (--per attempt)")
        if self.faithful and set(self.end_events) != set(END_EVENTS):
            raise ParameterError("a faithful replay keeps every end event (no --end-event)")
        if not 0 < self.unknown_priority <= 1:
            raise ParameterError(f"the priority of jobs without one must be in ]0, 1] (got {self.unknown_priority})")

    @property
    def submit_column(self) -> str:
        return "first_submit" if self.per == "task" else "submit"

    def in_window(self, submit: pl.Expr) -> pl.Expr:
        return (submit >= self.start) & (submit < self.end)

    def initial(self) -> pl.Expr:
        """``running``/``pending`` for the records of the initial state, null for the others."""
        if not self.initial_state:
            return pl.lit(None, dtype=pl.String)
        return initial_flag(self.start, self.submit_column)


@dataclass
class JobAccount:
    """Records offered to the converter: written as jobs or excluded, by reason."""

    written: int = 0
    excluded: Counter = field(default_factory=Counter)
    #: Written records of the initial state: running, pending, and censored (of those two).
    initial: Counter = field(default_factory=Counter)
    #: Written records submitted in the window and censored: scheduled in the input, or never.
    censored: Counter = field(default_factory=Counter)

    @property
    def records(self) -> int:
        return self.written + sum(self.excluded.values())

    def summary(self, noun: str) -> str:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in self.excluded.most_common())
        line = f"{noun}s {self.records} = written {self.written} + excluded {sum(self.excluded.values())}"
        line += f" ({reasons})" if reasons else ""
        if self.initial:
            line += (
                f"; initial state (written, submitted at the window start): running {self.initial['running']}, "
                f"pending {self.initial['pending']}, of which censored at the input's end {self.initial['censored']}"
            )
        if self.censored:
            line += (
                f"; submitted in the window and censored at the input's end (written): scheduled "
                f"{self.censored[SCHEDULED]}, never scheduled {self.censored[NEVER_SCHEDULED]}"
            )
        return line

    def to_json(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "excluded": dict(self.excluded),
            "initial": dict(self.initial),
            "censored": dict(self.censored),
        }


def _exclusions(selection: Selection, nb_res: int, columns: list[str]) -> list[tuple[str, pl.Expr]]:
    """(reason, rows to exclude) in the order reasons are tried."""
    groups = [
        range(low, high + 1) for name, (low, high) in PRIORITY_GROUPS.items() if name in selection.priority_groups
    ]
    priorities = [p for group in groups for p in group]
    initial = pl.col("initial").is_not_null()
    # censored records are written as services: kept with the KILL-ended ones
    censored_kept = censored(columns) & pl.lit("kill" in selection.end_events)
    rules = [
        (
            "submitted outside the window",
            ~selection.in_window(pl.col(selection.submit_column)).fill_null(False) & ~initial,
        ),
    ]
    if not selection.synthesized:
        synthesized = (
            pl.col("synthesized_events") > 0 if selection.per == "task" else pl.col("missing_info").is_not_null()
        )
        rules.append(("synthesized record dropped", synthesized))
    rules += [
        ("still open at the end of the input", (pl.col("end_event").is_null() | censored(columns)) & ~censored_kept),
        # Borg left them waiting through the whole input (:mod:`.initial_state`)
        ("pending at the start, never scheduled in the input", initial & censored(columns) & ~scheduled_in_input()),
        (
            "end event not selected",
            ~pl.col("end_event").is_in([END_EVENTS[e] for e in selection.end_events]).fill_null(False) & ~censored_kept,
        ),
        ("never scheduled", pl.col("schedule").is_null() & pl.col("makespan").is_null() & ~censored_kept),
        ("makespan unknown", pl.col("makespan").is_null() & ~initial & ~censored_kept),
        (
            "priority group not selected",
            ~pl.col("priority").is_in(priorities).fill_null(len(groups) == len(PRIORITY_GROUPS)),
        ),
        (
            "scheduling class not selected",
            ~pl.col("scheduling_class")
            .is_in(list(selection.scheduling_classes))
            .fill_null(len(selection.scheduling_classes) == 4),
        ),
    ]
    if selection.require_requests:
        rules.append(("no CPU or memory request", pl.col("cpu_request").is_null() | pl.col("memory_request").is_null()))
    if "res" in columns:
        rules.append(("processor count unknown or zero", pl.col("res").fill_null(0) < 1))
        rules.append(("needs more resources than nb_res", pl.col("res") > nb_res))
    if selection.sample is not None:  # last: it counts the records a whole cell would get
        rules.append(("machine sampled out", ~selection.sample.kept()))
    return rules


def select_records(records: pl.DataFrame, selection: Selection, nb_res: int, account: JobAccount) -> pl.DataFrame:
    """The records that become jobs; the others are counted in ``account`` by their first reason."""
    reason = pl.lit(None, dtype=pl.String)
    for name, excluded in reversed(_exclusions(selection, nb_res, records.columns)):
        reason = pl.when(excluded).then(pl.lit(name)).otherwise(reason)
    labelled = records.with_columns(selection.initial().alias("initial")).with_columns(reason.alias("excluded_by"))
    for name, count in labelled.group_by("excluded_by").len().iter_rows():
        if name is not None:
            account.excluded[name] += count
    kept = labelled.filter(pl.col("excluded_by").is_null()).drop("excluded_by")
    account.written += kept.height
    is_censored = censored(kept.columns)
    if selection.initial_state:
        for name, count in kept.group_by("initial").len().iter_rows():
            if name is not None:
                account.initial[name] += count
        account.initial["censored"] += kept.select((pl.col("initial").is_not_null() & is_censored).sum()).item()
    in_window = kept.filter(pl.col("initial").is_null() & is_censored)
    if in_window.height:
        scheduled = in_window.select(scheduled_in_input().sum()).item()
        account.censored[SCHEDULED] += scheduled
        account.censored[NEVER_SCHEDULED] += in_window.height - scheduled
    return kept


def to_jobs(records: pl.DataFrame, selection: Selection, first_id: int) -> pl.DataFrame:
    """Selected records -> the writer's job columns (``id``, ``subtime``, ``delay`` and extras)."""
    initial = pl.col("initial").is_not_null()
    is_censored = censored(records.columns)
    delay = pl.col("makespan")
    if INPUT_END in records.columns:  # trace records: those whose end is not in the input last until it
        delay = pl.when(is_censored).then(censored_delay(selection.submit_column)).otherwise(delay)
    if selection.initial_state:
        delay = pl.when(initial).then(initial_delay(selection.start)).otherwise(delay)
    service = ((pl.col("end_event") == TaskEvent.KILL).fill_null(False) | is_censored) & pl.lit(
        selection.kill_is_service
    )
    kind = pl.when(service).then(pl.lit("service")).otherwise(pl.lit("task"))
    end_name = pl.col("end_event").replace_strict(
        {code: name for name, code in END_EVENTS.items()}, default=None, return_dtype=pl.String
    )
    unit = pl.Series(unit_priority(records["priority"].fill_null(-1).to_numpy()))
    priority = pl.when(pl.col("priority").is_null()).then(pl.lit(selection.unknown_priority)).otherwise(unit)
    columns = [
        pl.int_range(first_id, first_id + records.height, dtype=pl.Int64).alias("id"),
        pl.when(initial).then(0.0).otherwise(pl.col(selection.submit_column) - selection.start).alias("subtime"),
        delay.alias("delay"),
        *(pl.col(name) for name in ("res", "requested_time") if name in records.columns),
        kind.alias("class"),
        kind.alias("kind"),
        priority.alias("priority"),
        pl.col("cpu_request").alias("cpu"),
        pl.col("memory_request").alias("memory"),
        pl.col("priority").alias("google_priority"),
        pl.col("scheduling_class"),
        pl.col("user"),
        pl.col("job_id"),
        pl.col("job_id").alias("google_job"),  # the field generated jobs carry their job in
        pl.col("task_index"),
        pl.col("attempt") if selection.per == "attempt" else pl.col("attempts"),
        end_name.alias("end_event"),
        pl.col("disk_request").alias("disk"),
        pl.col("different_machine"),
        pl.col("wait").round(TIME_DECIMALS),
    ]
    if selection.initial_state:
        columns.append(pl.col("initial"))
    if INPUT_END in records.columns:
        columns += [
            is_censored.cast(pl.Int8).alias("censored"),
            (~scheduled_in_input()).cast(pl.Int8).alias("never_scheduled"),  # censored: pending at the input's end
        ]
    if selection.faithful and selection.pin_running:
        columns.append(pl.when(pl.col("initial") == RUNNING).then(pl.col("machine_id")).alias("trace_machine"))
    return records.select(columns)


def write_records(
    path: str | Path,
    record_batches: Iterable[pl.DataFrame],
    selection: Selection,
    nb_res: int,
    *,
    meta: Mapping[str, Any] | None = None,
) -> JobAccount:
    """Stream records (attempt or task tables) into a Batsim workload; ids count from 0; times
    rounded and walltimes given as ``selection`` says."""
    account = JobAccount()
    walltimes = walltime_rng(selection.walltime_seed)
    with WorkloadWriter(path, nb_res, selection.grain, meta=meta, walltime=selection.walltime, rng=walltimes) as writer:
        for records in record_batches:
            kept = select_records(records, selection, nb_res, account)
            if kept.height:
                writer.write(to_jobs(kept, selection, writer.jobs))
    return account


def window_complete(selection: Selection) -> Callable[[TaskLifecycles], bool]:
    """Whether every record of the window has ended (reading can stop there)."""

    def complete(lifecycles: TaskLifecycles) -> bool:
        if lifecycles.now < selection.end:
            return False
        held = lifecycles.open
        if selection.per == "attempt":
            held = held.filter(pl.col("state") != State.DEAD)  # their attempts are already out
        # with the initial state, the records alive at the start are read to their end too
        submit = pl.col(selection.submit_column)
        waited_for = submit < selection.end if selection.initial_state else selection.in_window(submit)
        return held.filter(waited_for).height == 0

    return complete


def convert_trace(
    sources: Iterable[str | Path],
    output: str | Path,
    selection: Selection,
    rows: RowAccount,
    *,
    nb_res: int,
    grace: float = DEFAULT_GRACE,
    verify: bool = False,
    workers: int = 1,
    progress: bool = False,
) -> JobAccount:
    """task_events in ``sources`` -> Batsim workload at ``output``; reading stops once every task
    submitted in the window has ended."""
    sources = [str(source) for source in sources]
    batches = rebuild(
        sources,
        rows,
        grace=grace,
        verify=verify,
        workers=workers,
        until=window_complete(selection),
        progress=progress,
    )
    meta = {
        "generator": "batsim-google trace convert",
        "sources": sources,
        "window": [selection.start, selection.end if math.isfinite(selection.end) else None],
        "per": selection.per,
        "end_events": list(selection.end_events),
        "priority_groups": list(selection.priority_groups),
        "scheduling_classes": list(selection.scheduling_classes),
        "synthesized_records": "kept" if selection.synthesized else "dropped",
        "initial_state": selection.initial_state,
        "faithful": selection.faithful,
    }
    if selection.sample is not None:
        meta["sample"] = {"machines": selection.sample.machines, "seed": selection.sample.seed}
    records = (
        (batch.attempts if selection.per == "attempt" else batch.tasks).with_columns(pl.lit(batch.now).alias(INPUT_END))
        for batch in batches
    )
    if selection.faithful:
        records = fold_evictions(records, selection.start)
    return write_records(output, records, selection, nb_res, meta=meta)
