"""The request law of a trace: (CPU, memory) requests counted at each task's terminal event.

FINISH rows give the requests of *tasks*, KILL rows those of *services* (the model paper's a-priori
split); SCHEDULE rows at the trace's start (time 0: the tasks already running there) those of the
*resident* tasks, the class a censored fit gives them (:mod:`batsim_google.fitting.model_fit`). The
law, with the files' checksums and the rows used and skipped, is what ``batsim-google requests``
writes and ``data/requests.json`` ships.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from batsim_google.errors import InputFileError
from batsim_google.model.request_law import RUNNING, EmpiricalRequests, RequestLaw
from batsim_google.model.workload_model import KINDS, Kind
from batsim_google.trace.checksums import sha256
from batsim_google.trace.reader import read_batches
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent

#: Terminal event whose rows give the requests of each kind.
KIND_EVENTS: dict[Kind, TaskEvent] = {"task": TaskEvent.FINISH, "service": TaskEvent.KILL}
#: The entry of the tasks running at the trace's start: their SCHEDULE rows at time 0.
RESIDENT = RUNNING


def derive_request_law(sources: Iterable[str | Path], account: RowAccount, note: str = "") -> RequestLaw:
    """Count (cpu, memory) requests at FINISH (tasks) and KILL (services) rows of task_events.

    Every row read ends in ``account``: used (a terminal row with both requests) or skipped, as
    not terminal, as a terminal row without a request, or as bad input (per the account's mode).
    """
    counters: dict[str, Counter] = {kind: Counter() for kind in (*KINDS, RESIDENT)}
    missing = Counter()
    files: dict[Path, None] = {}
    for path, batch in read_batches(sources, "task_events", account=account):
        files[path] = None
        event = batch.column("event_type")
        at_start = pc.and_(pc.equal(event, int(TaskEvent.SCHEDULE)), pc.equal(batch.column("time"), 0))
        terminal = 0
        for kind, code in (*KIND_EVENTS.items(), (RESIDENT, TaskEvent.SCHEDULE)):
            rows = batch.filter(at_start if kind == RESIDENT else pc.equal(event, int(code)))
            complete = rows.filter(
                pc.and_(pc.is_valid(rows.column("cpu_request")), pc.is_valid(rows.column("memory_request")))
            )
            terminal += len(rows)
            missing[kind] += len(rows) - len(complete)
            account.used += len(complete)
            account.skip(f"{code.name} row without a request", len(rows) - len(complete))
            counters[kind].update(
                zip(complete.column("cpu_request").to_pylist(), complete.column("memory_request").to_pylist())
            )
        account.skip("not a FINISH or KILL row, nor a SCHEDULE at time 0", batch.num_rows - terminal)
    kinds = {}
    for kind, counter in counters.items():
        if not counter and kind == RESIDENT:  # a part without the trace's start
            continue
        if not counter:
            raise InputFileError(f"no {KIND_EVENTS[kind].name} row with requests: cannot derive {kind}")
        pairs = sorted(counter.items())
        kinds[kind] = EmpiricalRequests(
            np.array([cpu for (cpu, _), _ in pairs]),
            np.array([memory for (_, memory), _ in pairs]),
            np.array([count for _, count in pairs], dtype=float),
        )
    provenance = {
        "note": note,
        "rule": "joint (CPU request, memory request) at the terminal event: FINISH rows for "
        "'task', KILL rows for 'service'; SCHEDULE rows at time 0 (running at the trace's start) "
        "for 'resident'",
        "files": {path.name: {"sha256": sha256(path)} for path in files},
        "rows_used": {kind: int(law.count.sum()) for kind, law in kinds.items()},
        "rows_skipped_missing_request": {kind: int(missing[kind]) for kind in kinds},
    }
    return RequestLaw(kinds, provenance)
