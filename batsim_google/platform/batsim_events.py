"""Batsim external events of machine availability (``--events FILE``), made safe for Batsim 4.2.1.

Batsim aborts when a machine is made unavailable while already unavailable, or available while not
unavailable, and it orders the events of one timestamp by type rather than by file order. So state
changes are normalized before they are written: every machine starts available (as in Batsim);
times before 0 take effect at 0; a change to the state a machine is already in is dropped; and the
changes of one machine at one timestamp collapse into their net effect (none when they cancel).

The file has one JSON object per line (Batsim's format): changes of one timestamp and one type are
grouped into one event whose ``resources`` is an interval set (``"0-4 6 8"``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from procset import ProcSet

from batsim_google.output_files import AtomicFile

#: Decimals kept for event times (microseconds, the trace's resolution).
TIME_DECIMALS = 6
UNAVAILABLE = "machine_unavailable"
AVAILABLE = "machine_available"
#: The package's own external event asking to kill a task (Batsim forwards it to the scheduler
#: with ``--forward-unknown-events``).
USER_KILL_EVENT = "user_kill"


@dataclass(frozen=True)
class AvailabilityChanges:
    """Normalized changes, ordered by time then resource: at ``time`` (s), Batsim resource
    ``resource`` becomes available (``available``) or unavailable."""

    time: np.ndarray
    resource: np.ndarray
    available: np.ndarray

    def __len__(self) -> int:
        return len(self.time)

    def before(self, horizon: float) -> AvailabilityChanges:
        """The changes that happen before ``horizon`` seconds."""
        keep = self.time < horizon
        return AvailabilityChanges(self.time[keep], self.resource[keep], self.available[keep])


def availability_changes(
    resource: np.ndarray, time: np.ndarray, available: np.ndarray
) -> tuple[AvailabilityChanges, np.ndarray]:
    """Normalize wanted state changes (see the module); also return, per input, whether it was
    dropped because the machine was already in that state."""
    resource = np.asarray(resource, dtype=np.int64)
    time = np.round(np.maximum(np.asarray(time, dtype=float), 0.0), TIME_DECIMALS)
    available = np.asarray(available, dtype=bool)
    order = np.lexsort((np.arange(len(time)), time, resource))
    r, t, a = resource[order], time[order], available[order]
    first = np.r_[True, r[1:] != r[:-1]]
    # The state after any change is its value, kept or not; machines start available.
    before = np.where(first, True, np.r_[True, a[:-1]])
    changed = a != before
    repeated = np.empty(len(order), dtype=bool)
    repeated[order] = ~changed
    r, t, a = r[changed], t[changed], a[changed]
    # Kept changes alternate per machine; an even run at one (machine, time) cancels out, an odd
    # run amounts to its last change.
    starts = np.flatnonzero(np.r_[True, (r[1:] != r[:-1]) | (t[1:] != t[:-1])])
    sizes = np.diff(np.r_[starts, len(r)])
    last = (starts + sizes - 1)[sizes % 2 == 1]
    r, t, a = r[last], t[last], a[last]
    by_time = np.lexsort((r, t))
    return AvailabilityChanges(t[by_time], r[by_time], a[by_time]), repeated


def write_availability_events(path: str | Path, changes: AvailabilityChanges) -> int:
    """Write ``changes`` as a Batsim events file; return the number of events (lines)."""
    import polars as pl  # here: the scheduler, which needs only UNAVAILABLE, starts without polars

    grouped = (
        pl.DataFrame({"time": changes.time, "available": changes.available, "resource": changes.resource})
        .group_by("time", "available", maintain_order=True)
        .agg("resource")
    )
    with AtomicFile(path) as temporary, temporary.open("w", encoding="utf-8") as out:
        for time, available, resources in grouped.iter_rows():
            event = {
                "timestamp": time,
                "type": AVAILABLE if available else UNAVAILABLE,
                "resources": str(ProcSet(*resources)),
            }
            out.write(json.dumps(event) + "\n")
    return grouped.height
