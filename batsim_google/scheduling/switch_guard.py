"""No pstate switch that a known machine failure would interrupt.

Batsim 4.2.1 ends a pstate switch by marking the machine idle (switched on) or sleeping (switched
off) even when a ``machine_unavailable`` event came during the switch; the ``machine_available``
that follows then aborts Batsim ("not in UNAVAILABLE state"). Failures are an input of the
simulation, files that Batsim replays: the scheduler reads the same files and the power manager
starts no switch on a machine that fails before the switch would end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from procset import ProcSet

from batsim_google.errors import InputFileError
from batsim_google.platform.batsim_events import UNAVAILABLE
from batsim_google.platform.simgrid_xml import PlatformHost, sleep_pstates


class SwitchGuard:
    """When each machine next fails, and how long its switches on and off take (seconds)."""

    def __init__(self, failures: Sequence[np.ndarray], switch_on: np.ndarray, switch_off: np.ndarray) -> None:
        self._failures = [np.sort(np.asarray(times, dtype=float)) for times in failures]
        self._next = np.array([times[0] if times.size else np.inf for times in self._failures])
        self.switch_on = np.asarray(switch_on, dtype=float)
        self.switch_off = np.asarray(switch_off, dtype=float)

    def allows(self, machines: np.ndarray, now: float, on: bool) -> np.ndarray:
        """``machines`` (a mask) less those that would fail before a switch started ``now`` ends."""
        for machine in np.flatnonzero(self._next < now):  # each failure passes once: amortized
            times = self._failures[machine]
            coming = np.searchsorted(times, now, side="left")
            self._next[machine] = times[coming] if coming < times.size else np.inf
        seconds = self.switch_on if on else self.switch_off
        return machines & (self._next > now + seconds)


def failure_times(paths: Iterable[str | Path], machines: int) -> list[np.ndarray]:
    """Per machine (resource id), the times of its ``machine_unavailable`` events in Batsim
    event files (JSON lines); other events are ignored."""
    times: list[list[float]] = [[] for _ in range(machines)]
    for path in paths:
        with open(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                    if event.get("type") != UNAVAILABLE:
                        continue
                    for machine in ProcSet.from_str(event["resources"]):
                        times[machine].append(float(event["timestamp"]))
                except (ValueError, KeyError, IndexError, TypeError) as error:
                    raise InputFileError(f"{path}:{number}: unreadable machine_unavailable event ({error})") from error
    return [np.array(machine_times) for machine_times in times]


def switch_seconds(hosts: Sequence[PlatformHost]) -> tuple[np.ndarray, np.ndarray]:
    """(on, off) seconds of each host's switches: Batsim computes one flop at the speed of the
    virtual pstates named by ``sleep_pstates`` (sleep:off:on); 0 for a host without them."""
    on, off = np.zeros(len(hosts)), np.zeros(len(hosts))
    for index, host in enumerate(hosts):
        pstates = sleep_pstates(host.properties)
        if pstates is not None:
            _, off_pstate, on_pstate = pstates
            on[index], off[index] = 1.0 / host.speeds[on_pstate], 1.0 / host.speeds[off_pstate]
    return on, off
