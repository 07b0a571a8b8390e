"""Placing a warm start's tasks at time 0 in batches of one request shape, not one scan per task.

A generated warm start submits the cell's stationary state at time 0 (133,172 tasks on the full
cell) without machines, as does a trace replay's initial state unless ``--faithful`` (121,889 in
the first hour): the scheduler places them. One by one, each placement scans the cell's
12,583 machines. Placed here instead in groups of one priority level and one request shape, a
group costs one look at the cell, and within a group the machines are taken in the placement's
order (best-fit: least room left first; first-fit: lowest id), each filled while the request still
fits before the next: exactly what placing the group's tasks one by one does, since filling a
machine only lowers the room it has left and leaves every other machine's unchanged.

The rule, where it differs from the queue's order (priority, then submission): the queue's order
by Google's priority levels rather than raw priorities (the tiers above the free tier first, on the
room they see, then the free tier within the machines' capacity), and within a level the request
shapes in the order of their first task, each shape's tasks in queue order. Nothing is preempted
(the stationary state is one Borg held, without a burst of evictions at its start): a task that
fits nowhere is left pending, as Borg's are. (Placing the free tier first, so that the tiers above
pass the capacity by its requests as in the trace, started every task of the full cell's warm
start, but best-fit then stacked both tiers on the same machines: 3,108 left empty, others at
twice their CPU.)

Under the free tier's over-commit (the cluster's ``free_tier_overcommit`` > 1), a warm start is
placed as Borg's machines held it: every tier spread, each task on the machine its requests fill
least (CPU and memory shares of its capacity added), the tiers above within the room they see, then
the free tier past the CPU capacity up to what Borg let a machine hold, as
:func:`.placement.free_tier_spread` places it later. In the trace, the tiers above requested 0.375
of their machine's CPU or more on 99 % of the machines, and 97 % held free-tier tasks
(``bench/borg_overcommit.py``); packed by best fit, the tiers above would fill half the machines
and leave a tenth empty for the free tier alone, so that later placements above the free tier
seldom land beside it. Within a level, the largest shapes come first: spread machine after
machine, the small ones would leave no hole for them (a trace window at 7,000 s on 128 machines
left 3 production tasks of 0.375 CPU pending). A group is placed one task at a time from a heap of
the machines by that share (placing a task raises only its machine's share), not packed machine
after machine.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from batsim_google.model.vocabulary import GOOGLE_PRIORITY_LEVELS
from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.eviction import priority_level
from batsim_google.scheduling.tasks import Task

#: Machines looked at first for a group, grown fourfold while they cannot hold it.
FIRST_LOOK = 16
#: Relative margin under which a machine's room divided by a request counts as the whole number below.
QUOTIENT_TOLERANCE = 1e-9


def initial_placements(
    cluster: Cluster, tasks: list[Task], placement: str, free_tier: float
) -> Iterator[tuple[Task, int]]:
    """(task, machine) for each of ``tasks`` (machine -1: it fits nowhere), group by group in the
    rule's order. Lazy: the caller starts each task on its machine (allocating it on ``cluster``)
    before the next is drawn, so that each group sees the cell as the groups before left it.
    ``free_tier`` is the highest priority of the free tier."""
    groups: dict[tuple, list[Task]] = {}
    for task in sorted(tasks, key=lambda task: -task.request.priority):  # stable: then submission
        request = task.request
        level = priority_level(request.priority, GOOGLE_PRIORITY_LEVELS)
        groups.setdefault((request.priority > free_tier, level, request.cpu, request.memory), []).append(task)
    if cluster.free_tier_overcommit > 1:
        for (above, *_), group in sorted(groups.items(), key=_tier_level_then_size):
            yield from _spread(cluster, group, above)
        return
    for (above, *_), group in sorted(groups.items(), key=_tier_then_level):
        yield from _fill(cluster, group, above, placement)


def _tier_then_level(item: tuple[tuple, list[Task]]) -> tuple[bool, float]:
    (above, level, *_), _ = item
    return not above, -level  # stable: a level's groups in the order of their first task


def _tier_level_then_size(item: tuple[tuple, list[Task]]) -> tuple[bool, float, float]:
    (above, level, cpu, memory), _ = item
    return not above, -level, -(cpu + memory)  # the largest first: spread, the cell keeps holes for them


def _fill(cluster: Cluster, group: list[Task], above: bool, placement: str) -> Iterator[tuple[Task, int]]:
    """Place ``group`` (one shape): machines in the placement's order, each filled while it fits."""
    cpu, memory = group[0].request.cpu, group[0].request.memory
    free_cpu, free_memory = cluster.free_cpu(above), cluster.free_memory(above)
    fits = np.flatnonzero(cluster.usable() & (free_cpu >= cpu) & (free_memory >= memory))
    order = _machines_in_order(fits, free_cpu, free_memory, cpu, memory, len(group), placement)
    waiting = iter(group)
    task = next(waiting, None)
    for machine in order:
        while task is not None and free_cpu[machine] >= cpu and free_memory[machine] >= memory:
            yield task, int(machine)  # the caller allocates it: the room read here shrinks
            task = next(waiting, None)
        if task is None:
            return
    while task is not None:
        yield task, -1
        task = next(waiting, None)


def _spread(cluster: Cluster, group: list[Task], above: bool) -> Iterator[tuple[Task, int]]:
    """Place ``group`` (one shape) on the machine its requests fill least, task by task, as
    :func:`.placement.free_tier_spread` places the free tier (the tiers above: within the room they
    see). A heap holds the machines of the smallest shares only (every machine of a share up to a
    bound, the others' above it): its top is the cell's smallest while it is within the bound; past
    it, the heap grows fourfold."""
    cpu, memory = group[0].request.cpu, group[0].request.memory
    cpu_room = cluster.free_cpu(above) if above else cluster.free_tier_cpu_room()
    memory_room = cluster.free_memory(above)

    def fits(machines):
        return (cpu_room[machines] >= cpu) & (memory_room[machines] >= memory)

    def share(machines):  # the same operations as free_tier_spread's, so the same floats
        value = (cluster.cpu_used[machines] + cpu) / cluster.cpu_capacity[machines]
        value += (cluster.memory_used[machines] + memory) / cluster.memory_capacity[machines]
        return value

    machines = np.flatnonzero(cluster.usable() & fits(slice(None)))
    shares = share(machines)  # kept up to date: inf once the shape no longer fits
    waiting = iter(group)
    task = next(waiting, None)
    look = max(FIRST_LOOK, len(group))
    while task is not None:
        bound = np.inf if look >= len(machines) else np.partition(shares, look - 1)[look - 1]
        chosen = np.flatnonzero((shares <= bound) & np.isfinite(shares))
        heap = list(zip(shares[chosen].tolist(), machines[chosen].tolist(), chosen.tolist(), strict=True))
        heapq.heapify(heap)
        while task is not None and heap and heap[0][0] <= bound:
            _, machine, index = heapq.heappop(heap)
            yield task, machine  # the caller allocates it: its share grows
            task = next(waiting, None)
            if fits(machine):
                shares[index] = share(machines[index : index + 1])[0]
                heapq.heappush(heap, (float(shares[index]), machine, index))
            else:
                shares[index] = np.inf
        if bound == np.inf:
            break
        look *= 4
    while task is not None:
        yield task, -1
        task = next(waiting, None)


def _machines_in_order(
    fits: np.ndarray,
    free_cpu: np.ndarray,
    free_memory: np.ndarray,
    cpu: float,
    memory: float,
    tasks: int,
    placement: str,
) -> np.ndarray:
    """The machines of ``fits`` a group of ``tasks`` fills, in the order it fills them: enough of
    the first ones to hold the group (all of them if none is), not a sort of the whole cell."""
    if placement == "first-fit":
        key = fits.astype(float)  # ascending ids: fits is sorted already
    else:  # best-fit: the least room left first, as placement.best_fit computes it (ties: lowest id)
        key = free_cpu[fits] - cpu
        key += free_memory[fits]
        key -= memory
    # tasks each machine holds, rounded down where a quotient is within rounding of a whole
    # number (the tasks' allocations add up with rounding): fewer, never more, than fit
    holds = np.full(len(fits), np.inf)
    for room, request in ((free_cpu[fits], cpu), (free_memory[fits], memory)):
        if request > 0:
            holds = np.minimum(holds, np.maximum(np.floor(room / request * (1.0 - QUOTIENT_TOLERANCE)), 1.0))
    look = FIRST_LOOK
    while True:
        if look >= len(fits):
            chosen = np.arange(len(fits))
        else:  # the look-th smallest key, and every machine tied with it
            bound = np.partition(key, look - 1)[look - 1]
            chosen = np.flatnonzero(key <= bound)
        chosen = chosen[np.lexsort((fits[chosen], key[chosen]))]
        if len(chosen) == len(fits) or holds[chosen].sum() >= tasks:
            return fits[chosen]
        look *= 4
