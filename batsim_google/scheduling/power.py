"""Power management of ``energy = "idle-sleep"``: idle machines sleep, queued tasks wake them.

Machines idle for ``idle_timeout`` seconds go to sleep, unless a queued task could use them; sleeping
machines are woken for the queued tasks that fit nowhere awake. With a :class:`SwitchGuard`, no
machine is switched that a known failure would interrupt while it switches (Batsim aborts on that).
"""

from __future__ import annotations

import numpy as np

from batsim_google.scheduling.cluster import Cluster, Power
from batsim_google.scheduling.decisions import SwitchOff, SwitchOn
from batsim_google.scheduling.queue import PendingQueue
from batsim_google.scheduling.switch_guard import SwitchGuard


class PowerManager:
    """Chooses the machines to wake and to put to sleep; the cluster records their power states."""

    def __init__(self, cluster: Cluster, idle_timeout: float, switch_guard: SwitchGuard | None = None) -> None:
        self.cluster = cluster
        self.idle_timeout = idle_timeout
        self.switch_guard = switch_guard  # failures known in advance: no switch that one interrupts

    def wakeable(self, now: float) -> np.ndarray:
        """Available sleeping machines that may be woken now: none that a known failure would
        interrupt while it switches on."""
        sleeping = self.cluster.in_power(Power.SLEEPING) & self.cluster.available
        return sleeping if self.switch_guard is None else self.switch_guard.allows(sleeping, now, on=True)

    def room_coming(self, cpu: float, memory: float, now: float) -> bool:
        """Whether some machine that could hold the request is switching (on, or off and then on
        again) or asleep and free to wake (a machine about to fail is not woken)."""
        cluster = self.cluster
        switching = cluster.available & cluster.in_power(Power.SWITCHING_ON, Power.SWITCHING_OFF)
        coming = switching | self.wakeable(now)
        return bool(np.any(coming & (cluster.cpu_capacity >= cpu) & (cluster.memory_capacity >= memory)))

    def adjust(self, pending: PendingQueue, now: float) -> tuple[list[SwitchOn | SwitchOff], float | None]:
        """Wake sleeping machines for the queued tasks that fit nowhere awake; put machines idle
        for ``idle_timeout`` to sleep, but none that a queued task could use.

        Returns the switches, and when the next idle machine's time is up (None if none is idle).
        """
        cluster = self.cluster
        switches: list[SwitchOn | SwitchOff] = []
        to_wake = self._to_wake(pending, now)
        if to_wake:
            cluster.set_power(to_wake, Power.SWITCHING_ON, now)
            switches.append(SwitchOn(tuple(to_wake)))
        idle = cluster.usable() & (cluster.tasks == 0)
        if pending:  # e.g. machines too small for every queued task may sleep
            asked = pending.nonempty()
            idle &= ~(
                (cluster.cpu_capacity[:, None] >= pending.cpu[asked])
                & (cluster.memory_capacity[:, None] >= pending.memory[asked])
            ).any(axis=1)
        due = idle & (now - cluster.idle_since >= self.idle_timeout)
        expired = due if self.switch_guard is None else self.switch_guard.allows(due, now, on=False)
        if expired.any():  # a machine about to fail stays on: its failure is the next event for it
            machines = tuple(np.flatnonzero(expired).tolist())
            cluster.set_power(machines, Power.SWITCHING_OFF, now)
            switches.append(SwitchOff(machines))
        still_idle = idle & ~due
        recheck = float(cluster.idle_since[still_idle].min()) + self.idle_timeout if still_idle.any() else None
        return switches, recheck

    def _to_wake(self, pending: PendingQueue, now: float) -> list[int]:
        """Sleeping machines to wake so that the queued tasks fit somewhere.

        Room already on its way counts first: machines switching on, filled virtually by the queued
        tasks, group by group in queue order (the rest of a group fits no better than its first task).
        """
        cluster = self.cluster
        sleeping = self.wakeable(now)
        waking = cluster.in_power(Power.SWITCHING_ON)
        room_cpu = np.where(waking, cluster.cpu_capacity, 0.0)
        room_memory = np.where(waking, cluster.memory_capacity, 0.0)
        to_wake: list[int] = []
        for group in pending.in_order(np.flatnonzero(pending.nonempty())):
            cpu, memory = group.shape
            for _ in range(len(group.tasks)):
                fits = (room_cpu >= cpu) & (room_memory >= memory)
                if not fits.any():
                    candidates = sleeping & (cluster.cpu_capacity >= cpu) & (cluster.memory_capacity >= memory)
                    if not candidates.any():
                        break
                    machine = int(np.argmax(candidates))
                    sleeping[machine] = False
                    to_wake.append(machine)
                    room_cpu[machine], room_memory[machine] = (
                        cluster.cpu_capacity[machine],
                        cluster.memory_capacity[machine],
                    )
                    fits = np.zeros_like(fits)
                    fits[machine] = True
                machine = int(np.argmax(fits))
                room_cpu[machine] -= cpu
                room_memory[machine] -= memory
        return to_wake
