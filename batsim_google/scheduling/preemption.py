"""Preemption as Borg did it: it waits, and the task that preempts frees its room.

In the trace's shared parts (docs/faithful-replay.md, "Bursts"; ``bench/borg_bursts.py``),
14,466 of the 16,135 evictions come at the very millisecond a task is scheduled on their
machine, and those placements waited a median 28.2 s from their submission (bursts of fewer than
100 tasks) against 1.9 s for the placements that evicted nothing: a placement that has to evict
waits Borg's preemption delay. A big job's tasks that fit somewhere start together after a few
seconds; the rest start by preempting, tens of seconds later. At such a placement Borg evicted the
lowest priority first (98.4 % of the placements with a choice of priorities), some of the tasks
there (a median 2 of 4), and not the youngest first (51.2 % of the evicted were among the
youngest, 53.0 % by chance).

:class:`PreemptionWaits` holds the tasks that can start only by evicting for the delay;
:func:`large_task_victims`, :func:`lower_tier_victims`, :func:`room_overflow` and
:func:`victims_for_room` say what a task evicts on its machine; :class:`Bursts` which tasks came
in a burst.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.tasks import Task


class PreemptionWaits:
    """Tasks that can start only by evicting, held ``delay`` seconds before they may evict; with a
    ``spread``, each for its own delay, drawn from the logistic law of that median and scale (at
    least 0) by ``rng``: in the trace, the evicting placements' waits spread 18.5 to 40.9 s (10th to
    90th percentile) around their median 28.2 s, the same law every hour, so a big job's preempting
    wave starts over tens of seconds, not at one instant."""

    def __init__(self, delay: float, spread: float = 0.0, rng: np.random.Generator | None = None) -> None:
        if spread and rng is None:
            raise ValueError("a spread preemption delay needs a random generator")
        self.delay = delay
        self.spread = spread
        self._rng = rng
        self._waiting: list[tuple[float, int, Task, float]] = []  # (ready, _, task, queued at)
        self._cleared: dict[Task, None] = {}  # waited: may evict at their next try
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._waiting)

    def must_wait(self, task: Task) -> bool:
        """Whether ``task``, about to evict, must first wait the delay (it has not yet)."""
        return bool(self.delay) and task not in self._cleared

    def hold(self, task: Task, now: float, queued_at: float) -> float:
        """Hold ``task`` (queued at ``queued_at``) until ``now`` + its delay, which is returned."""
        ready = now + self.draw()
        heapq.heappush(self._waiting, (ready, next(self._sequence), task, queued_at))
        return ready

    def draw(self) -> float:
        """One held task's delay: the constant, or a draw of its law."""
        if not self.spread:
            return self.delay
        return max(0.0, float(self._rng.logistic(self.delay, self.spread)))

    def ready(self, now: float) -> list[tuple[Task, float]]:
        """The tasks whose delay is over, with the time they were queued: they may now evict."""
        done = []
        while self._waiting and self._waiting[0][0] <= now:
            _, _, task, queued_at = heapq.heappop(self._waiting)
            self._cleared[task] = None
            done.append((task, queued_at))
        return done

    def waited(self, task: Task) -> bool:
        """Whether ``task`` waited the delay and has not started since."""
        return task in self._cleared

    def started(self, task: Task) -> None:
        """``task`` started; a later attempt of it waits again if it has to evict."""
        self._cleared.pop(task, None)

    def remove(self, task: Task) -> bool:
        """Forget a held task (killed by its user); False when it was not held."""
        kept = [entry for entry in self._waiting if entry[2] is not task]
        if len(kept) == len(self._waiting):
            return False
        self._waiting = kept
        heapq.heapify(self._waiting)
        self._cleared.pop(task, None)
        return True


def room_overflow(cluster: Cluster, machine: int, cpu: float, memory: float) -> tuple[float, float]:
    """CPU and memory that a task of (``cpu``, ``memory``) would put ``machine``'s requests past
    its capacity, or past what they already were if more (a replay's tasks running at its start
    may hold a machine past its capacity): what placing it must free."""
    cpu_used, memory_used = cluster.cpu_used[machine], cluster.memory_used[machine]
    cpu_over = cpu_used + cpu - max(cluster.cpu_capacity[machine], cpu_used)
    memory_over = memory_used + memory - max(cluster.memory_capacity[machine], memory_used)
    return max(cpu_over, 0.0), max(memory_over, 0.0)


def victims_for_room(
    candidates: list[Task], cpu_over: float, memory_over: float, rng: np.random.Generator
) -> list[Task]:
    """The tasks to evict among ``candidates`` to free ``cpu_over`` and ``memory_over``: the
    lowest priority first and, within a priority, in a seeded random order (Borg's choice did
    not follow the tasks' age)."""
    order = rng.permutation(len(candidates))
    ranked = sorted(order.tolist(), key=lambda i: candidates[i].request.priority)
    chosen = []
    for i in ranked:
        if cpu_over <= 1e-12 and memory_over <= 1e-12:
            break
        chosen.append(candidates[i])
        cpu_over -= candidates[i].request.cpu
        memory_over -= candidates[i].request.memory
    return chosen


def large_task_victims(
    task: Task, free_tier: list[Task], waited: bool, memory: float, share: float, rng: np.random.Generator
) -> list[Task]:
    """The tasks of ``free_tier`` (running on its machine) that ``task`` evicts for its size: if it
    asks more than ``memory``, at a seeded ``share`` of its tries (every try once it ``waited``
    the preemption delay), the lowest priority first until its memory request is freed. In the
    trace, 54.3 % of the placements of tasks asking more than 0.05 of memory evicted, 0.1 to 0.8 %
    of those asking at most 0.04 (but in hour 3's burst)."""
    if task.request.memory <= memory or not free_tier or not (waited or rng.random() < share):
        return []
    return victims_for_room(free_tier, 0.0, task.request.memory, rng)


def lower_tier_victims(
    task: Task, lower: list[Task], waited: bool, share: float, rng: np.random.Generator
) -> list[Task]:
    """The tasks of ``lower`` (of a lower priority, running on its machine) that the free-tier task
    ``task`` evicts: at a seeded ``share`` of its tries (every try once it ``waited`` the
    preemption delay), in a seeded order, until its memory request is freed. In the trace, priority
    1 evicted priority 0 at 47.9 % of its placements beside them (7,989 evictions in hours 0 to 3,
    a mean 2.2 per evicting placement): 6.2 % of those submitted alone, 81.8 % of those in a
    burst asking more memory than CPU, 9.0 % of the other bursts'."""
    if not lower or not (waited or rng.random() < share):
        return []
    return victims_for_room(lower, 0.0, task.request.memory, rng)


#: Seconds within which tasks of one request shape submitted after the first are of its burst: the
#: trace's bursts (a job's tasks submitted within the same second) spread over a few milliseconds.
BURST_SPAN = 1.0


@dataclass
class _Burst:
    first: float
    size: int = 1


class Bursts:
    """Which tasks came in a burst: tasks of one request shape (priority, CPU, memory) submitted
    within :data:`BURST_SPAN` of the first of them. The scheduler does not know the trace's jobs;
    a job's burst asks for one shape."""

    def __init__(self) -> None:
        self._latest: dict[tuple[float, float, float], _Burst] = {}
        self._of: dict[Task, _Burst] = {}

    def submitted(self, task: Task, now: float) -> None:
        request = task.request
        shape = (request.priority, request.cpu, request.memory)
        burst = self._latest.get(shape)
        if burst is None or now - burst.first > BURST_SPAN:
            burst = self._latest[shape] = _Burst(now)
        else:
            burst.size += 1
        self._of[task] = burst

    def in_burst(self, task: Task) -> bool:
        """Whether ``task`` came with others of its shape (so far)."""
        burst = self._of.get(task)
        return burst is not None and burst.size > 1

    def forget(self, task: Task) -> None:
        self._of.pop(task, None)
