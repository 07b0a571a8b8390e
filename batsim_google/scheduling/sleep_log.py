"""The machines asleep over time as the scheduler knows them, written beside Batsim's outputs.

Batsim 4.2.1 labels a machine that failed while asleep *idle* once it is repaired, though it stays
in its sleep pstate and consumes as such: its ``out_machine_states.csv`` then counts sleeping
machines as idle, for days under ``idle-sleep``. The scheduler knows each machine's power state
(it asked for every switch and was told when each ended), so this log of the machines asleep and
up lets a figure correct Batsim's labels.
"""

from __future__ import annotations

import csv
from pathlib import Path

from batsim_google.output_files import AtomicFile

SLEEP_LOG = "sleeping.csv"


class SleepLog:
    """(time, machines asleep and up) at each change."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.counts: list[int] = []

    def record(self, now: float, count: int) -> None:
        if self.counts and self.counts[-1] == count:
            return
        if self.times and self.times[-1] == now:
            self.counts[-1] = count  # the last change at one time holds
        else:
            self.times.append(now)
            self.counts.append(count)

    def write(self, prefix: str | Path) -> None:
        """Write ``PREFIX_sleeping.csv`` (``time``, ``sleeping``), if any machine ever slept."""
        if not self.times:
            return
        with AtomicFile(f"{prefix}_{SLEEP_LOG}") as temporary, temporary.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["time", "sleeping"])
            writer.writerows(zip(self.times, self.counts))
