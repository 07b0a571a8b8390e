"""A blocked group is tried on the machines freed since the last pass only, and the placement and
eviction searches then look at those machines alone (their indexes, in increasing order): the same
machine as the search over the whole cell masked to them (the rule before), on random cells with
ties."""

from __future__ import annotations

import numpy as np
import pytest

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.eviction import Evictions
from batsim_google.scheduling.placement import best_fit, first_fit
from batsim_google.scheduling.tasks import JobRequest, Task


def masked_best_fit(cluster, cpu, memory, extra, above):
    """best-fit over the whole cell, the machines outside ``extra`` masked out."""
    mask = cluster.usable() & (cluster.free_cpu(above) >= cpu) & (cluster.free_memory(above) >= memory) & extra
    if not mask.any():
        return -1
    leftover = cluster.free_cpu(above) - cpu + cluster.free_memory(above) - memory
    leftover[~mask] = np.inf
    return int(np.argmin(leftover))


def masked_first_fit(cluster, cpu, memory, extra, above):
    mask = cluster.usable() & (cluster.free_cpu(above) >= cpu) & (cluster.free_memory(above) >= memory) & extra
    return int(np.argmax(mask)) if mask.any() else -1


def random_cell(rng, machines=60, levels=4):
    """A cell with tasks of random priorities on it, some machines down, capacities on a grid (ties)."""
    cluster = Cluster(rng.choice([0.5, 1.0], machines), rng.choice([0.25, 0.5, 1.0], machines), free_tier_room=True)
    evictions = Evictions(cluster, levels)
    for index in range(machines * 3):
        machine = int(rng.integers(machines))
        cpu, memory = rng.choice([0.0625, 0.125, 0.25]), rng.choice([0.0625, 0.125])
        if cluster.free_cpu()[machine] < cpu or cluster.free_memory()[machine] < memory:
            continue
        priority = float(rng.choice([0.05, 0.3, 0.6, 0.95]))
        task = Task(JobRequest(f"w0!{index}", 0.0, "task", priority, cpu, memory, 10.0), f"w0!{index}")
        task.level, task.machine, task.start_time = evictions.level(priority), machine, float(index)
        cluster.allocate(machine, cpu, memory, priority <= 0.1)
        evictions.started(task)
    cluster.set_available(rng.choice(machines, 5, replace=False), False)
    return cluster, evictions


@pytest.mark.parametrize("seed", range(20))
def test_placements_on_freed_machines_are_those_of_the_masked_cell(seed):
    rng = np.random.default_rng(seed)
    cluster, _ = random_cell(rng)
    for _ in range(50):
        extra = rng.random(len(cluster)) < rng.choice([0.02, 0.2, 1.0])
        cpu, memory = rng.choice([0.0625, 0.125, 0.25, 0.5]), rng.choice([0.0625, 0.125, 0.5])
        for above in (False, True):
            machines = np.flatnonzero(extra)
            assert best_fit(cluster, cpu, memory, machines, above) == masked_best_fit(
                cluster, cpu, memory, extra, above
            )
            assert first_fit(cluster, cpu, memory, machines, above) == masked_first_fit(
                cluster, cpu, memory, extra, above
            )
    assert best_fit(cluster, 0.0625, 0.0625, np.zeros(0, dtype=np.int64)) == -1


def masked_make_room(evictions, task, allowed):
    """make_room's machine and victims over the whole cell, the machines outside ``allowed`` masked."""
    cluster, level = evictions.cluster, int(task.level)
    free_cpu, free_memory = cluster.free_cpu(), cluster.free_memory()
    candidates = (
        cluster.usable()
        & (free_cpu + evictions._below_cpu[level] >= task.request.cpu)
        & (free_memory + evictions._below_memory[level] >= task.request.memory)
        & allowed
    )
    if not candidates.any():
        return -1
    return int(np.argmax(np.where(candidates, free_cpu + free_memory, -np.inf)))


@pytest.mark.parametrize("seed", range(20))
def test_evictions_on_freed_machines_are_those_of_the_masked_cell(seed):
    rng = np.random.default_rng(seed)
    cluster, evictions = random_cell(rng)
    found = 0
    for index in range(50):
        allowed = rng.random(len(cluster)) < rng.choice([0.02, 0.2, 1.0])
        priority = float(rng.choice([0.3, 0.6, 0.95]))
        request = JobRequest(f"w1!{index}", 0.0, "task", priority, float(rng.choice([0.5, 1.0])), 0.25, 10.0)
        task = Task(request, request.job_id, level=evictions.level(priority))
        machine, victims = evictions.make_room(task, np.flatnonzero(allowed))
        assert machine == masked_make_room(evictions, task, allowed)
        if machine >= 0:  # the same victims as on that machine alone
            assert victims == evictions.make_room(task, np.array([machine]))[1]
        found += machine >= 0
    assert found  # the draws do make room somewhere
