"""A warm start's tasks (running at time 0, no machine) are placed together, a shape at a time."""

from __future__ import annotations

import numpy as np
import pytest
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.decisions import Kill
from batsim_google.scheduling.initial_placement import initial_placements
from batsim_google.scheduling.policy import FREE_TIER, CellPolicy
from batsim_google.scheduling.tasks import JobRequest, Task, TaskState

HIGH, NORMAL, FREE = 0.95, 0.6, 0.1  # production, normal, free tier (priorities in ]0, 1])


def request(job_id, priority=NORMAL, cpu=0.25, memory=0.25, running_at_start=True) -> JobRequest:
    return JobRequest(
        f"w0!{job_id}",
        0.0,
        "task",
        priority,
        cpu,
        memory,
        100.0,
        initial=running_at_start,
        running_at_start=running_at_start,
    )


def random_cell(rng: np.random.Generator, machines: int) -> tuple[np.ndarray, np.ndarray]:
    """Capacities of a few kinds, as the Google cell's (ties between machines included)."""
    return rng.choice([0.25, 0.5, 1.0], machines), rng.choice([0.25, 0.5, 0.75, 1.0], machines)


def one_by_one(cpu, memory, requests, cpu_used=None, **config) -> CellPolicy:
    """The queue's own pass: the same tasks submitted as ordinary ones (no latency, no preemption)."""
    policy = CellPolicy(cpu, memory, mechanics_config(placement_latency=0.0, preemption=False, **config))
    prefill(policy, cpu_used)
    for r in requests:
        policy.job_submitted(0.0, JobRequest(r.job_id, 0.0, r.kind, r.priority, r.cpu, r.memory, r.work))
    policy.decide(0.0)
    return policy


def together(cpu, memory, requests, cpu_used=None, **config) -> CellPolicy:
    policy = CellPolicy(cpu, memory, mechanics_config(**config))
    prefill(policy, cpu_used)
    for r in requests:
        policy.job_submitted(0.0, r)
    policy.decide(0.0)
    return policy


def prefill(policy: CellPolicy, cpu_used: np.ndarray | None) -> None:
    """Machines already partly busy (unevenly), so that the placements' order matters."""
    for machine, used in enumerate([] if cpu_used is None else cpu_used):
        policy.cluster.allocate(machine, float(used), 0.0)


def submit_all(sim: FakeBatsim, requests: list[JobRequest]) -> None:
    """Submit ``requests`` in one batch (one pass after them all), as Batsim does at time 0."""
    for r in requests:
        sim.requests[r.job_id] = r
        sim.submitted.add(r.job_id)
        sim.policy.job_submitted(sim.now, r)
    sim.step()


def machines_of(policy: CellPolicy) -> dict[str, int | None]:
    return {task_id: task.machine for task_id, task in policy.ledger.tasks.items()}


@pytest.mark.parametrize("placement", ["best-fit", "first-fit"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("priority", [HIGH, FREE])
def test_one_shape_of_one_priority_lands_where_one_by_one_puts_it(placement, seed, priority):
    rng = np.random.default_rng(seed)
    cpu, memory = random_cell(rng, 40)
    cpu_used = rng.uniform(0, 0.2, 40) * cpu
    shape = (float(rng.choice([0.0, 0.05, 0.1, 0.125])), float(rng.choice([0.0625, 0.07, 0.1])))
    requests = [request(i, priority, *shape) for i in range(600)]  # more than the cell holds
    reference = one_by_one(cpu, memory, requests, cpu_used, placement=placement)
    batch = together(cpu, memory, requests, cpu_used, placement=placement)
    assert machines_of(batch) == machines_of(reference)
    assert len(batch.pending) == len(reference.pending) > 0


def test_a_whole_warm_start_stays_within_capacity_and_keeps_the_rest_pending():
    rng = np.random.default_rng(7)
    cpu, memory = random_cell(rng, 60)
    priorities = rng.choice([HIGH, NORMAL, 0.4, FREE, 0.05], 600)
    requests = [
        request(i, p, float(c), float(m))
        for i, (p, c, m) in enumerate(
            zip(priorities, rng.choice([0.02, 0.05, 0.1, 0.3], 600), rng.uniform(0, 0.2, 600))
        )
    ]
    policy = together(cpu, memory, requests)
    cluster = policy.cluster
    assert np.all(cluster.cpu_used <= cluster.cpu_capacity + 1e-12)
    assert np.all(cluster.memory_used <= cluster.memory_capacity + 1e-12)
    states = [task.state for task in policy.ledger.tasks.values()]
    assert states.count(TaskState.RUNNING) + states.count(TaskState.PENDING) == 600
    assert 0 < len(policy.pending) < 600
    # nothing evicted, and every task left pending fits on no machine as the cell stands
    assert not any(isinstance(d, Kill) for d in policy.decide(0.0))
    for task in policy.pending:
        r, above = task.request, task.request.priority > FREE_TIER
        fits = (cluster.free_cpu(above) >= r.cpu) & (cluster.free_memory(above) >= r.memory)
        assert not fits.any()


@pytest.mark.parametrize("free_tier_room", [False, True])
def test_levels_come_from_the_top_and_the_free_tier_last_within_capacity(free_tier_room):
    # one machine, lowest submitted first: the production task still gets the room
    requests = [
        request("free", FREE, 0.3),
        request("free2", FREE, 0.3),
        request("low", 0.3, 0.6),
        request("high", HIGH, 0.6),
    ]
    policy = together(np.ones(1), np.ones(1), requests, free_tier_room=free_tier_room)
    assert machines_of(policy) == {"w0!free": 0, "w0!free2": None, "w0!low": None, "w0!high": 0}
    assert policy.cluster.cpu_used[0] == pytest.approx(0.9)  # the free tier within the capacity


def test_a_task_left_pending_waits_for_room_instead_of_evicting():
    sim = FakeBatsim(CellPolicy(np.ones(1), np.ones(1), mechanics_config()))
    submit_all(sim, [request("low", 0.3, 0.5), request("low2", 0.3, 0.5), request("high", HIGH, 0.75)])
    assert set(sim.running) == {"w0!high"}  # the normal ones wait: nothing was evicted at time 0
    assert not sim.kills
    sim.complete("w0!high")  # the blocked group is tried again on the freed machine
    assert set(sim.running) == {"w0!low", "w0!low2"}
    assert not sim.kills


def test_a_user_kill_before_the_first_pass_rejects_the_task():
    policy = CellPolicy(np.ones(1), np.ones(1), mechanics_config())
    policy.job_submitted(0.0, request("a"))
    policy.user_kill(0.0, "w0!a")
    policy.decide(0.0)
    assert policy.ledger.tasks["w0!a"].outcome.value == "killed_by_user"


def test_tasks_of_a_cell_that_fits_them_all_all_start():
    cluster = Cluster(np.ones(4), np.ones(4))
    tasks = [Task(request(i, cpu=0.5, memory=0.1), f"w0!{i}") for i in range(8)]
    placed = []
    for task, machine in initial_placements(cluster, tasks, "best-fit", FREE_TIER):
        cluster.allocate(machine, task.request.cpu, task.request.memory)
        placed.append(machine)
    assert sorted(placed) == [0, 0, 1, 1, 2, 2, 3, 3]  # filled machine by machine, lowest id first
    assert placed == [0, 0, 1, 1, 2, 2, 3, 3]
