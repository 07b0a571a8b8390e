"""Which cell machine stands for each machine of the trace in a faithful replay.

The trace has no machine capacities here (no machine_events part), so a trace machine is given a
machine of the cell's published mix. In the order the machines first appear, a machine that Borg
had filled may get a large cell machine and a small one a crowded machine: the replayed cell then
has room where Borg had none, and a burst that Borg could place only by preempting (in the shared
parts, 37 to 61 % of the placements of tasks asking for more than 0.05 of memory, against 0.1 to
0.4 % under 0.02) finds free machines. Ranking both sides pairs the machines Borg loaded most with
the largest ones, as the published mix's capacities and the trace's loads rank together
(docs/faithful-replay.md, "CPU over-commit").
"""

from __future__ import annotations

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.tasks import Task


def assign_by_load(assigned: dict[int, int], tasks: list[Task], cluster: Cluster) -> None:
    """Give the trace machines of ``tasks`` not yet in ``assigned`` the cell machines not yet
    given, the most loaded (by requested memory, then CPU) the largest (by memory, then CPU);
    past the cell's free machines, the rest wrap around in order as before."""
    load: dict[int, list[float]] = {}
    for task in tasks:
        machine = task.request.trace_machine
        if machine is not None and machine not in assigned:
            total = load.setdefault(machine, [0.0, 0.0])
            total[0] += task.request.memory
            total[1] += task.request.cpu
    if not load:
        return
    trace_ids = list(load)
    memory, cpu = np.array([load[m] for m in trace_ids]).T
    by_load = np.lexsort((-cpu, -memory))  # the most loaded first
    taken = np.zeros(len(cluster), dtype=bool)
    taken[list(assigned.values())] = True
    free = np.flatnonzero(~taken)
    by_size = free[np.lexsort((-cluster.cpu_capacity[free], -cluster.memory_capacity[free]))]
    for rank, index in enumerate(by_load.tolist()):
        if rank < len(by_size):
            assigned[trace_ids[index]] = int(by_size[rank])
        else:
            assigned[trace_ids[index]] = len(assigned) % len(cluster)
