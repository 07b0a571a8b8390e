"""A replay's tasks running at its start stay on the trace's machine (``trace_machine``)."""

from __future__ import annotations

import numpy as np
import pytest
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.tasks import JobRequest


def job(job_id, machine=None, priority=0.5, cpu=0.5, memory=0.25, work=100.0):
    return JobRequest(f"w0!{job_id}", 0.0, "task", priority, cpu, memory, work, trace_machine=machine)


def cell(n=3, **config) -> FakeBatsim:
    return FakeBatsim(CellPolicy(np.ones(n), np.ones(n), mechanics_config(**config)))


def test_tasks_of_one_trace_machine_share_a_machine_even_past_its_capacity():
    sim = cell()
    for i, machine in enumerate([9001, 42, 9001, 9001, 7]):
        sim.submit(job(i, machine))
    machines = {job_id: sim.policy.by_job[job_id].machine for job_id in sim.running}
    # trace machines in order of appearance: 9001 -> 0, 42 -> 1, 7 -> 2
    assert machines == {"w0!0": 0, "w0!1": 1, "w0!2": 0, "w0!3": 0, "w0!4": 2}
    assert sim.policy.cluster.cpu_used[0] == 1.5  # three halves on one machine, as in the trace
    sim.submit(job("free"))  # a task placed freely finds the room left
    assert sim.policy.by_job["w0!free"].machine in (1, 2)


def test_more_trace_machines_than_machines_wrap_around():
    sim = cell(2)
    for i, machine in enumerate([5, 6, 8]):
        sim.submit(job(i, machine, cpu=0.1))
    assert [sim.policy.by_job[f"w0!{i}"].machine for i in range(3)] == [0, 1, 0]


def test_an_evicted_pinned_task_is_placed_freely_when_it_restarts():
    sim = cell(2)
    sim.submit(job("low", 11, priority=0.1, cpu=1.0, memory=1.0))
    sim.submit(job("filler", 12, priority=0.9, cpu=1.0, memory=1.0))
    sim.now = 10.0
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))
    assert "w0!high" in sim.running and "w0!low" not in sim.running
    task = sim.policy.ledger.tasks["w0!low"]
    assert task.restarts == 1 and task.job_id != "w0!low"  # resubmitted, queued like any task


def test_a_pinned_task_whose_machine_is_down_joins_the_queue():
    sim = cell(2)
    sim.policy.machines_unavailable(0.0, [0])
    sim.submit(job("a", 77))
    assert sim.policy.by_job["w0!a"].machine == 1


def test_a_placement_latency_delays_every_queued_task_by_as_much():
    sim = cell(1, placement_latency=2.5)
    sim.submit(job("a", cpu=0.5))
    assert "w0!a" not in sim.running and sim.wakeups == [2.5]
    sim.now = 1.0
    sim.submit(job("b", cpu=0.5))
    sim.advance(2.5)
    assert list(sim.running) == ["w0!a"]
    sim.advance(3.5)
    assert set(sim.running) == {"w0!a", "w0!b"}
    assert sim.policy.by_job["w0!b"].start_time == 3.5


def test_pinned_tasks_start_at_once_whatever_the_latency():
    sim = cell(1, placement_latency=10.0)
    sim.submit(job("a", 5))
    assert list(sim.running) == ["w0!a"]


def test_tasks_within_their_latency_at_the_horizon_are_censored():
    sim = cell(1, placement_latency=10.0, horizon=5.0)
    sim.submit(job("a"))
    sim.advance(5.0)
    task = sim.policy.ledger.tasks["w0!a"]
    assert task.outcome.value == "censored" and "w0!a" in sim.done


def test_reclaim_evicts_free_tier_tasks_at_the_rate_asked_and_only_them():
    sim = cell(200, reclaim_rate=1000.0, reclaim_seed=3)  # one eviction per running hour
    for i in range(100):
        sim.submit(job(f"free{i}", priority=1 / 12, cpu=0.1, memory=0.1, work=1e9))
        sim.submit(job(f"normal{i}", priority=5 / 12, cpu=0.1, memory=0.1, work=1e9))
    sim.advance(1800.0)
    evicted = [task for task in sim.policy.ledger.tasks.values() if task.restarts]
    assert all(task.task_id.startswith("w0!free") for task in evicted)
    # 100 tasks x half an hour at one per hour: Poisson(50) evictions, first ones only counted
    first = {task.task_id for task in evicted}
    assert 30 <= len(first) <= 48  # 1 - e^-0.5 = 39 % of 100 tasks evicted at least once


def test_reclaim_draws_are_reproducible_by_seed():
    def evicted(seed):
        sim = cell(20, reclaim_rate=2000.0, reclaim_seed=seed)
        for i in range(20):
            sim.submit(job(i, priority=1 / 12, cpu=0.1, memory=0.1, work=1e9))
        sim.advance(3600.0)
        return sorted(task.task_id for task in sim.policy.ledger.tasks.values() if task.restarts)

    assert evicted(1) == evicted(1) != evicted(2)


def test_reclaim_on_placement_evicts_free_tier_tasks_of_the_chosen_machine_at_the_mean_asked():
    # one machine of room 1: 8 free-tier tasks pinned there, then 400 normal ones placed one by one
    sim = cell(1, reclaim_on_placement=0.25, reclaim_seed=5, restart="none")
    for i in range(8):
        sim.submit(job(f"free{i}", 7, priority=1 / 12, cpu=0.01, memory=0.01, work=1e9))
    evicted_by_pinned = [task for task in sim.policy.ledger.tasks.values() if task.outcome is not None]
    assert not evicted_by_pinned  # tasks kept on their trace machine trigger nothing
    placements = 0
    for i in range(400):
        sim.submit(job(f"normal{i}", priority=5 / 12, cpu=0.001, memory=0.001, work=1.0))
        placements += 1
        sim.advance(sim.now + 2.0)
        if not any(task_id.startswith("w0!free") for task_id in sim.running):
            break
    ended = [task for task in sim.policy.ledger.tasks.values() if task.outcome is not None]
    assert all(task.task_id.startswith("w0!free") for task in ended if task.outcome.value == "not_restarted")
    assert {task.task_id for task in ended if task.outcome.value == "not_restarted"} == {
        f"w0!free{i}" for i in range(8)
    }
    # 8 evictions at 0.25 per placement: about 32 placements (a mean of 0.1 or 1 is far off)
    assert 12 <= placements <= 70


def test_reclaim_on_placement_spares_other_machines_and_is_off_at_0():
    sim = cell(2, reclaim_on_placement=50.0)
    sim.submit(job("free", 7, priority=1 / 12, cpu=0.1))
    sim.submit(job("other", 8, priority=1 / 12, cpu=0.9))  # machine 1 full
    sim.submit(job("normal", priority=5 / 12, cpu=0.5))  # fits on machine 0 only
    assert sim.policy.by_job["w0!normal"].machine == 0
    assert "w0!free" not in sim.running and "w0!other" in sim.running
    quiet = cell(1)
    quiet.submit(job("free", 7, priority=1 / 12, cpu=0.1))
    quiet.submit(job("normal", priority=5 / 12, cpu=0.1))
    assert set(quiet.running) == {"w0!free", "w0!normal"}


def test_normal_and_production_tasks_are_evicted_at_their_own_rates():
    sim = cell(300, eviction_rate_normal=1000.0, eviction_rate_production=4000.0, reclaim_seed=3)
    for i in range(100):
        sim.submit(job(f"normal{i}", priority=9 / 12, cpu=0.1, memory=0.1, work=1e9))  # Google 8
        sim.submit(job(f"production{i}", priority=10 / 12, cpu=0.1, memory=0.1, work=1e9))  # Google 9
        sim.submit(job(f"monitoring{i}", priority=11 / 12, cpu=0.1, memory=0.1, work=1e9))  # Google 10
    sim.advance(1800.0)
    first = {task.task_id for task in sim.policy.ledger.tasks.values() if task.restarts}
    normal = sum(task_id.startswith("w0!normal") for task_id in first)
    production = sum(task_id.startswith("w0!production") for task_id in first)
    assert not any(task_id.startswith("w0!monitoring") for task_id in first)
    assert 30 <= normal <= 48  # 1 - e^-0.5 = 39 % of 100 tasks evicted at least once in half an hour
    assert 80 <= production <= 92  # 1 - e^-2 = 86 %


def test_the_groups_eviction_draws_leave_the_free_tiers_as_they_were():
    def free_evicted(**rates):
        sim = cell(40, reclaim_rate=2000.0, reclaim_seed=4, **rates)
        for i in range(20):
            sim.submit(job(f"free{i}", priority=1 / 12, cpu=0.1, memory=0.1, work=1e9))
            sim.submit(job(f"normal{i}", priority=5 / 12, cpu=0.1, memory=0.1, work=1e9))
        sim.advance(3600.0)
        return sorted(t.task_id for t in sim.policy.ledger.tasks.values() if t.restarts and "free" in t.task_id)

    assert free_evicted() == free_evicted(eviction_rate_normal=3000.0) != []


def test_free_tier_room_places_higher_priorities_past_the_free_tiers_requests_only():
    # machine 0 holds 0.9 of free-tier requests, machine 1 0.8 of normal ones
    def loaded(**config) -> FakeBatsim:
        sim = cell(2, preemption=False, **config)
        sim.submit(job("free", 7, priority=1 / 12, cpu=0.9, memory=0.1))
        sim.submit(job("busy", 8, priority=5 / 12, cpu=0.8, memory=0.1))
        sim.submit(job("normal", priority=5 / 12, cpu=0.3))
        return sim

    assert "w0!normal" not in loaded().running  # no room within capacity
    borg = loaded(free_tier_room=True)
    assert borg.policy.by_job["w0!normal"].machine == 0  # the free tier's requests count as room
    assert borg.policy.cluster.cpu_used[0] == 1.2  # past the capacity, by the free tier's requests
    assert "w0!free" in borg.running  # nothing evicted (reclaim_on_placement 0)
    borg.submit(job("normal2", priority=5 / 12, cpu=0.75))  # 0.7 above the free tier on 0, 0.2 on 1
    assert "w0!normal2" not in borg.running
    borg.submit(job("free2", priority=1 / 12, cpu=0.15))  # the free tier sees only the real room
    assert borg.policy.by_job["w0!free2"].machine == 1
    borg.complete("w0!free")  # its room goes back to both views
    cluster = borg.policy.cluster
    assert cluster.free_tier_cpu[0] == 0
    assert cluster.free_cpu()[0] == cluster.free_cpu(above_free_tier=True)[0] == pytest.approx(0.7)


def test_tasks_of_the_initial_state_are_placed_without_the_placement_latency():
    sim = cell(2, placement_latency=2.0, restart="immediate")
    initial = JobRequest("w0!initial", 0.0, "task", 0.1, 0.5, 0.25, 100.0, initial=True)
    sim.submit(initial)
    sim.submit(job("new", priority=0.1))
    assert set(sim.running) == {"w0!initial"}  # the new task waits out Borg's delay
    sim.advance(2.0)
    assert set(sim.running) == {"w0!initial", "w0!new"}
    sim.policy.machines_unavailable(sim.now, [sim.running["w0!initial"]])
    sim.step()
    resubmitted = sim.policy.ledger.tasks["w0!initial"].job_id
    assert resubmitted not in sim.running  # restarted, it waits like any task
    sim.advance(4.5)
    assert resubmitted in sim.running
