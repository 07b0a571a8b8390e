"""Eviction: which running tasks a task of higher priority may stop, and on which machine.

Priorities are compared by level: ]0, 1] cut into ``priority_levels`` equal bands (12, Google's
levels, the inverse of :func:`batsim_google.model.priority.unit_priority`), so that tasks of one
level never evict each other and an eviction cannot cascade down a continuum of priorities; 0
levels compares the raw values. The machine chosen is the candidate with the most free CPU+memory
(fewest evictions), and on it the lowest priorities go first.

:class:`Evictions` keeps the running tasks per machine and, per level, the room those below it
hold, so that neither a pass's screening nor an eviction scans every running task.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.tasks import Task

#: A priority within this of a level's bound (x levels) is on the bound: Batsim rounds priorities to 6
#: decimals, an error of 5e-7 x levels, far below it.
LEVEL_TOLERANCE = 1e-4


def priority_level(priority: float, levels: int) -> float:
    """The priority level evictions compare (the raw priority with 0 levels)."""
    if not levels:
        return priority
    # Batsim hands extra fields back with 6 decimals: 2/12 arrives as 0.166667, whose level
    # must still be 2, not 3
    return min(max(math.ceil(priority * levels - LEVEL_TOLERANCE), 1), levels)


class Evictions:
    """Running tasks by machine, and what evicting those below a level would free on each."""

    def __init__(self, cluster: Cluster, priority_levels: int) -> None:
        self.cluster = cluster
        self.levels = priority_levels
        # Running tasks per machine, in the order they started (dicts: a run is reproducible, not
        # ordered by memory addresses), and (row L) the CPU and memory of those of level < L.
        self._on_machine: list[dict[Task, None]] = [{} for _ in range(len(cluster))]
        self._below_cpu = np.zeros((priority_levels + 2, len(cluster)))
        self._below_memory = np.zeros((priority_levels + 2, len(cluster)))

    def level(self, priority: float) -> float:
        return priority_level(priority, self.levels)

    def tasks_on(self, machines: list[int]) -> list[Task]:
        """The tasks running on ``machines``, machine by machine in the order they started."""
        return [task for machine in machines for task in self._on_machine[machine]]

    def started(self, task: Task) -> None:
        """``task`` runs on ``task.machine``: a candidate for eviction by higher levels."""
        machine = task.machine
        self._on_machine[machine][task] = None
        if self.levels:
            above = int(task.level) + 1
            self._below_cpu[above:, machine] += task.request.cpu
            self._below_memory[above:, machine] += task.request.memory

    def stopped(self, task: Task) -> None:
        """``task`` no longer runs on ``task.machine``."""
        machine = task.machine
        self._on_machine[machine].pop(task, None)
        if self.levels:
            if self._on_machine[machine]:
                above = int(task.level) + 1
                self._below_cpu[above:, machine] -= task.request.cpu
                self._below_memory[above:, machine] -= task.request.memory
            else:  # no float residue
                self._below_cpu[:, machine] = self._below_memory[:, machine] = 0.0

    def freeable(self, levels: np.ndarray, machines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """CPU and memory held below each of ``levels`` (rows) on each of ``machines`` (columns);
        only with priority levels."""
        rows = levels.astype(np.int64)[:, None]
        return self._below_cpu[rows, machines[None, :]], self._below_memory[rows, machines[None, :]]

    def make_room(self, task: Task, allowed: np.ndarray | None) -> tuple[int, list[Task]]:
        """The machine where evicting strictly lower priorities makes room for ``task`` (among
        ``allowed``, machine indexes in increasing order, if given) and the tasks to evict there;
        (-1, []) when there is none."""
        level = task.level
        cluster = self.cluster
        if self.levels:
            freeable_cpu, freeable_memory = self._below_cpu[int(level)], self._below_memory[int(level)]
        else:
            lower = [v for v in self._running() if v.level < level]
            machines = np.fromiter((v.machine for v in lower), dtype=np.int64, count=len(lower))
            freeable_cpu = np.bincount(machines, [v.request.cpu for v in lower], minlength=len(cluster))
            freeable_memory = np.bincount(machines, [v.request.memory for v in lower], minlength=len(cluster))
        free_cpu, free_memory = cluster.free_cpu(), cluster.free_memory()
        usable = cluster.usable()
        machines = allowed  # only those are looked at
        if machines is not None:
            usable, free_cpu, free_memory = usable[machines], free_cpu[machines], free_memory[machines]
            freeable_cpu, freeable_memory = freeable_cpu[machines], freeable_memory[machines]
        candidates = (
            usable
            & (free_cpu + freeable_cpu >= task.request.cpu)
            & (free_memory + freeable_memory >= task.request.memory)
        )
        if not candidates.any():
            return -1, []
        position = int(np.argmax(np.where(candidates, free_cpu + free_memory, -np.inf)))
        machine = position if machines is None else int(machines[position])
        # lowest priority first; among equals the latest started, which loses the least work
        lower_here = sorted(
            (v for v in self._on_machine[machine] if v.level < level), key=lambda v: (v.request.priority, -v.start_time)
        )
        chosen = []
        cpu_needed = task.request.cpu - free_cpu[position]
        memory_needed = task.request.memory - free_memory[position]
        for victim in lower_here:
            if cpu_needed <= 0 and memory_needed <= 0:
                break
            chosen.append(victim)
            cpu_needed -= victim.request.cpu
            memory_needed -= victim.request.memory
        return machine, chosen

    def _running(self) -> Iterator[Task]:
        return itertools.chain.from_iterable(self._on_machine)
