"""The room bounds of a pass refuse only what the scans of the cell would refuse."""

from __future__ import annotations

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.eviction import Evictions
from batsim_google.scheduling.placement import best_fit
from batsim_google.scheduling.room_bounds import RoomBounds
from batsim_google.scheduling.tasks import JobRequest, Task

LEVELS = 12


def _loaded_cell(rng: np.random.Generator, machines: int = 40) -> tuple[Cluster, Evictions]:
    cluster = Cluster(rng.choice([0.25, 0.5, 1.0], machines), rng.choice([0.25, 0.5, 1.0], machines))
    evictions = Evictions(cluster, LEVELS)
    for number in range(machines * 4):
        machine = int(rng.integers(machines))
        cpu, memory = rng.uniform(0.01, 0.3, 2)
        if cluster.free_cpu()[machine] < cpu or cluster.free_memory()[machine] < memory:
            continue
        task = Task(JobRequest(f"w0!{number}", 0.0, priority=float(rng.uniform(0.01, 1.0)), cpu=cpu, memory=memory), "")
        task.level, task.machine, task.start_time = evictions.level(task.request.priority), machine, 0.0
        cluster.allocate(machine, cpu, memory)
        evictions.started(task)
    cluster.set_available(rng.choice(machines, 5, replace=False), False)
    return cluster, evictions


def test_a_request_is_refused_by_the_bounds_only_when_every_scan_refuses_it():
    rng = np.random.default_rng(7)
    refused = placed = 0
    for _ in range(30):
        cluster, evictions = _loaded_cell(rng)
        bounds = RoomBounds(cluster, evictions)
        assert bounds.may_place(9.0, 9.0)  # no bound before a try failed
        bounds.failed()
        for _ in range(40):
            cpu, memory = rng.uniform(0.0, 1.0, 2)
            level = float(rng.integers(1, LEVELS + 1))
            task = Task(JobRequest("w0!x", 0.0, cpu=cpu, memory=memory), "", level=level)
            fits = best_fit(cluster, cpu, memory) >= 0
            room = evictions.make_room(task, None)[0] >= 0
            if not bounds.may_place(cpu, memory):
                assert not fits
                refused += 1
            if not bounds.may_make_room(level, cpu, memory):
                assert not room
                refused += 1
            placed += fits
    assert refused > 100 and placed > 100  # both sides of the bounds were exercised


def test_a_machine_given_room_within_the_pass_raises_the_bounds():
    cluster = Cluster(np.array([1.0, 1.0]), np.array([1.0, 1.0]))
    evictions = Evictions(cluster, LEVELS)
    low = Task(JobRequest("w0!low", 0.0, priority=0.1, cpu=0.9, memory=0.9), "w0!low", level=2.0)
    low.machine, low.start_time = 0, 0.0
    cluster.allocate(0, 0.9, 0.9)
    evictions.started(low)
    cluster.allocate(1, 0.9, 0.9)
    bounds = RoomBounds(cluster, evictions)
    bounds.failed()
    assert not bounds.may_place(0.5, 0.5)
    assert bounds.may_make_room(3.0, 0.5, 0.5) and not bounds.may_make_room(2.0, 0.5, 0.5)
    evictions.stopped(low)  # evicted within the pass: machine 0 is empty again
    cluster.release(0, 0.9, 0.9, 0.0)
    bounds.changed(0)
    assert bounds.may_place(0.5, 0.5) and bounds.may_make_room(2.0, 0.5, 0.5)
