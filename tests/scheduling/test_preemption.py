"""Borg's preemption: a start that evicts waits the preemption delay; a task placed in the free
tier's room pays for it (``pay_for_room``); a replay's trace machines by load."""

from __future__ import annotations

import numpy as np
import pytest
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.decisions import Execute
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.preemption import Bursts, PreemptionWaits, room_overflow, victims_for_room
from batsim_google.scheduling.tasks import JobRequest, Task
from batsim_google.scheduling.trace_machines import assign_by_load

FREE, FREE_HIGH, NORMAL = 1 / 12, 2 / 12, 5 / 12


def job(job_id, priority=NORMAL, cpu=0.5, memory=0.25, work=1e6, machine=None):
    return JobRequest(f"w0!{job_id}", 0.0, "task", priority, cpu, memory, work, trace_machine=machine)


def cell(n=1, cpu=None, memory=None, **config) -> FakeBatsim:
    cpu = np.ones(n) if cpu is None else np.asarray(cpu, dtype=float)
    memory = np.ones(n) if memory is None else np.asarray(memory, dtype=float)
    return FakeBatsim(CellPolicy(cpu, memory, mechanics_config(**config)))


def submit_together(sim, requests) -> None:
    """Submit ``requests`` in one batch of events, as a replay's initial state comes."""
    for request in requests:
        sim.requests[request.job_id] = request
        sim.submitted.add(request.job_id)
        sim.policy.job_submitted(sim.now, request)
    sim.step()


def start_of(sim, job_id):
    return sim.policy.ledger.tasks[job_id].start_time


# ----- the preemption delay --------------------------------------------------------------------


def test_a_task_that_must_evict_waits_the_delay_then_evicts_and_starts():
    sim = cell(1, preemption_delay=27.0, restart="none")
    sim.submit(job("low", priority=FREE, cpu=1.0, memory=1.0))
    sim.now = 5.0
    sim.submit(job("high", cpu=1.0, memory=1.0))
    assert "w0!low" in sim.running and "w0!high" not in sim.running  # nothing evicted yet
    assert 32.0 in sim.wakeups
    sim.advance(31.9)
    assert "w0!low" in sim.running
    sim.advance(32.0)
    assert "w0!high" in sim.running and "w0!low" not in sim.running
    assert start_of(sim, "w0!high") == 32.0
    assert sim.kills[0][0] == ("w0!low",)  # the eviction comes with the start, as in the trace


def test_a_task_that_fits_without_evicting_is_not_delayed():
    sim = cell(2, preemption_delay=27.0)
    sim.submit(job("low", priority=FREE, cpu=1.0, memory=1.0))
    sim.now = 5.0
    sim.submit(job("high", cpu=1.0, memory=1.0))
    assert start_of(sim, "w0!high") == 5.0 and "w0!low" in sim.running


def test_a_held_task_that_finds_room_meanwhile_starts_without_evicting():
    sim = cell(1, preemption_delay=20.0)
    sim.submit(job("low", priority=FREE, cpu=1.0, memory=1.0, work=10.0))
    sim.submit(job("high", cpu=1.0, memory=1.0))
    sim.complete("w0!low")  # ends by itself while "high" waits
    assert "w0!high" not in sim.running  # still held: the delay is Borg's, not the room's
    sim.advance(20.0)
    assert start_of(sim, "w0!high") == 20.0 and not sim.kills


def test_a_burst_that_must_preempt_waits_the_delay_together_and_keeps_its_queue_order():
    # 4 machines full of free-tier tasks, one free machine; a job of 5 tasks arrives
    sim = cell(5, preemption_delay=27.0, restart="none")
    for i in range(4):
        sim.submit(job(f"free{i}", priority=FREE, cpu=1.0, memory=1.0))
    sim.now = 100.0
    for i in range(5):
        sim.submit(job(f"big{i}", cpu=1.0, memory=1.0))
    assert [start_of(sim, f"w0!big{i}") for i in range(5)] == [100.0, None, None, None, None]
    sim.advance(127.0)
    assert [start_of(sim, f"w0!big{i}") for i in range(5)] == [100.0] + [127.0] * 4
    assert not any(job_id.startswith("w0!free") for job_id in sim.running)


def test_a_user_kill_of_a_held_task_rejects_it_and_the_delay_ends_on_nothing():
    sim = cell(1, preemption_delay=27.0)
    sim.submit(job("low", priority=FREE, cpu=1.0, memory=1.0))
    sim.submit(job("high", cpu=1.0, memory=1.0))
    sim.policy.user_kill(sim.now, "w0!high")
    sim.step()
    assert sim.policy.ledger.tasks["w0!high"].outcome.value == "killed_by_user"
    sim.advance(30.0)
    assert "w0!low" in sim.running and not sim.kills


def test_a_held_task_is_censored_at_the_horizon():
    sim = cell(1, preemption_delay=27.0, horizon=10.0)
    sim.submit(job("low", priority=FREE, cpu=1.0, memory=1.0))
    sim.submit(job("high", cpu=1.0, memory=1.0))
    sim.advance(10.0)
    task = sim.policy.ledger.tasks["w0!high"]
    assert task.outcome.value == "censored" and task.start_time is None


def test_preemption_waits_hold_in_time_order_and_clear_once():
    waits = PreemptionWaits(10.0)
    first, second = (Task(job(name), f"w0!{name}") for name in ("a", "b"))
    assert waits.must_wait(first)
    assert waits.hold(second, 3.0, 1.0) == 13.0
    assert waits.hold(first, 0.0, 0.5) == 10.0
    assert waits.ready(9.9) == []
    assert waits.ready(13.0) == [(first, 0.5), (second, 1.0)]
    assert not waits.must_wait(first)  # waited: may evict now
    waits.started(first)
    assert waits.must_wait(first)  # a later attempt waits again
    assert not PreemptionWaits(0.0).must_wait(first)


# ----- the preemption delay's law ----------------------------------------------------------------

SPREAD = 5.1  # the logistic scale fitted on the trace (bench/borg_bursts.py)


def test_a_spread_delay_draws_each_tasks_from_the_logistic_law_seeded():
    waits = PreemptionWaits(26.0, SPREAD, np.random.default_rng(7))
    delays = np.array([waits.draw() for _ in range(20_000)])
    again = PreemptionWaits(26.0, SPREAD, np.random.default_rng(7))
    assert [again.draw() for _ in range(5)] == delays[:5].tolist()  # seeded
    assert delays.min() >= 0.0
    assert np.median(delays) == pytest.approx(26.0, abs=0.25)
    # the logistic's interquartile range is 2 ln 3 times its scale (11.2 s); its tail past 45 s
    # holds 2.3 %, where a normal law of that median and range holds 1.1 %, a constant none
    q25, q75 = np.percentile(delays, [25, 75])
    assert q75 - q25 == pytest.approx(2 * np.log(3) * SPREAD, rel=0.04)
    assert (delays > 45.0).mean() == pytest.approx(1 / (1 + np.exp(19.0 / SPREAD)), abs=0.004)


def test_a_spread_needs_a_generator_and_no_spread_is_the_constant():
    with pytest.raises(ValueError, match="random generator"):
        PreemptionWaits(26.0, SPREAD)
    assert PreemptionWaits(26.0).draw() == 26.0
    assert not PreemptionWaits(0.0, SPREAD, np.random.default_rng(1)).must_wait(Task(job("a"), "w0!a"))


def test_a_burst_that_must_preempt_starts_over_the_laws_spread_in_its_draws_order():
    # the burst of the test above, with the spread: each held task starts at its own draw
    sim = cell(5, preemption_delay=27.0, preemption_delay_spread=SPREAD, restart="none", reclaim_seed=3)
    for i in range(4):
        sim.submit(job(f"free{i}", priority=FREE, cpu=1.0, memory=1.0))
    sim.now = 100.0
    for i in range(5):
        sim.submit(job(f"big{i}", cpu=1.0, memory=1.0))
    sim.advance(300.0)
    draws = np.maximum(np.random.default_rng([3, 4]).logistic(27.0, SPREAD, 4), 0.0)
    starts = [start_of(sim, f"w0!big{i}") for i in range(5)]
    assert starts[0] == 100.0 and starts[1:] == pytest.approx((100.0 + draws).tolist())
    assert len(set(starts[1:])) == 4  # a wave, not one instant
    assert not any(job_id.startswith("w0!free") for job_id in sim.running)


def test_a_big_waves_starts_follow_the_law():
    # 400 tasks that must each evict one free-tier task: their starts, less the submission, are the
    # delay's law (median 26 s, interquartile range 11.2 s), not the constant
    sim = cell(400, preemption_delay=26.0, preemption_delay_spread=SPREAD, restart="none")
    submit_together(sim, [job(f"free{i}", priority=FREE, cpu=1.0, memory=1.0) for i in range(400)])
    sim.now = 10.0
    submit_together(sim, [job(f"big{i}", cpu=1.0, memory=1.0) for i in range(400)])
    sim.advance(200.0)
    waits = np.array([start_of(sim, f"w0!big{i}") for i in range(400)]) - 10.0
    assert np.median(waits) == pytest.approx(26.0, abs=1.5)
    q25, q75 = np.percentile(waits, [25, 75])
    assert q75 - q25 == pytest.approx(2 * np.log(3) * SPREAD, rel=0.2)


# ----- paying for the free tier's room ---------------------------------------------------------


def test_a_task_above_the_free_tier_takes_room_without_evicting_before_the_free_tiers():
    # machine 0: free tier 0.7 and normal 0.25; machine 1: normal 0.1. In the free tier's room,
    # best fit is machine 0 (0.3 left against 0.45); without evicting, only machine 1 fits.
    def loaded(pay: bool) -> FakeBatsim:
        sim = cell(2, free_tier_room=True, pay_for_room=pay)
        sim.submit(job("free", priority=FREE, cpu=0.7, memory=0.1, machine=10))
        sim.submit(job("busy", cpu=0.25, memory=0.0, machine=10))
        sim.submit(job("light", cpu=0.1, memory=0.1, machine=11))
        sim.submit(job("new", cpu=0.45, memory=0.1))
        return sim

    assert loaded(pay=False).policy.by_job["w0!new"].machine == 0
    paying = loaded(pay=True)
    assert paying.policy.by_job["w0!new"].machine == 1 and not paying.kills


def test_a_task_in_the_free_tiers_room_evicts_until_the_machine_is_within_capacity():
    sim = cell(1, free_tier_room=True, pay_for_room=True, restart="none")
    for i in range(4):  # 0.8 of CPU in four free-tier tasks
        sim.submit(job(f"free{i}", priority=FREE, cpu=0.2, memory=0.1))
    sim.submit(job("new", cpu=0.5, memory=0.1))  # passes the capacity by 0.3: two must go
    assert "w0!new" in sim.running
    evicted = [t for t in sim.policy.ledger.tasks.values() if t.outcome is not None]
    assert len(evicted) == 2
    assert sim.policy.cluster.cpu_used[0] == pytest.approx(0.9)


def test_without_pay_for_room_the_free_tiers_room_is_taken_without_evicting():
    sim = cell(1, free_tier_room=True, pay_for_room=False)
    for i in range(4):
        sim.submit(job(f"free{i}", priority=FREE, cpu=0.2, memory=0.1))
    sim.submit(job("new", cpu=0.5, memory=0.1))
    assert len(sim.running) == 5 and not sim.kills
    assert sim.policy.cluster.cpu_used[0] == pytest.approx(1.3)


def test_paying_for_room_waits_the_preemption_delay():
    sim = cell(1, free_tier_room=True, pay_for_room=True, preemption_delay=27.0, restart="none")
    sim.submit(job("free", priority=FREE, cpu=0.6, memory=0.1))
    sim.submit(job("new", cpu=0.5, memory=0.1))
    assert "w0!new" not in sim.running and "w0!free" in sim.running
    sim.advance(27.0)
    assert start_of(sim, "w0!new") == 27.0 and "w0!free" not in sim.running


def test_room_overflow_counts_from_the_capacity_or_from_what_the_machine_already_holds():
    cluster = Cluster(np.array([1.0, 1.0]), np.array([0.5, 0.5]))
    cluster.allocate(0, 0.7, 0.2)
    cluster.allocate(1, 1.3, 0.6)  # a replay's running tasks, past the capacity
    assert room_overflow(cluster, 0, 0.2, 0.1) == (0.0, 0.0)
    assert room_overflow(cluster, 0, 0.5, 0.4) == pytest.approx((0.2, 0.1))
    assert room_overflow(cluster, 1, 0.1, 0.05) == pytest.approx((0.1, 0.05))  # pays for all of it


def test_victims_are_the_lowest_priority_first_in_a_seeded_order_not_by_age():
    def tasks():
        out = []
        for i, priority in enumerate([FREE_HIGH, FREE, FREE, FREE, FREE]):
            task = Task(job(f"t{i}", priority=priority, cpu=0.1, memory=0.1), f"w0!t{i}")
            task.start_time = float(i)
            out.append(task)
        return out

    candidates = tasks()
    chosen = victims_for_room(candidates, 0.25, 0.0, np.random.default_rng(1))
    assert len(chosen) == 3 and all(task.request.priority == FREE for task in chosen)
    ages = {
        tuple(t.task_id for t in victims_for_room(tasks(), 0.15, 0.0, np.random.default_rng(seed)))
        for seed in range(20)
    }
    assert len(ages) > 3  # not always the youngest (or oldest): Borg's choice ignored age
    everything = victims_for_room(candidates, 10.0, 10.0, np.random.default_rng(1))
    assert everything[-1].request.priority == FREE_HIGH  # the higher free-tier priority goes last
    assert victims_for_room(candidates, 0.0, 0.0, np.random.default_rng(1)) == []


# ----- trace machines by load ------------------------------------------------------------------


def test_trace_machines_by_load_give_the_most_loaded_the_largest_machines():
    sim = cell(3, cpu=[0.5, 1.0, 0.25], memory=[0.5, 1.0, 0.25], machines_by_load=True)
    loads = [("a", 7, 0.1), ("b", 8, 0.7), ("c", 9, 0.3), ("d", 7, 0.05)]
    submit_together(sim, [job(name, cpu=0.01, memory=memory, machine=machine) for name, machine, memory in loads])
    machine_of = {name: sim.policy.by_job[f"w0!{name}"].machine for name in "abcd"}
    assert machine_of == {"b": 1, "c": 0, "a": 2, "d": 2}


def test_trace_machines_in_order_without_machines_by_load():
    sim = cell(3, cpu=[0.5, 1.0, 0.25], memory=[0.5, 1.0, 0.25], machines_by_load=False)
    loads = [("a", 7, 0.1), ("b", 8, 0.7), ("c", 9, 0.3)]
    submit_together(sim, [job(name, cpu=0.01, memory=memory, machine=machine) for name, machine, memory in loads])
    assert [sim.policy.by_job[f"w0!{name}"].machine for name in "abc"] == [0, 1, 2]


def test_assign_by_load_keeps_earlier_machines_and_wraps_past_the_cell():
    cluster = Cluster(np.array([1.0, 0.5]), np.array([1.0, 0.5]))
    assigned = {100: 0}
    tasks = [Task(job(f"t{i}", memory=0.1 * (i + 1), machine=200 + i), f"w0!t{i}") for i in range(2)]
    assign_by_load(assigned, tasks + [Task(job("old", memory=0.9, machine=100), "w0!old")], cluster)
    assert assigned[100] == 0  # kept
    assert assigned[201] == 1  # the most loaded new one gets the largest machine left
    assert assigned[200] == 0  # past the cell's machines: the third seen wraps to machine 2 % 2


# ----- large tasks preempt -----------------------------------------------------------------------


def test_a_large_task_beside_the_free_tier_preempts_after_the_delay_freeing_its_memory():
    sim = cell(1, preempt_share=1.0, preempt_memory=0.05, preemption_delay=27.0, restart="none")
    for i in range(5):
        sim.submit(job(f"free{i}", priority=FREE, cpu=0.1, memory=0.04))
    sim.submit(job("large", cpu=0.1, memory=0.1))
    assert "w0!large" not in sim.running  # room enough, yet it preempts, as Borg did
    sim.advance(27.0)
    assert start_of(sim, "w0!large") == 27.0
    evicted = [t for t in sim.policy.ledger.tasks.values() if t.outcome is not None]
    assert len(evicted) == 3  # 3 x 0.04 frees its 0.1 of memory


def test_small_tasks_and_free_tier_tasks_never_preempt_by_size():
    sim = cell(1, preempt_share=1.0, preempt_memory=0.05, preemption_delay=27.0)
    sim.submit(job("free", priority=FREE, cpu=0.1, memory=0.04))
    sim.submit(job("small", cpu=0.1, memory=0.05))  # not above the threshold
    sim.submit(job("free2", priority=FREE_HIGH, cpu=0.1, memory=0.2))  # in the free tier itself
    sim.submit(job("large", cpu=0.1, memory=0.1))
    assert set(sim.running) == {"w0!free", "w0!small", "w0!free2"} and not sim.kills  # "large" waits
    sim.advance(27.0)
    assert sim.kills == [(("w0!free", "w0!free2"), [Execute("w0!large", 0)])]  # the lowest first


def test_large_tasks_preempt_at_the_share_asked():
    # 400 machines, each 0.85 of memory in a free-tier task: one large task fits beside each
    machines, tasks = 400, 200
    sim = cell(machines, preempt_share=0.54, preempt_memory=0.05, reclaim_seed=3, restart="none")
    for i in range(machines):
        sim.submit(job(f"free{i}", priority=FREE, cpu=0.1, memory=0.85, machine=i))
    for i in range(tasks):
        sim.submit(job(f"large{i}", cpu=0.01, memory=0.1))
    evicted = sum(1 for t in sim.policy.ledger.tasks.values() if t.outcome is not None)
    assert len([j for j in sim.running if j.startswith("w0!large")]) == tasks
    assert 0.54 - 0.1 < evicted / tasks < 0.54 + 0.1  # 0.25 or 1 is far off


# ----- the free tier's upper priority preempts its lower -------------------------------------


def test_the_free_tiers_upper_priority_beside_its_lower_waits_then_evicts_it_freeing_its_memory():
    sim = cell(1, free_tier_preempt_share_alone=1.0, preemption_delay=26.0, restart="none")
    for i in range(4):
        sim.submit(job(f"low{i}", priority=FREE, cpu=0.01, memory=0.04))
    sim.submit(job("peer", priority=FREE_HIGH, cpu=0.01, memory=0.04))
    assert "w0!peer" not in sim.running  # room enough, yet it preempts the priority 0 beside it
    sim.advance(26.0)
    assert start_of(sim, "w0!peer") == 26.0
    (killed, _), *_ = sim.kills
    assert len(killed) == 1 and killed[0].startswith("w0!low")  # one of 0.04 frees its 0.04
    sim.submit(job("upper", priority=FREE_HIGH, cpu=0.01, memory=0.1))
    sim.advance(52.0)
    evicted = {t.task_id for t in sim.policy.ledger.tasks.values() if t.outcome is not None}
    assert "w0!peer" not in evicted and len(evicted) == 4  # never its own level: the 3 left of priority 0


def test_the_free_tiers_lower_priority_and_tasks_above_it_never_preempt_by_this_share():
    shares = {"free_tier_preempt_share": 1.0, "free_tier_preempt_share_cpu": 1.0, "free_tier_preempt_share_alone": 1.0}
    sim = cell(1, **shares, preemption_delay=26.0)
    sim.submit(job("low", priority=FREE, cpu=0.01, memory=0.04))
    sim.submit(job("low2", priority=FREE, cpu=0.01, memory=0.04))  # nothing lower than it
    sim.submit(job("normal", cpu=0.01, memory=0.2))  # above the free tier: the large tasks' rule
    assert set(sim.running) == {"w0!low", "w0!low2", "w0!normal"} and not sim.kills


@pytest.mark.parametrize(
    ("tasks", "cpu", "memory", "preempts"),
    [(2, 0.01, 0.04, True), (2, 0.04, 0.04, False), (2, 0.1, 0.04, False), (1, 0.01, 0.04, False)],
)
def test_a_burst_asking_more_memory_than_cpu_preempts_at_its_own_share(tasks, cpu, memory, preempts):
    shares = {"free_tier_preempt_share": 1.0, "free_tier_preempt_share_cpu": 0.0, "free_tier_preempt_share_alone": 0.0}
    sim = cell(1, **shares, preemption_delay=26.0)
    sim.submit(job("low", priority=FREE, cpu=0.01, memory=0.5))
    submit_together(sim, [job(f"upper{i}", priority=FREE_HIGH, cpu=cpu, memory=memory) for i in range(tasks)])
    assert ("w0!upper0" not in sim.running) is preempts


def test_a_burst_is_one_shape_submitted_within_a_second_of_its_first_task():
    bursts = Bursts()
    tasks = [
        Task(job(name, priority=FREE_HIGH, cpu=cpu, memory=0.02), f"w0!{name}")
        for name, cpu in (("a", 0.01), ("b", 0.01), ("c", 0.02), ("d", 0.01))
    ]
    for task, now in zip(tasks, (10.0, 10.9, 10.9, 11.5), strict=True):
        bursts.submitted(task, now)
    a, b, c, d = tasks
    assert bursts.in_burst(a) and bursts.in_burst(b)  # a's burst grew with b
    assert not bursts.in_burst(c)  # another shape
    assert not bursts.in_burst(d)  # 1.5 s after a: a burst of its own
    bursts.forget(a)
    assert not bursts.in_burst(a)


def test_a_held_task_of_the_free_tier_is_placed_where_it_can_preempt():
    # both held on machine 0, the tightest; the first to start evicts all the priority 0 there, and
    # machine 0 stays the tightest: the second goes to machine 1, where priority 0 runs
    sim = cell(3, free_tier_preempt_share=1.0, preemption_delay=26.0, restart="none")
    sim.submit(job("low0", priority=FREE, cpu=0.01, memory=0.6, machine=0))
    sim.submit(job("low1", priority=FREE, cpu=0.01, memory=0.05, machine=1))
    submit_together(sim, [job(name, priority=FREE_HIGH, cpu=0.01, memory=0.1) for name in "ab"])
    assert not sim.kills
    sim.advance(26.0)
    assert sim.running["w0!a"] == 0 and sim.running["w0!b"] == 1
    assert {t.task_id for t in sim.policy.ledger.tasks.values() if t.outcome is not None} == {"w0!low0", "w0!low1"}


def test_the_free_tiers_upper_priority_preempts_at_the_share_asked():
    # 400 machines, each holding a priority-0 task: each priority-1 task fits beside one
    machines, tasks = 400, 300
    sim = cell(machines, free_tier_preempt_share=0.8, reclaim_seed=5, restart="none")
    for i in range(machines):
        sim.submit(job(f"low{i}", priority=FREE, cpu=0.1, memory=0.5, machine=i))
    for i in range(tasks):
        sim.submit(job(f"upper{i}", priority=FREE_HIGH, cpu=0.01, memory=0.02))
    evicted = sum(1 for t in sim.policy.ledger.tasks.values() if t.outcome is not None)
    assert len([j for j in sim.running if j.startswith("w0!upper")]) == tasks
    assert 0.8 - 0.08 < evicted / tasks < 0.8 + 0.08  # every one (1) or none (0) is far off
