"""Upper bounds of the room a scheduling pass can find, so that a head that fits nowhere is told
without a look at every machine.

An overloaded cell queues hundreds of request shapes, and a pass tries each worth-trying head:
first a placement (a scan of the whole cell), then room made by evicting lower levels (another
scan). Most tries fail. Within a pass, machines only lose room, except the one a placement or an
eviction just changed, so the largest free CPU and memory over the usable machines, and per level
the largest free-plus-evictable CPU and memory, taken once and raised by each changed machine,
stay upper bounds: a request above one cannot fit, and is refused without a scan. The bounds are
computed with the very sums the scans make, so no decision changes. They are taken at the pass's
first failed try only: a cell with room places its heads at the first scan, and pays nothing.
"""

from __future__ import annotations

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.eviction import Evictions


class RoomBounds:
    """The bounds of one pass over ``cluster`` (and the room held below each level, with
    priority levels)."""

    def __init__(self, cluster: Cluster, evictions: Evictions) -> None:
        self.cluster = cluster
        self.evictions = evictions
        self._usable = cluster.usable()
        self._cpu = self._memory = np.inf  # no bound before a try failed (see the module)
        self._by_level: dict[int, list[float]] | None = None

    def failed(self) -> None:
        """A try of the pass failed: take the bounds from now on."""
        if self._by_level is None:
            self._cpu = _largest(self.cluster.free_cpu(), self._usable)
            self._memory = _largest(self.cluster.free_memory(), self._usable)
            self._by_level = {}

    def may_place(self, cpu: float, memory: float) -> bool:
        """False when no usable machine has ``cpu`` and ``memory`` free."""
        return cpu <= self._cpu and memory <= self._memory

    def may_make_room(self, level: float, cpu: float, memory: float) -> bool:
        """False when no usable machine frees ``cpu`` and ``memory`` by evicting below ``level``
        (always True without priority levels: the raw priorities have no per-level sums)."""
        if not self.evictions.levels or self._by_level is None:
            return True
        row = int(level)
        bound = self._by_level.get(row)
        if bound is None:
            below_cpu, below_memory = self.evictions.freeable_at(row)
            bound = self._by_level[row] = [
                _largest(self.cluster.free_cpu() + below_cpu, self._usable),
                _largest(self.cluster.free_memory() + below_memory, self._usable),
            ]
        return cpu <= bound[0] and memory <= bound[1]

    def changed(self, machine: int) -> None:
        """``machine``'s room changed (a start, evictions): raise the bounds to what it has now."""
        if self._by_level is None or not self._usable[machine]:
            return
        free_cpu, free_memory = self.cluster.free_cpu()[machine], self.cluster.free_memory()[machine]
        self._cpu = max(self._cpu, free_cpu)
        self._memory = max(self._memory, free_memory)
        for row, bound in self._by_level.items():
            below_cpu, below_memory = self.evictions.freeable_at(row)
            bound[0] = max(bound[0], free_cpu + below_cpu[machine])
            bound[1] = max(bound[1], free_memory + below_memory[machine])


def _largest(values: np.ndarray, mask: np.ndarray) -> float:
    return float(values[mask].max()) if mask.any() else -np.inf
