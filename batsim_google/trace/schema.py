"""Tables, columns, event types and special times of the trace (format + schema document).

Columns are named by a short key derived from the ``content`` field of the trace's ``schema.csv``
("CPU request" -> ``cpu_request``); the order is the documented default unless a ``schema.csv``
says otherwise.
"""

from __future__ import annotations

import csv
import math
import re
from enum import IntEnum
from pathlib import Path

import numpy as np
import pyarrow as pa

from batsim_google.errors import InputFileError
from batsim_google.trace.vocabulary import PRIORITY_GROUPS

#: Microseconds per second; trace timestamps are integers in microseconds.
MICROSECONDS = 1_000_000
#: Trace timestamps start 600 s before the beginning of the trace window.
TIME_OFFSET_S = 600.0
#: Special time: the event happened before the trace window.
BEFORE_WINDOW = 0
#: Special time (2^63 - 1): the event happened after the trace window.
AFTER_WINDOW = 2**63 - 1


class TaskEvent(IntEnum):
    """Event types of the job and task events tables."""

    SUBMIT = 0
    SCHEDULE = 1
    EVICT = 2
    FAIL = 3
    FINISH = 4
    KILL = 5
    LOST = 6
    UPDATE_PENDING = 7
    UPDATE_RUNNING = 8


class MachineEvent(IntEnum):
    """Event types of the machine events table."""

    ADD = 0
    REMOVE = 1
    UPDATE = 2


_INT = pa.int64()
_SMALL = pa.int8()
_FLOAT = pa.float64()
_STR = pa.string()

#: Documented default columns of each table, in order, with their Arrow types.
DEFAULT_COLUMNS: dict[str, list[tuple[str, pa.DataType]]] = {
    "task_events": [
        ("time", _INT),
        ("missing_info", _SMALL),
        ("job_id", _INT),
        ("task_index", _INT),
        ("machine_id", _INT),
        ("event_type", _SMALL),
        ("user", _STR),
        ("scheduling_class", _SMALL),
        ("priority", _SMALL),
        ("cpu_request", _FLOAT),
        ("memory_request", _FLOAT),
        ("disk_request", _FLOAT),
        ("different_machine", _SMALL),
    ],
    "job_events": [
        ("time", _INT),
        ("missing_info", _SMALL),
        ("job_id", _INT),
        ("event_type", _SMALL),
        ("user", _STR),
        ("scheduling_class", _SMALL),
        ("job_name", _STR),
        ("logical_job_name", _STR),
    ],
    "machine_events": [
        ("time", _INT),
        ("machine_id", _INT),
        ("event_type", _SMALL),
        ("platform_id", _STR),
        ("cpu_capacity", _FLOAT),
        ("memory_capacity", _FLOAT),
    ],
}

#: Columns that every row must fill (``mandatory`` in the trace's schema.csv).
MANDATORY: dict[str, tuple[str, ...]] = {
    "task_events": ("time", "job_id", "task_index", "event_type", "priority"),
    "job_events": ("time", "job_id", "event_type"),
    "machine_events": ("time", "machine_id", "event_type"),
}

#: Closed ranges of the coded integer columns; a value outside is bad input, not data.
DOMAINS: dict[str, dict[str, tuple[float, float]]] = {
    "task_events": {
        "time": (0, AFTER_WINDOW),
        "missing_info": (0, 2),
        "job_id": (0, AFTER_WINDOW),
        "task_index": (0, AFTER_WINDOW),
        "event_type": (0, len(TaskEvent) - 1),
        "scheduling_class": (0, 3),
        "priority": (0, 11),
        "different_machine": (0, 1),
        # requests are fractions of the largest machine: a negative one is no request
        "cpu_request": (0, math.inf),
        "memory_request": (0, math.inf),
        "disk_request": (0, math.inf),
    },
    "job_events": {
        "time": (0, AFTER_WINDOW),
        "missing_info": (0, 2),
        "job_id": (0, AFTER_WINDOW),
        "event_type": (0, len(TaskEvent) - 1),
        "scheduling_class": (0, 3),
    },
    "machine_events": {
        "time": (0, AFTER_WINDOW),
        "machine_id": (0, AFTER_WINDOW),
        "event_type": (0, len(MachineEvent) - 1),
        "cpu_capacity": (0, math.inf),
        "memory_capacity": (0, math.inf),
    },
}


def priority_group_index(priority: np.ndarray) -> np.ndarray:
    """Index in :data:`PRIORITY_GROUPS` of each Google priority (0-11)."""
    upper = np.array([high for _, high in PRIORITY_GROUPS.values()])
    return np.searchsorted(upper, np.asarray(priority), side="left")


#: schema.csv ``content`` spellings that do not reduce to the key by the generic rule.
_CONTENT_KEYS = {
    "CPU request": "cpu_request",
    "memory request": "memory_request",
    "disk space request": "disk_request",
    "different machines restriction": "different_machine",
    "CPUs": "cpu_capacity",
    "Memory": "memory_capacity",
}


def column_key(content: str) -> str:
    """Short column key of a schema.csv ``content`` field ("job ID" -> ``job_id``)."""
    if content in _CONTENT_KEYS:
        return _CONTENT_KEYS[content]
    return re.sub(r"[^a-z0-9]+", "_", content.lower()).strip("_")


def table_columns(table: str, schema_csv: Path | None = None) -> list[tuple[str, pa.DataType]]:
    """Columns of ``table`` in file order: from ``schema_csv`` when given, else the default."""
    default = DEFAULT_COLUMNS[table]
    if schema_csv is None or not schema_csv.exists():
        return default
    types = dict(default)
    rows = []
    with schema_csv.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["file pattern"].split("/")[0] == table:
                rows.append((int(row["field number"]), column_key(row["content"])))
    if not rows:
        return default
    unknown = [key for _, key in rows if key not in types]
    if unknown:
        raise InputFileError(f"{schema_csv}: unknown {table} column(s) {unknown}")
    return [(key, types[key]) for _, key in sorted(rows)]


def seconds(raw_time: np.ndarray) -> np.ndarray:
    """Trace timestamps (µs, 600 s offset) -> seconds from the window start.

    The special values become -inf (0: before the window) and +inf (2^63-1: after it), so that
    they sort where they belong and can never pass for ordinary times in arithmetic.
    """
    raw_time = np.asarray(raw_time, dtype=np.int64)
    result = raw_time / MICROSECONDS - TIME_OFFSET_S
    result[raw_time == BEFORE_WINDOW] = -np.inf
    result[raw_time == AFTER_WINDOW] = np.inf
    return result
