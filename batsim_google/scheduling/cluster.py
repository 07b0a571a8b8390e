"""Machine capacities, what is allocated on them, and whether they can take work now.

Kept as numpy arrays so that finding a machine for a task is a handful of vector operations over
the whole cell, not a Python loop over 12,583 machines. The free CPU, free memory and usable
machines are kept up to date at each change rather than derived at each look: a full cell's hour
looks at them about a million times.
"""

from __future__ import annotations

from enum import Enum

import numpy as np


class Power(Enum):
    ON = "on"
    SWITCHING_OFF = "switching_off"
    SLEEPING = "sleeping"
    SWITCHING_ON = "switching_on"


class Cluster:
    """Normalized CPU/memory capacities and allocations of each machine.

    CPU may be over-committed by ``cpu_overcommit`` (1.0: never); memory never is. With
    ``free_tier_room``, a task above the free tier sees the free tier's allocations as room (Borg
    runs the free tier on what it reclaims, so a machine's requests may pass its capacity by them).
    A free-tier task sees the CPU capacity times ``free_tier_overcommit`` less every allocation
    (:meth:`free_tier_cpu_room`): how far past its capacity Borg let the free tier take a machine.
    """

    def __init__(
        self,
        cpu: np.ndarray,
        memory: np.ndarray,
        cpu_overcommit: float = 1.0,
        free_tier_room: bool = False,
        free_tier_overcommit: float = 1.0,
    ) -> None:
        for name, ratio in (("cpu_overcommit", cpu_overcommit), ("free_tier_overcommit", free_tier_overcommit)):
            if ratio < 1.0:
                raise ValueError(f"{name} must be >= 1 (got {ratio})")
        self.cpu_capacity = np.asarray(cpu, dtype=float) * cpu_overcommit
        self.memory_capacity = np.asarray(memory, dtype=float)
        size = len(self.cpu_capacity)
        self.cpu_used = np.zeros(size)
        self.memory_used = np.zeros(size)
        self._free_cpu = self.cpu_capacity.copy()
        self._free_memory = self.memory_capacity.copy()
        self.free_tier_room = free_tier_room
        # what the free tier holds, and the room a task above it sees (the same arrays without
        # free_tier_room)
        self.free_tier_cpu = np.zeros(size)
        self.free_tier_memory = np.zeros(size)
        self._room_cpu_above = self.cpu_capacity.copy() if free_tier_room else self._free_cpu
        self._room_memory_above = self.memory_capacity.copy() if free_tier_room else self._free_memory
        # the CPU room a free-tier task sees (the same array as _free_cpu without over-commit)
        self.free_tier_overcommit = free_tier_overcommit
        self._room_cpu_free_tier = (
            self.cpu_capacity * free_tier_overcommit if free_tier_overcommit > 1 else self._free_cpu
        )
        self.tasks = np.zeros(size, dtype=np.int64)
        self.available = np.ones(size, dtype=bool)  # False while failed (set_available)
        self.powered = np.ones(size, dtype=bool)  # True only when ON
        self._usable = np.ones(size, dtype=bool)
        # read-only views of the arrays kept up to date, handed out at every look
        self._views = tuple(
            _read_only(array)
            for array in (
                self._usable,
                self._free_cpu,
                self._free_memory,
                self._room_cpu_above,
                self._room_memory_above,
                self._room_cpu_free_tier,
            )
        )
        self._fits: dict[tuple[float, float], bool] = {}
        self.asleep = np.zeros(size, dtype=bool)  # True only when SLEEPING
        self.power = [Power.ON] * size
        self.idle_since = np.zeros(size)

    def __len__(self) -> int:
        return len(self.cpu_capacity)

    def in_power(self, *states: Power) -> np.ndarray:
        """Mask of the machines in one of these power states."""
        return np.array([power in states for power in self.power], dtype=bool)

    def fits_somewhere(self, cpu: float, memory: float) -> bool:
        """Whether some machine of the cell, empty, could hold the request (capacities are fixed:
        each request shape is looked at once)."""
        fits = self._fits.get((cpu, memory))
        if fits is None:
            fits = self._fits[cpu, memory] = bool(np.any((self.cpu_capacity >= cpu) & (self.memory_capacity >= memory)))
        return fits

    def usable(self) -> np.ndarray:
        """Mask of the machines available and on (read-only)."""
        return self._views[0]

    def free_cpu(self, above_free_tier: bool = False) -> np.ndarray:
        """CPU capacity less the allocated, per machine (read-only); for a task ``above_free_tier``
        with ``free_tier_room``, less what is allocated above the free tier."""
        return self._views[3 if above_free_tier else 1]

    def free_memory(self, above_free_tier: bool = False) -> np.ndarray:
        """Memory capacity less the allocated, per machine (read-only); as :meth:`free_cpu`."""
        return self._views[4 if above_free_tier else 2]

    def free_tier_cpu_room(self) -> np.ndarray:
        """CPU capacity times ``free_tier_overcommit`` less the allocated, per machine (read-only):
        the CPU a free-tier task may take (its memory: :meth:`free_memory`)."""
        return self._views[5]

    def set_available(self, machines, available: bool) -> None:
        """Machines failed (False) or back (True)."""
        self.available[machines] = available
        self._usable[machines] = self.available[machines] & self.powered[machines]

    def allocate(self, machine: int, cpu: float, memory: float, free_tier: bool = False) -> None:
        self.cpu_used[machine] += cpu
        self.memory_used[machine] += memory
        if free_tier:
            self.free_tier_cpu[machine] += cpu
            self.free_tier_memory[machine] += memory
        self.tasks[machine] += 1
        self._refresh(machine)

    def release(self, machine: int, cpu: float, memory: float, now: float, free_tier: bool = False) -> None:
        self.cpu_used[machine] = max(0.0, self.cpu_used[machine] - cpu)
        self.memory_used[machine] = max(0.0, self.memory_used[machine] - memory)
        if free_tier:
            self.free_tier_cpu[machine] = max(0.0, self.free_tier_cpu[machine] - cpu)
            self.free_tier_memory[machine] = max(0.0, self.free_tier_memory[machine] - memory)
        self.tasks[machine] -= 1
        if self.tasks[machine] == 0:  # no float residue
            self.cpu_used[machine] = self.memory_used[machine] = 0.0
            self.free_tier_cpu[machine] = self.free_tier_memory[machine] = 0.0
            self.idle_since[machine] = now
        self._refresh(machine)

    def _refresh(self, machine: int) -> None:
        self._free_cpu[machine] = self.cpu_capacity[machine] - self.cpu_used[machine]
        self._free_memory[machine] = self.memory_capacity[machine] - self.memory_used[machine]
        if self.free_tier_room:
            self._room_cpu_above[machine] = self._free_cpu[machine] + self.free_tier_cpu[machine]
            self._room_memory_above[machine] = self._free_memory[machine] + self.free_tier_memory[machine]
        if self.free_tier_overcommit > 1:
            self._room_cpu_free_tier[machine] = (
                self.cpu_capacity[machine] * self.free_tier_overcommit - self.cpu_used[machine]
            )

    def set_power(self, machines, power: Power, now: float) -> None:
        for machine in np.atleast_1d(machines).tolist():
            self.power[machine] = power
            self.powered[machine] = power is Power.ON
            self._usable[machine] = self.available[machine] and self.powered[machine]
            self.asleep[machine] = power is Power.SLEEPING
            if power is Power.ON:
                self.idle_since[machine] = now


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
