"""The horizon: at that simulated time the scheduler stops and everything still open is censored."""

from __future__ import annotations

import numpy as np
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.decisions import Reject
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.tasks import JobRequest, Outcome


def job(name, priority=0.5, work=1e6, subtime=0.0):
    return JobRequest(f"w0!{name}", subtime, "task", priority, 1.0, 1.0, work)


def cell(**config) -> FakeBatsim:
    return FakeBatsim(CellPolicy(np.ones(1), np.ones(1), mechanics_config(**config)))


def test_the_horizon_censors_running_suspended_pending_and_later_tasks():
    sim = cell(horizon=1000.0, restart="delayed", restart_delay=5000.0)
    sim.submit(job("low", priority=0.1))
    assert sim.wakeups == [1000.0]  # asked of Batsim from the first pass
    sim.now = 10.0
    sim.submit(job("high", priority=0.9))  # evicts "low", suspended until 5010
    sim.now = 20.0
    sim.submit(job("waits"))
    sim.advance(1000.0)
    assert [killed for killed, _ in sim.kills] == [("w0!low",), ("w0!high",)]  # only running jobs
    assert "w0!waits" in sim.done and sim.finished and not sim.running
    sim.now = 2000.0  # a job Batsim submits later is rejected at once
    sim.requests["w0!later"] = job("later", subtime=2000.0)
    sim.submitted.add("w0!later")
    sim.policy.job_submitted(sim.now, sim.requests["w0!later"])
    assert sim.step() == [Reject(("w0!later",))]
    tasks = sim.policy.ledger.tasks
    assert {task.outcome for task in tasks.values()} == {Outcome.CENSORED} and len(tasks) == 4
    assert sim.policy.ledger.balanced()
    assert [(a.task_id, a.end, a.end_reason) for a in sim.policy.ledger.attempts] == [
        ("w0!low", 10.0, "evicted"),
        ("w0!high", 1000.0, "horizon"),
    ]


def test_tasks_ending_before_the_horizon_are_not_censored():
    sim = cell(horizon=1000.0)
    sim.submit(job("a", work=5.0))
    sim.now = 5.0
    sim.complete("w0!a")
    sim.policy.no_more_jobs = True
    sim.step()
    assert sim.finished and sim.policy.ledger.outcomes() == {
        **dict.fromkeys(sim.policy.ledger.outcomes(), 0),
        "completed": 1,
    }
    assert not sim.kills
