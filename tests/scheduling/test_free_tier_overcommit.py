"""The free tier's over-commit: free-tier tasks placed past the CPU capacity, up to the limit Borg
held, spread over the machines rather than packed."""

from __future__ import annotations

import numpy as np
import pytest
from fake_batsim import FakeBatsim
from test_initial_placement import (
    FREE,
    HIGH,
    NORMAL,
    machines_of,
    one_by_one,
    random_cell,
    request,
    submit_all,
    together,
)
from uncalibrated import mechanics_config

from batsim_google.errors import ParameterError
from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.placement import free_tier_spread
from batsim_google.scheduling.policy import FREE_TIER, CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig

LIMIT = 1.5


def test_the_default_is_borgs_99th_percentile_machine():
    assert PolicyConfig().free_tier_overcommit == 1.48
    with pytest.raises(ParameterError, match="free_tier_overcommit must be >= 1"):
        PolicyConfig(free_tier_overcommit=0.9)


def test_a_free_tier_task_goes_where_the_requests_fill_the_least_share_within_the_limit():
    cluster = Cluster(np.array([1.0, 0.5, 0.5, 1.0]), np.ones(4), free_tier_overcommit=LIMIT)
    for machine, cpu in enumerate([0.9, 0.3, 0.7, 1.4]):
        cluster.allocate(machine, cpu, 0.1)
    assert cluster.free_tier_cpu_room() == pytest.approx([0.6, 0.45, 0.05, 0.1])
    # with 0.1 of CPU and memory, the CPU shares are 1.0, 0.8, 1.6 (past 1.5: no) and 1.5
    assert free_tier_spread(cluster, 0.1, 0.1) == 1  # the least filled, not the tightest (best fit: 3)
    assert free_tier_spread(cluster, 0.5, 0.1) == 0  # past machine 1's limit (0.8 > 0.75)
    assert free_tier_spread(cluster, 0.7, 0.1) == -1  # past every machine's limit
    assert free_tier_spread(cluster, 0.1, 0.95) == -1  # memory is never over-committed
    assert free_tier_spread(cluster, 0.1, 0.1, np.array([0])) == 0  # among the machines given
    assert free_tier_spread(cluster, 0.1, 0.1, np.array([0, 3])) == 0
    assert free_tier_spread(cluster, 0.1, 0.1, np.array([], dtype=np.int64)) == -1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("machines", "tasks"), [(40, 600), (300, 100)])
def test_a_warm_start_group_of_the_free_tier_lands_where_one_by_one_puts_it(seed, machines, tasks):
    # 600 tasks: more than the cell holds; 100 on 300 machines: the heap holds a few machines
    # and grows as their shares pass the others'
    rng = np.random.default_rng(seed)
    cpu, memory = random_cell(rng, machines)
    cpu_used = rng.uniform(0, 1.2, machines) * cpu
    shape = (float(rng.choice([0.05, 0.1, 0.125])), float(rng.choice([0.0625, 0.07, 0.1])))
    requests = [request(i, FREE, *shape) for i in range(tasks)]
    reference = one_by_one(cpu, memory, requests, cpu_used, free_tier_overcommit=LIMIT)
    batch = together(cpu, memory, requests, cpu_used, free_tier_overcommit=LIMIT)
    assert machines_of(batch) == machines_of(reference)
    assert len(batch.pending) == len(reference.pending)
    assert (len(batch.pending) > 0) == (tasks > machines)
    assert np.all(batch.cluster.cpu_used <= LIMIT * cpu + 1e-12)


def warm_start(machines: int, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    """A cell of 0.5-CPU machines and a warm start as Borg's: the tiers above request 0.9 of its CPU
    and 0.7 of its memory, the free tier 0.25 and 0.15 more."""
    rng = np.random.default_rng(seed)
    cpu, memory = np.full(machines, 0.5), np.full(machines, 0.5)
    requests, total = [], 0.0
    while total < 0.9 * cpu.sum():
        c = float(rng.choice([0.0125, 0.025, 0.05, 0.1]))
        requests.append(request(len(requests), float(rng.choice([HIGH, NORMAL])), c, c * 0.78))
        total += c
    while total < 1.15 * cpu.sum():
        c = float(rng.choice([0.0125, 0.025, 0.05]))
        requests.append(request(len(requests), FREE, c, c * 0.6))
        total += c
    return cpu, memory, requests


def test_a_warm_start_past_the_capacity_starts_whole_with_the_free_tier_spread():
    cpu, memory, requests = warm_start(50, seed=3)
    within = together(cpu, memory, requests, free_tier_room=True)
    assert len(within.pending) > 0.1 * len(requests)  # within capacity, the free tier is left out
    policy = together(cpu, memory, requests, free_tier_room=True, free_tier_overcommit=1.48)
    cluster = policy.cluster
    assert not policy.pending
    assert np.all(cluster.cpu_used <= 1.48 * cpu + 1e-12)
    assert np.all(cluster.memory_used <= memory + 1e-12)
    # spread as Borg's: every machine holds free-tier tasks, and the machines' totals are even
    assert np.all(cluster.free_tier_cpu > 0)
    ratio = cluster.cpu_used / cpu
    assert ratio.max() - ratio.min() < 0.15
    # the tiers above were placed first, within the capacity, spread too: on every machine
    above = cluster.cpu_used - cluster.free_tier_cpu
    assert np.all(above <= cpu + 1e-12)
    assert np.all(above >= 0.7 * cpu)


def test_packing_the_free_tier_up_to_the_limit_would_stack_it():
    # the rule the spread replaces: best fit under the same limit leaves machines without free-tier tasks
    cpu, memory, requests = warm_start(50, seed=3)
    policy = together(cpu, memory, requests, free_tier_room=True, free_tier_overcommit=1.48)
    packed = Cluster(cpu * 1.48, memory)
    for task in sorted(policy.ledger.tasks.values(), key=lambda task: -task.request.priority):
        r = task.request
        room = packed.free_cpu() - r.cpu
        room[(packed.free_cpu() < r.cpu) | (packed.free_memory() < r.memory)] = np.inf
        packed.allocate(int(np.argmin(room)), r.cpu, r.memory, r.priority <= FREE_TIER)
    assert (packed.free_tier_cpu == 0).sum() > 5
    assert (policy.cluster.free_tier_cpu == 0).sum() == 0


def test_a_free_tier_task_arriving_on_a_full_cell_starts_past_the_capacity():
    sim = FakeBatsim(CellPolicy(np.full(2, 0.5), np.ones(2), mechanics_config(free_tier_overcommit=1.4)))
    sim.submit(request("a", NORMAL, 0.5, 0.1, running_at_start=False))
    sim.submit(request("b", NORMAL, 0.45, 0.1, running_at_start=False))
    sim.submit(request("free", FREE, 0.15, 0.1, running_at_start=False))
    assert sim.running["w0!free"] == 1  # machine 1 is the least filled: 0.6 / 0.5 against 0.65 / 0.5
    sim.submit(request("free2", FREE, 0.15, 0.1, running_at_start=False))
    assert sim.running["w0!free2"] == 0
    sim.submit(request("above", NORMAL, 0.1, 0.1, running_at_start=False))
    assert "w0!above" not in sim.running  # the tiers above stay within the capacity
    sim.submit(request("free3", FREE, 0.1, 0.1, running_at_start=False))
    assert "w0!free3" not in sim.running  # 0.75 + 0.1 passes 1.4 x 0.5 on both machines


def test_a_blocked_free_tier_group_is_tried_again_where_only_its_over_commit_has_room():
    # the pass retries a blocked group on a freed machine only where it may fit: the free tier's
    # room past the capacity counts, though a task above the free tier would not fit there
    config = mechanics_config(free_tier_room=True, free_tier_overcommit=1.5)
    sim = FakeBatsim(CellPolicy(np.ones(1), np.ones(1), config))
    sim.submit(request("above", NORMAL, 0.9, 0.1, running_at_start=False))
    sim.submit(request("free", FREE, 0.3, 0.1, running_at_start=False))
    sim.submit(request("free2", FREE, 0.2, 0.1, running_at_start=False))
    sim.submit(request("waits", FREE, 0.25, 0.1, running_at_start=False))
    assert set(sim.running) == {"w0!above", "w0!free", "w0!free2"}
    sim.complete("w0!free2")  # room for the free tier 0.3; for a task above it, 0.1
    assert "w0!waits" in sim.running


def test_a_free_tier_shape_is_not_blocked_by_a_larger_one_above_it_that_fits_nowhere():
    config = mechanics_config(free_tier_overcommit=1.5)
    sim = FakeBatsim(CellPolicy(np.ones(1), np.ones(1), config))
    sim.submit(request("above", NORMAL, 0.9, 0.1, running_at_start=False))
    # one pass: the larger free-tier shape comes after one above it that fits nowhere
    submit_all(sim, [request("big", NORMAL, 0.2, 0.1, False), request("free", FREE, 0.3, 0.1, False)])
    assert "w0!big" not in sim.running
    assert sim.running["w0!free"] == 0


@pytest.mark.parametrize(("energy", "machine"), [("always-on", 1), ("idle-sleep", 0)])
def test_with_idle_sleep_the_spread_keeps_to_machines_running_tasks(energy, machine):
    config = mechanics_config(free_tier_overcommit=1.5, energy=energy)
    sim = FakeBatsim(CellPolicy(np.ones(2), np.ones(2), config))
    sim.submit(request("above", NORMAL, 0.9, 0.1, running_at_start=False))
    sim.submit(request("free", FREE, 0.2, 0.1, running_at_start=False))
    # the idle machine is the least filled; with idle-sleep it is left to sleep
    assert sim.running["w0!free"] == machine


def test_a_free_tier_task_behind_a_blocked_head_of_its_shape_still_starts():
    # the same shape above the free tier fits nowhere; the free-tier task behind it fits past the capacity
    sim = FakeBatsim(CellPolicy(np.ones(1), np.ones(1), mechanics_config(free_tier_overcommit=1.5, preemption=False)))
    sim.submit(request("above", NORMAL, 0.9, 0.1, running_at_start=False))
    submit_all(sim, [request("big", NORMAL, 0.3, 0.1, False), request("free", FREE, 0.3, 0.1, False)])
    assert "w0!big" not in sim.running
    assert sim.running["w0!free"] == 0
