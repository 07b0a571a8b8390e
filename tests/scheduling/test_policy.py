"""The Google-cell policy core, without Batsim: placement, priorities, eviction, restarts, kills,
failures, power and the end of the simulation."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.decisions import Kill, RegistrationFinished, Reject
from batsim_google.scheduling.placement import best_fit, first_fit
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.tasks import JobRequest, Outcome, TaskState


def job(job_id, priority=0.5, cpu=0.25, memory=0.25, kind="task", work=100.0, subtime=0.0):
    return JobRequest(f"w0!{job_id}", subtime, kind, priority, cpu, memory, work)


def cell(n=2, cpu=1.0, memory=1.0, **config) -> FakeBatsim:
    return FakeBatsim(CellPolicy(np.full(n, cpu), np.full(n, memory), mechanics_config(**config)))


def test_placements():
    cluster = Cluster(np.array([0.5, 1.0, 1.0]), np.array([0.5, 1.0, 0.5]))
    cluster.allocate(1, 0.5, 0.25)
    assert first_fit(cluster, 0.5, 0.5) == 0
    assert best_fit(cluster, 0.5, 0.5) == 0  # leaves 0 free there
    assert best_fit(cluster, 0.5, 0.6) == 1  # only machine 1 has the memory
    assert first_fit(cluster, 0.6, 0.8) == -1
    cluster.set_available(1, False)
    assert best_fit(cluster, 0.5, 0.6) == -1


def test_memory_is_never_overcommitted_cpu_may_be():
    sim = cell(1, memory=1.0, cpu_overcommit=2.0, preemption=False)
    for i in range(4):
        sim.submit(job(i, cpu=0.5, memory=0.3))
    assert len(sim.running) == 3  # memory: 3 x 0.3 <= 1 < 4 x 0.3
    sim2 = cell(1, preemption=False)
    for i in range(3):
        sim2.submit(job(i, cpu=0.5, memory=0.1))
    assert len(sim2.running) == 2  # CPU without over-commit


def test_pending_tasks_are_served_by_priority_then_arrival():
    sim = cell(1, preemption=False)
    sim.submit(job("big", cpu=1.0, memory=1.0, priority=0.1))
    for name, priority in [("a", 0.2), ("b", 0.9), ("c", 0.9), ("d", 0.5)]:
        sim.now += 1
        sim.submit(job(name, cpu=1.0, memory=1.0, priority=priority))
    order = []
    while sim.running:
        (running,) = sim.running
        order.append(running)
        sim.now += 10
        sim.complete(running)
    assert order == ["w0!big", "w0!b", "w0!c", "w0!d", "w0!a"]


def test_a_task_larger_than_every_machine_is_rejected():
    sim = cell(2, cpu=0.5)
    sim.submit(job("huge", cpu=0.75))
    task = sim.policy.ledger.tasks["w0!huge"]
    assert task.outcome is Outcome.REJECTED and "larger than every machine" in task.note
    assert "w0!huge" in sim.done


def test_eviction_of_lower_priorities_only_and_resubmission():
    sim = cell(1)
    sim.submit(job("low1", priority=0.1, cpu=0.5, memory=0.5))
    sim.submit(job("low2", priority=0.3, cpu=0.5, memory=0.5))
    sim.now = 50.0
    sim.submit(job("same", priority=0.1, cpu=0.5, memory=0.5))
    assert "w0!same" not in sim.running and not sim.kills  # equal priority evicts nothing
    sim.submit(job("high", priority=0.9, cpu=0.5, memory=0.5))
    ((killed, executes),) = sim.kills
    assert killed == ("w0!low1",)  # the lowest priority, just enough of it
    assert [e.job_id for e in executes] == ["w0!high"]
    low1 = sim.policy.ledger.tasks["w0!low1"]
    assert low1.restarts == 1 and low1.job_id == "resubmit!w0_low1#1"
    assert low1.state is TaskState.PENDING  # resubmitted, acknowledged, waiting
    assert [a.end_reason for a in sim.policy.ledger.attempts] == ["evicted"]


@pytest.mark.parametrize(("levels", "evicts"), [(12, False), (0, True)])
def test_priorities_compare_by_google_level(levels, evicts):
    sim = cell(1, priority_levels=levels)
    sim.submit(job("low", priority=0.10, cpu=1.0, memory=1.0))  # level ceil(1.2) = 2
    sim.submit(job("higher", priority=0.16, cpu=1.0, memory=1.0))  # level 2 too
    assert bool(sim.kills) is evicts
    sim.submit(job("next", priority=0.17, cpu=1.0, memory=1.0))  # level 3 evicts level 2
    assert sim.kills


@pytest.mark.parametrize("resume", [False, True])
def test_restart_with_full_or_remaining_work(resume):
    sim = cell(1, resume=resume)
    sim.submit(job("low", priority=0.1, cpu=1.0, memory=1.0, work=100.0))
    sim.now = 30.0
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))
    low = sim.policy.ledger.tasks["w0!low"]
    assert low.remaining == pytest.approx(70.0 if resume else 100.0)


def test_restart_policies():
    sim = cell(1, restart="none")
    sim.submit(job("low", priority=0.1, cpu=1.0, memory=1.0))
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))
    assert sim.policy.ledger.tasks["w0!low"].outcome is Outcome.NOT_RESTARTED

    sim = cell(1, restart="delayed", restart_delay=60.0)
    sim.submit(job("low", priority=0.1, cpu=1.0, memory=1.0))
    sim.now = 10.0
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))
    low = sim.policy.ledger.tasks["w0!low"]
    assert low.state is TaskState.SUSPENDED and sim.wakeups == [70.0]
    sim.advance(69.0)
    assert low.state is TaskState.SUSPENDED
    sim.advance(71.0)
    assert low.state is TaskState.PENDING and low.job_id == "resubmit!w0_low#1"

    sim = cell(1, max_restarts=1)
    sim.submit(job("low", priority=0.1, cpu=1.0, memory=1.0))
    sim.submit(job("mid", priority=0.5, cpu=1.0, memory=1.0))
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))  # evicts mid
    sim.complete("w0!high")  # mid runs again? low and mid compete: mid wins
    assert sim.policy.ledger.tasks["w0!mid"].state is TaskState.RUNNING
    sim.submit(job("top", priority=0.95, cpu=1.0, memory=1.0))  # evicts mid a second time
    mid = sim.policy.ledger.tasks["w0!mid"]
    assert mid.outcome is Outcome.NOT_RESTARTED and "restart cap" in mid.note


def test_services_end_by_design_at_their_walltime():
    sim = cell(1)
    sim.submit(job("svc", kind="service", work=500.0))
    sim.now = 500.0
    sim.complete("w0!svc", "walltime")
    assert sim.policy.ledger.tasks["w0!svc"].outcome is Outcome.KILLED_BY_DESIGN


def test_user_kills_running_tasks_and_rejects_pending_ones():
    sim = cell(1, preemption=False)
    sim.submit(job("run", cpu=1.0, memory=1.0))
    sim.submit(job("wait", cpu=1.0, memory=1.0))
    sim.policy.user_kill(sim.now, "w0!wait")
    decisions = sim.step()
    assert Reject(("w0!wait",)) in decisions and not any(isinstance(d, Kill) for d in decisions)
    sim.policy.user_kill(sim.now, "w0!run")
    assert Kill(("w0!run",)) in sim.step()
    tasks = sim.policy.ledger.tasks
    assert tasks["w0!wait"].outcome is tasks["w0!run"].outcome is Outcome.KILLED_BY_USER
    sim.policy.user_kill(sim.now, "w0!run")  # already ended: nothing happens
    assert sim.step() == []


def test_machine_failure_kills_resubmits_and_avoids_the_machine():
    sim = cell(2, preemption=False)
    sim.submit(job("a", cpu=1.0, memory=1.0))
    sim.submit(job("b", cpu=1.0, memory=1.0))
    failed = sim.running["w0!a"]
    sim.now = 20.0
    sim.policy.machines_unavailable(sim.now, [failed])
    sim.step()
    a = sim.policy.ledger.tasks["w0!a"]
    assert a.restarts == 1 and a.state is TaskState.PENDING  # the other machine is busy
    sim.complete("w0!b")
    assert sim.running == {"resubmit!w0_a#1": 1 - failed}
    sim.policy.machines_available(sim.now, [failed])
    sim.submit(job("c", cpu=1.0, memory=1.0))
    assert sim.running["w0!c"] == failed


def test_idle_machines_sleep_and_wake_for_work():
    sim = cell(2, energy="idle-sleep", idle_timeout=100.0)
    sim.submit(job("a", cpu=1.0, memory=1.0, work=10.0))
    sim.now = 10.0
    sim.complete("w0!a")
    assert sim.wakeups == [100.0]  # machine 1 idle since 0
    sim.advance(105.0)  # machine 0, idle since 10, sleeps at 110
    assert sim.switching == {1: False}
    sim.finish_switches()
    sim.advance(250.0)
    assert sim.switching == {0: False}
    sim.finish_switches()
    assert sim.policy.cluster.powered.sum() == 0
    sim.submit(job("b", cpu=1.0, memory=1.0))
    assert sim.switching == {0: True} and "w0!b" not in sim.running
    sim.finish_switches()
    assert sim.running == {"w0!b": 0}


@pytest.mark.parametrize("wake_before_evicting", [False, True])
def test_a_task_fitting_nowhere_awake_evicts_or_waits_for_a_wake(wake_before_evicting):
    sim = cell(2, energy="idle-sleep", idle_timeout=100.0, wake_before_evicting=wake_before_evicting)
    sim.submit(job("low", priority=0.1, cpu=1.0, memory=1.0, work=10_000.0))
    sim.advance(150.0)
    assert sim.switching == {1: False}  # machine 1, idle since 0, goes to sleep
    sim.finish_switches()
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))
    if wake_before_evicting:
        assert not sim.kills and sim.running == {"w0!low": 0} and sim.switching == {1: True}
        sim.finish_switches()
        assert sim.running == {"w0!low": 0, "w0!high": 1}
    else:
        ((killed, executes),) = sim.kills
        assert killed == ("w0!low",) and [e.job_id for e in executes] == ["w0!high"]
        assert sim.switching == {1: True}  # for the evicted task, now queued


def test_a_task_waiting_for_a_wake_evicts_once_no_machine_sleeps():
    sim = cell(2, energy="idle-sleep", idle_timeout=100.0, wake_before_evicting=True)
    sim.submit(job("low", priority=0.1, cpu=1.0, memory=1.0, work=10_000.0))
    sim.advance(150.0)
    sim.finish_switches()  # machine 1 asleep
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))
    sim.submit(job("higher", priority=0.95, cpu=1.0, memory=1.0))
    assert not sim.kills and sim.switching == {1: True}  # one machine to wake, both wait for it
    sim.finish_switches()
    ((killed, executes),) = sim.kills  # in the same pass
    assert [e.job_id for e in executes] == ["w0!higher", "w0!high"] and killed == ("w0!low",)
    assert sim.running["w0!higher"] == 1  # the woken machine went to the highest priority,
    assert sim.running["w0!high"] == 0  # and with nothing asleep any more, "high" evicted


def test_the_end_rejects_tasks_no_machine_can_ever_take():
    sim = cell(1, preemption=False)
    sim.submit(job("a", cpu=1.0, memory=1.0))
    sim.submit(job("b", cpu=1.0, memory=1.0))
    sim.policy.no_more_jobs = True
    sim.policy.machines_unavailable(sim.now, [0])
    sim.step()
    assert not sim.finished  # the machine may come back
    sim.policy.no_more_events = True
    sim.step()
    assert sim.finished
    outcomes = {t.task_id: t.outcome for t in sim.policy.ledger.tasks.values()}
    assert outcomes == {"w0!a": Outcome.PENDING_AT_END, "w0!b": Outcome.PENDING_AT_END}
    assert sim.policy.ledger.balanced()


def test_the_end_waits_for_running_tasks():
    sim = cell(1)
    sim.submit(job("a"))
    sim.policy.no_more_jobs = True
    assert RegistrationFinished() not in sim.step()
    sim.complete("w0!a")
    assert sim.finished and sim.policy.ledger.outcomes()["completed"] == 1


def test_invalid_configuration_names_the_field():
    with pytest.raises(ValueError, match="placement"):
        PolicyConfig(placement="worst-fit")
    with pytest.raises(ValueError, match="restart must"):
        PolicyConfig(restart="sometimes")
    with pytest.raises(ValueError, match="cpu_overcommit"):
        PolicyConfig(cpu_overcommit=0.5)
    with pytest.raises(ValueError, match="priority_levels"):
        PolicyConfig(priority_levels=-1)
    with pytest.raises(ValueError, match="idle_timeout"):
        PolicyConfig(idle_timeout=0)


def test_levels_survive_batsims_six_decimals():
    # Google priorities 1 and 2 -> 2/12 and 3/12; Batsim hands 2/12 back as 0.166667
    sim = cell(1, priority_levels=12)
    assert [sim.policy.evictions.level(p) for p in (0.083333, 0.166667, 0.25, 1.0, 1e-6)] == [1, 2, 3, 12, 1]
    sim.submit(job("low", priority=0.166667, cpu=1.0, memory=1.0))
    sim.submit(job("high", priority=0.25, cpu=1.0, memory=1.0))
    ((killed, executes),) = sim.kills
    assert killed == ("w0!low",) and [e.job_id for e in executes] == ["w0!high"]


def test_among_equal_priorities_the_latest_started_is_evicted():
    for order in (["a", "b"], ["b", "a"]):
        sim = cell(1)
        for name in order:
            sim.submit(job(name, priority=0.2, cpu=0.5, memory=0.5))
            sim.now += 10
        sim.submit(job("high", priority=0.9, cpu=0.5, memory=0.5))
        ((killed, _),) = sim.kills
        assert killed == (f"w0!{order[-1]}",)


def test_a_delayed_restart_of_no_delay_resubmits_at_once():
    sim = cell(1, restart="delayed", restart_delay=0.0)
    sim.submit(job("low", priority=0.1, cpu=1.0, memory=1.0))
    sim.submit(job("high", priority=0.9, cpu=1.0, memory=1.0))
    assert sim.kills and "resubmit!w0_low#1" in sim.submitted  # queued again, not suspended for good


def test_a_user_kill_before_the_jobs_submission_rejects_it_on_arrival():
    sim = cell(1)
    sim.policy.user_kill(sim.now, "w0!a")  # Batsim delivers the event first at the same time
    sim.submit(job("a"))
    task = sim.policy.ledger.tasks["w0!a"]
    assert task.outcome is Outcome.KILLED_BY_USER and task.note == "before its submission"
    assert not sim.running and "w0!a" in sim.done


def test_machines_no_queued_task_fits_may_sleep_while_tasks_wait():
    policy = CellPolicy(
        np.array([1.0, 0.25]),
        np.array([1.0, 0.25]),
        mechanics_config(energy="idle-sleep", idle_timeout=60.0, preemption=False),
    )
    sim = FakeBatsim(policy)
    sim.submit(job("big", cpu=1.0, memory=1.0, work=10_000.0))
    sim.submit(job("waits", cpu=1.0, memory=1.0))
    sim.advance(61.0)
    assert sim.switching == {1: False}  # the small machine sleeps; "waits" could use neither machine now


def test_a_job_of_several_machines_is_rejected_with_the_reason():
    sim = cell(2)
    sim.submit(JobRequest("w0!wide", 0.0, "task", 0.5, 0.1, 0.1, 10.0, machines=2))
    task = sim.policy.ledger.tasks["w0!wide"]
    assert task.outcome is Outcome.REJECTED and task.note == "asks for 2 machines; tasks here take one"
    assert "w0!wide" in sim.done


@pytest.mark.parametrize(
    "option, message",
    [
        ({"restart_delay": "x"}, "restart_delay must be a number (got 'x')"),
        ({"max_restarts": 1.5}, "max_restarts must be a whole number (got 1.5)"),
        ({"resume": "yes"}, "resume must be true or false (got 'yes')"),
        ({"preemption": 0}, "preemption must be true or false (got 0)"),
    ],
)
def test_options_of_the_wrong_type_are_named(option, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        PolicyConfig(**option)
