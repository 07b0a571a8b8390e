"""Standard Workload Format logs (Parallel Workloads Archive) as trace records.

An SWF log has ``;`` header comments and one line of 18 white-space separated numbers per job,
``-1`` meaning unknown (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html); any other
negative number, one of 2^63 or more, a time past 2^42 s or a fraction in a count (processors,
job or user numbers, status), is out of range (the line is skipped, counted). Each job
becomes one record of the trace's attempt table (:data:`trace.attempts.ATTEMPT_SCHEMA`), so the
same converter writes it as a Batsim workload: submit = submit time, schedule = submit + wait,
makespan = run time, ``res`` = allocated processors (else requested), status 1/0/5 -> FINISH/FAIL/
KILL and any other status -> LOST (ended, how unknown). Unknown fields stay null: a job without a
submit time is skipped (counted); one without a run time or processor count is excluded by the
converter (counted). Each processor is used whole (``cpu`` 1); ``memory`` is the requested (else
used) memory per processor divided by ``node_memory`` when given, else unknown (null).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from batsim_google.errors import InputFileError
from batsim_google.parameters import MAX_MACHINES, MAX_TIME_S
from batsim_google.trace.attempts import ATTEMPT_SCHEMA
from batsim_google.trace.fields import LineStream, parse_numbers, split_fields
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent

FIELDS = [
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
]
STATUS_EVENTS = {1: TaskEvent.FINISH, 0: TaskEvent.FAIL, 5: TaskEvent.KILL}
UNKNOWN = -1
#: Fields are counts or times: below 0 (other than ``UNKNOWN``) or from 2^63 (as the trace reader's
#: int64 fields) they are out of range.
LARGEST = 2.0**63
#: Fields that count whole things: a fraction there is out of range too.
COUNTS = ("job_number", "allocated_processors", "requested_processors", "status", "user_id", "group_id")
#: Fields that are times, seconds: past :data:`~batsim_google.parameters.MAX_TIME_S` (2^42 s) out of range.
TIMES = ("submit_time", "wait_time", "run_time", "average_cpu_time", "requested_time", "think_time")
#: A UTF-8 byte order mark, which some editors put at a file's start: skipped.
BOM = "\ufeff"
_HEADER_FIELD = re.compile(r";\s?([A-Za-z]\w*):(.*)$")


def read_header(path: str | Path) -> dict[str, str]:
    """``; Key: value`` header lines (e.g. MaxProcs, UnixStartTime)."""
    header = {}
    for block in LineStream(Path(path)).blocks():
        for line in block.lines.to_pylist():
            line = line.removeprefix(BOM)
            if not line.startswith(";"):
                return header
            if match := _HEADER_FIELD.match(line):
                header[match.group(1)] = match.group(2).strip()
    return header


def header_processors(header: dict[str, str], where: str | Path) -> int | None:
    """The machine size the log declares (MaxProcs, else MaxNodes), if any; one that is not a
    whole number in 1..:data:`~batsim_google.parameters.MAX_MACHINES` is refused, naming it."""
    for key in ("MaxProcs", "MaxNodes"):
        value = header.get(key, "")
        if not value or value == str(UNKNOWN):
            continue
        if not (value.isdigit() and 0 < int(value) <= MAX_MACHINES):
            raise InputFileError(
                f"{where}: header {key} {value!r} is not a number of processors in 1..{MAX_MACHINES} (give --nb-res)"
            )
        return int(value)
    return None


def read_swf(path: str | Path, account: RowAccount, node_memory: float | None = None) -> Iterator[pl.DataFrame]:
    """Records of the attempt table (plus ``res`` and ``requested_time``), block by block."""
    path = Path(path)
    stream = LineStream(path)
    for block in stream.blocks():
        lines, numbers = pc.utf8_ltrim(block.lines, BOM), block.numbers
        data = pc.invert(pc.or_(pc.starts_with(lines, ";"), pc.equal(pc.utf8_trim_whitespace(lines), ""))).to_numpy(
            zero_copy_only=False
        )
        lines, numbers = lines.filter(data), numbers[data]
        account.read += len(lines) + (block.cut_line is not None)
        fields, good = split_fields(lines, len(FIELDS), None)
        values, bad = {}, np.zeros(int(good.sum()), dtype=bool)
        out_of_range = np.zeros(len(bad), dtype=bool)
        for name, strings in zip(FIELDS, fields):
            parsed, refused = parse_numbers(strings, pa.float64())
            numbers_read = parsed.to_numpy(zero_copy_only=False)
            values[name] = np.where(numbers_read == UNKNOWN, np.nan, numbers_read)
            bad |= refused
            out_of_range |= (numbers_read < 0) & (numbers_read != UNKNOWN) | (numbers_read >= LARGEST)
            if name in COUNTS:
                out_of_range |= np.isfinite(numbers_read) & (numbers_read != np.round(numbers_read))
            if name in TIMES:
                out_of_range |= numbers_read > MAX_TIME_S
        out_of_range &= ~bad
        unknown_submit = np.isnan(values["submit_time"]) & ~bad & ~out_of_range
        kept = numbers[good]
        account.reject_all(
            path,
            [
                (numbers[~good], "wrong field count", f"expected {len(FIELDS)} fields"),
                (kept[bad], "non-numeric field", ""),
                (
                    kept[out_of_range],
                    "value out of range",
                    f"negative other than {UNKNOWN}, 2^63 or more, a time past 2^42 s or a fraction of a count",
                ),
                (kept[unknown_submit], "unknown submit time", ""),
                (
                    [block.cut_line] if block.cut_line is not None else [],
                    "line cut by the end of a damaged gzip stream",
                    "",
                ),
            ],
        )
        use = ~bad & ~out_of_range & ~unknown_submit
        table = {name: column[use] for name, column in values.items()}
        account.used += int(use.sum())
        yield _records(table, node_memory)
    if stream.cut is not None:
        account.incident(path, f"{stream.cut}; jobs after it are lost")


def _records(swf: dict[str, np.ndarray], node_memory: float | None) -> pl.DataFrame:
    submit, wait, run = swf["submit_time"], swf["wait_time"], swf["run_time"]
    schedule = submit + wait
    status = np.nan_to_num(swf["status"], nan=UNKNOWN).astype(int)
    end_event = np.full(len(status), int(TaskEvent.LOST), dtype=np.int8)
    for code, event in STATUS_EVENTS.items():
        end_event[status == code] = event
    memory = np.where(np.isnan(swf["requested_memory"]), swf["used_memory"], swf["requested_memory"])
    processors = np.where(
        np.isnan(swf["allocated_processors"]), swf["requested_processors"], swf["allocated_processors"]
    )
    records = pl.DataFrame(
        {
            "job_id": swf["job_number"],
            "task_index": np.zeros(len(submit)),
            "attempt": np.zeros(len(submit)),
            "submit": submit,
            "schedule": schedule,
            "end": schedule + run,
            "end_event": end_event,
            "wait": wait,
            "makespan": run,
            "user": pl.Series(swf["user_id"], nan_to_null=True).cast(pl.Int64).cast(pl.String),
            "cpu_request": np.ones(len(submit)),
            "memory_request": memory / node_memory if node_memory else np.full(len(submit), np.nan),
            "res": processors,
            "requested_time": swf["requested_time"],
        },
        nan_to_null=True,
    )
    missing = {name: pl.lit(None, dtype=kind) for name, kind in ATTEMPT_SCHEMA.items() if name not in records.columns}
    return records.with_columns(**missing).select(
        *(pl.col(name).cast(kind) for name, kind in ATTEMPT_SCHEMA.items()),
        pl.col("res").cast(pl.Int64),
        pl.col("requested_time"),
    )
