"""The pending queue, grouped by request shape so that a scheduling pass costs shapes, not tasks.

Tasks asking for the same CPU and memory form a *group*, kept in queue order (priority, then time
queued). Behind a group's head come tasks of the same shape and no higher priority: where the head
cannot be placed, nor make room by evicting, none of them can. A pass therefore tries heads only,
and a group whose head fit nowhere is marked *blocked*: until its head changes, it can only fit on
machines whose room grew since (a task ended there, it came back, it woke up). Google-like requests
have a few hundred shapes while an overloaded cell queues tens of thousands of tasks.

Groups keep their index once created (empty ones stay), so that shapes, head levels and blocked
flags are numpy arrays and a pass screens every group in a few vector operations.

Where a lower priority may see more room than a higher one (the free tier under its over-commit
may pass the CPU capacity, the tiers above may not), a ``tier`` function splits each shape's tasks
by the room they see, so that a head that fits nowhere blocks only tasks that cannot fit either.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

import numpy as np
from sortedcontainers import SortedList

from batsim_google.scheduling.tasks import Task

Shape = tuple[float, float]


def _first(pair: tuple) -> object:
    return pair[0]


class ShapeGroup:
    """Queued tasks of one (CPU, memory) request, in queue order."""

    __slots__ = ("index", "shape", "tasks")

    def __init__(self, index: int, shape: Shape) -> None:
        self.index = index
        self.shape = shape
        self.tasks: SortedList = SortedList(key=lambda task: task.queue_key)

    @property
    def head(self) -> Task:
        return self.tasks[0]


class PendingQueue:
    """Every pending task, by shape group; each task carries its ``queue_key`` while queued.

    Per group (by index): ``cpu`` and ``memory`` asked, ``level`` of the head, ``blocked`` (the
    head fit nowhere at the last pass that tried it) and ``count`` of queued tasks.
    """

    def __init__(self, tier: Callable[[Task], bool] | None = None) -> None:
        self.groups: list[ShapeGroup] = []
        self._tier = tier
        self._by_shape: dict[tuple, ShapeGroup] = {}
        self.cpu = np.zeros(0)
        self.memory = np.zeros(0)
        self.level = np.zeros(0)
        self.blocked = np.zeros(0, dtype=bool)
        self.count = np.zeros(0, dtype=np.int64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, task: Task) -> None:
        """Queue a task whose ``queue_key`` is set; a new head may fit where the old one did not."""
        group = self._group(task)
        group.tasks.add(task)
        self.count[group.index] += 1
        self._size += 1
        if group.head is task:
            self.blocked[group.index] = False
            self.level[group.index] = task.level

    def remove(self, task: Task) -> bool:
        """Take a task out of the queue; False when it was not queued."""
        if task.queue_key is None:
            return False
        group = self._by_shape[self._key(task)]
        group.tasks.remove(task)
        task.queue_key = None
        self.count[group.index] -= 1
        self._size -= 1
        if group.tasks:
            self.level[group.index] = group.head.level  # no higher: still blocked if it was
        return True

    def block(self, task: Task) -> None:
        """``task``, queued, fits nowhere: if it heads its group, the group is tried again only on
        the machines freed since."""
        group = self._by_shape[self._key(task)]
        if group.head is task:
            self.blocked[group.index] = True

    def nonempty(self) -> np.ndarray:
        return self.count > 0

    def in_order(self, indexes) -> list[ShapeGroup]:
        """The groups of ``indexes`` (all non-empty) by their heads' queue order."""
        return [group for _, group in self.heads(indexes)]

    def heads(self, indexes) -> list[tuple[tuple, ShapeGroup]]:
        """(head's queue key, group) of the groups of ``indexes`` (all non-empty), in queue order: a heap."""
        groups = self.groups
        return sorted(((groups[i].tasks[0].queue_key, groups[i]) for i in indexes), key=_first)

    def __iter__(self) -> Iterator[Task]:
        """All queued tasks in queue order."""
        return heapq.merge(*(group.tasks for group in self.groups), key=lambda task: task.queue_key)

    def _key(self, task: Task) -> tuple:
        shape = (task.request.cpu, task.request.memory)
        return shape if self._tier is None else (*shape, self._tier(task))

    def _group(self, task: Task) -> ShapeGroup:
        shape = (task.request.cpu, task.request.memory)
        key = self._key(task)
        group = self._by_shape.get(key)
        if group is None:
            group = self._by_shape[key] = ShapeGroup(len(self.groups), shape)
            self.groups.append(group)
            self.cpu = np.append(self.cpu, shape[0])
            self.memory = np.append(self.memory, shape[1])
            self.level = np.append(self.level, task.level)
            self.blocked = np.append(self.blocked, False)
            self.count = np.append(self.count, 0)
        return group
