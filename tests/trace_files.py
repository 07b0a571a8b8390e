"""Small trace files for the tests: task_events rows as text, written in the trace's layout."""

from __future__ import annotations

import csv
import gzip
import math
from pathlib import Path

from batsim_google.trace.schema import TaskEvent as E

USER = "u" * 44


def event(
    time_us: int,
    job: int,
    task: int,
    code: int,
    *,
    machine: str = "7",
    priority: int = 2,
    scheduling_class: int = 1,
    cpu: str = "0.0625",
    memory: str = "0.05",
    missing: str = "",
    user: str = USER,
) -> str:
    """One task_events line in the documented column order."""
    return f"{time_us},{missing},{job},{task},{machine},{code},{user},{scheduling_class},{priority},{cpu},{memory},0.0001,0"


def seconds_us(seconds: float) -> int:
    """Trace timestamp of ``seconds`` after the window start (600 s offset, microseconds)."""
    return int(round((seconds + 600) * 1_000_000))


def write_part(
    folder: Path, lines: list[str], part: int = 0, parts: int = 3, table: str = "task_events", compress: bool = True
) -> Path:
    directory = folder / table
    directory.mkdir(parents=True, exist_ok=True)
    name = f"part-{part:05d}-of-{parts:05d}.csv" + (".gz" if compress else "")
    data = ("\n".join(lines) + "\n").encode()
    path = directory / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


STATE_AFTER = {E.SUBMIT: "pending", E.SCHEDULE: "running", E.UPDATE_PENDING: "pending", E.UPDATE_RUNNING: "running"}


def reference_lifecycles(folder) -> tuple[list[tuple], dict]:
    """A plain, row-by-row implementation of the lifecycle rules, to compare with.

    Returns the ended attempts (key, submit, schedule, end, end event, priority, scheduling class)
    and, per task, its event count and final state, and its attempt still open at the end
    (``open``: key -> submit and schedule times), and the input's end (``last_time``: the time of
    the last row).
    """
    state, current, events = {}, {}, {}
    attempts, time = [], -math.inf
    for path in sorted((folder / "task_events").glob("part-*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            for row in csv.reader(handle):
                time = -math.inf if row[0] == "0" else int(row[0]) / 1e6 - 600
                key, code = (int(row[2]), int(row[3])), E(int(row[5]))
                before = state.get(key, "unseen")
                allowed = {
                    "unseen": {E.SUBMIT},
                    "dead": {E.SUBMIT},
                    "pending": {E.SCHEDULE, E.UPDATE_PENDING, E.EVICT, E.FAIL, E.KILL, E.LOST},
                    "running": {E.EVICT, E.FAIL, E.FINISH, E.KILL, E.LOST, E.UPDATE_RUNNING},
                }[before]
                assert code in allowed, (path, row)
                events[key] = events.get(key, 0) + 1
                if code == E.SUBMIT:
                    current[key] = {"submit": time, "schedule": None}
                elif code == E.SCHEDULE:
                    current[key]["schedule"] = time
                if code in STATE_AFTER:
                    state[key] = STATE_AFTER[code]
                else:
                    state[key] = "dead"
                    attempt = current.pop(key)
                    attempts.append(
                        (key, attempt["submit"], attempt["schedule"], time, int(code), int(row[8]), int(row[7]))
                    )
    return attempts, {"events": events, "state": state, "open": current, "last_time": time}
