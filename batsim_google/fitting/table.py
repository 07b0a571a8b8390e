"""The table fitting starts from: one row per task, whatever the source.

Columns (other columns are ignored):

- ``subtime``: submission time, seconds, within 2^42 s of 0;
- ``makespan``: seconds, > 0 (a service's lifetime);
- ``kind`` (``task`` / ``service``) or ``end_event`` (``FINISH`` / ``KILL``, or the trace's codes
  4 / 5): the model paper's a-priori split, Finish-ended tasks and Kill-ended services;
- ``priority`` in ]0, 1] (the model's scale) or ``google_priority``, an integer 0..11 (the trace's;
  mapped with :func:`batsim_google.model.priority.unit_priority`);
- ``scheduling_class``, an integer 0..3, optional (k-means uses it when present);
- ``width``, an integer in 1..10^6 (:data:`~batsim_google.parameters.MAX_MACHINES`), optional: the resources (processors) of a parallel job;
- ``job_id``, an integer in 0..2^63-1, optional: the job a task belongs to (the job arrival model is fitted
  from it, :mod:`.job_arrivals`); ``user``, optional, kept to say what a job's tasks share;
  ``job_submit`` (seconds), ``job_user``, ``job_scheduling_class``, optional: the job's own record
  (the trace's job_events);
- ``cpu_request``, ``memory_request``, optional (null when unknown, else >= 0): the fit reports each class's
  share of the requested CPU;
- ``censored`` and ``resident``, booleans, optional: a makespan that is only a lower bound (the
  task outlived the input), a task running at the input's start (its makespan is then its residual
  life; :mod:`.censored`). Such rows are services whatever their end event, and their lifetimes are
  fitted with censoring (:mod:`.model_fit`).
- ``no_lifetime``, a string, optional: why a task submitted in the input has no lifetime a law can
  use (e.g. never scheduled; null when it has one). Such a row needs no ``makespan`` nor kind: it
  counts in the arrival rate, the jobs' sizes and the classes' requests, and is generated with the
  lifetime law of a class drawn for it (:mod:`.model_fit`).

A Batsim workload (:mod:`.batsim_input`), the Google trace (:mod:`.trace_input`) and SWF logs
(:mod:`.swf_input`) produce it. Rows are accounted for by the project's
:class:`~batsim_google.trace.row_accounting.RowAccount`: a row that breaks a rule is skipped and counted
by reason (rows read = rows used + rows skipped), or, in strict mode, stops the fit with the row
number (from 1) and the rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.model.vocabulary import GOOGLE_PRIORITY_LEVELS
from batsim_google.parameters import MAX_MACHINES, MAX_TIME_S
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent

KIND_OF_END_EVENT = {
    "FINISH": "task",
    str(int(TaskEvent.FINISH)): "task",
    "KILL": "service",
    str(int(TaskEvent.KILL)): "service",
}
SCHEDULING_CLASSES = 4
#: Optional columns kept as they are for job-level arrivals, with their types.
JOB_RECORD_COLUMNS = {
    "user": pl.String,
    "job_submit": pl.Float64,
    "job_user": pl.String,
    "job_scheduling_class": pl.Int64,
}
#: Optional requests (fractions of the largest machine; null when unknown): the fit reports each
#: class's share of them.
REQUEST_COLUMNS = ("cpu_request", "memory_request")
#: Optional flags of the tasks an input window cuts (:mod:`.censored`).
CUT_COLUMNS = ("censored", "resident")
#: Optional reason why a submitted task has no lifetime (null when it has one).
NO_LIFETIME = "no_lifetime"


@dataclass(frozen=True)
class TaskTable:
    """Valid rows with columns ``subtime``, ``makespan``, ``kind``, ``priority`` (]0, 1]) and, when
    given, ``google_priority``, ``scheduling_class`` and ``width``; and the account of the input's
    rows: read, used (the rows of ``frame``) and skipped by reason."""

    frame: pl.DataFrame
    rows: RowAccount

    @property
    def google_priorities(self) -> bool:
        return "google_priority" in self.frame.columns

    @property
    def has_scheduling_class(self) -> bool:
        return "scheduling_class" in self.frame.columns


def _number(name: str) -> pl.Expr:
    """The column as numbers; a field that is not one (e.g. the text ``abc``) becomes null."""
    return pl.col(name).cast(pl.Float64, strict=False)


def _finite(name: str) -> pl.Expr:
    return _number(name).is_not_null() & _number(name).is_finite()


def _integer_in(name: str, low: int, high: float) -> pl.Expr:
    value = _number(name)
    return _finite(name) & (value == value.round()) & value.is_between(low, high)


def task_table(frame: pl.DataFrame, account: RowAccount, source: str = "task table") -> TaskTable:
    """Check and normalize ``frame`` (see the module docstring); ``source`` names it in errors."""
    columns = set(frame.columns)
    missing = [name for name in ("subtime", "makespan") if name not in columns]
    if not columns & {"kind", "end_event"}:
        missing.append("kind or end_event")
    if not columns & {"priority", "google_priority"}:
        missing.append("priority or google_priority")
    if missing:
        raise InputFileError(f"the task table lacks column(s): {', '.join(missing)}")

    if "kind" in columns:
        kind = pl.col("kind").cast(pl.String)
        kind_rule = (kind.is_in(["task", "service"]), "kind is not task or service")
    else:
        event = pl.col("end_event").cast(pl.String).str.to_uppercase()
        kind = event.replace_strict(KIND_OF_END_EVENT, default=None)
        kind_rule = (kind.is_not_null(), "end event is not FINISH or KILL")
    cut = [pl.col(name).fill_null(False) for name in CUT_COLUMNS if name in columns]
    if cut:
        kind = pl.when(pl.any_horizontal(cut)).then(pl.lit("service")).otherwise(kind)
        kind_rule = (kind.is_in(["task", "service"]).fill_null(False), kind_rule[1])
    if "google_priority" in columns:
        priority = (_number("google_priority") + 1.0) / GOOGLE_PRIORITY_LEVELS
        priority_rule = (
            _integer_in("google_priority", 0, GOOGLE_PRIORITY_LEVELS - 1),
            f"google_priority is not an integer in 0..{GOOGLE_PRIORITY_LEVELS - 1}",
        )
    else:
        priority = _number("priority")
        priority_rule = (_finite("priority") & (priority > 0) & (priority <= 1), "priority is not in ]0, 1]")
    makespan_rule = (
        _finite("makespan") & _number("makespan").is_between(0, MAX_TIME_S, closed="right"),
        "makespan is missing, not finite, <= 0 or past 2^42 s",
    )
    if NO_LIFETIME in columns:  # a task without a lifetime needs neither a makespan nor a kind
        lifeless = pl.col(NO_LIFETIME).is_not_null()
        kind = pl.when(lifeless).then(None).otherwise(kind)
        makespan_rule = (lifeless | makespan_rule[0].fill_null(False), makespan_rule[1])
        kind_rule = (lifeless | kind_rule[0].fill_null(False), kind_rule[1])
    rules = [
        (_finite("subtime") & (_number("subtime").abs() < MAX_TIME_S), "subtime is missing, not finite or past 2^42 s"),
        makespan_rule,
        kind_rule,
        priority_rule,
    ]
    if "scheduling_class" in columns:
        rules.append(
            (
                _integer_in("scheduling_class", 0, SCHEDULING_CLASSES - 1),
                f"scheduling_class is not an integer in 0..{SCHEDULING_CLASSES - 1}",
            )
        )
    if "width" in columns:
        rules.append((_integer_in("width", 1, MAX_MACHINES), f"width is not an integer in 1..{MAX_MACHINES}"))
    if "job_id" in columns:  # an integer column may be wider than 64 bits (polars reads them as i128)
        job_id = pl.col("job_id").cast(pl.Int64, strict=False)
        rules.append(
            (
                (job_id.is_not_null() & (job_id >= 0) & (job_id.cast(pl.Float64) == _number("job_id"))),
                "job_id is not an integer in 0..2^63-1",
            )
        )
    for name in REQUEST_COLUMNS:  # unknown (null) or a fraction of the largest machine
        if name in columns:
            request = _number(name)
            rules.append(
                (pl.col(name).is_null() | (_finite(name) & (request >= 0)), f"{name} is not a finite number >= 0")
            )
    reason = pl.when(pl.lit(False)).then(pl.lit(None, pl.String))
    if "unusable" in columns:
        reason = reason.when(pl.col("unusable").is_not_null()).then(pl.col("unusable").cast(pl.String))
    for ok, text in rules:
        reason = reason.when(~ok.fill_null(False)).then(pl.lit(text))
    checked = frame.with_row_index("row", offset=1).with_columns(reason.otherwise(None).alias("reason"))
    account.read += frame.height
    bad = checked.filter(pl.col("reason").is_not_null())
    account.reject_all(
        source,
        [(rows["row"].to_numpy(), reason, "") for (reason,), rows in bad.group_by("reason", maintain_order=True)],
    )
    good = checked.filter(pl.col("reason").is_null())
    account.used += good.height
    selected = [
        _number("subtime"),
        _number("makespan"),
        kind.alias("kind"),
        priority.alias("priority"),
    ]
    if "google_priority" in columns:
        selected.append(_number("google_priority").cast(pl.Int64))
    if "scheduling_class" in columns:
        selected.append(_number("scheduling_class").cast(pl.Int64))
    if "width" in columns:
        selected.append(_number("width").cast(pl.Int64))
    if "job_id" in columns:
        selected.append(pl.col("job_id").cast(pl.Int64, strict=False))
    for name in CUT_COLUMNS:
        if name in columns:
            selected.append(pl.col(name).cast(pl.Boolean).fill_null(False))
    if NO_LIFETIME in columns:
        selected.append(pl.col(NO_LIFETIME).cast(pl.String))
    selected += [_number(name) for name in REQUEST_COLUMNS if name in columns]
    for name, kind in JOB_RECORD_COLUMNS.items():
        if name in columns:
            selected.append(pl.col(name).cast(kind))
    return TaskTable(good.select(selected), account)
