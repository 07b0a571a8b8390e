"""The complete example policy of examples/policies/deadline_best_fit.py, run through the core on
the stand-in for Batsim (tests/fake_batsim.py): what it is handed, what it returns, and that every
task ends once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_batsim import FakeBatsim

from batsim_google.errors import ParameterError
from batsim_google.scheduling.decisions import Kill, Reject, WakeAt
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.simulation.frontend import user_policy

EXAMPLE = f"{Path(__file__).resolve().parents[2] / 'examples' / 'policies' / 'deadline_best_fit.py'}:DeadlineBestFit"
#: Two machines as Batsim's platform properties: a large one and one of half its CPU and memory.
PROPERTIES = [{"cpu_capacity": "1.0", "memory_capacity": "1.0"}, {"cpu_capacity": "0.5", "memory_capacity": "0.5"}]


def request(job_id: str, now: float, cpu: float, memory: float = 0.1, priority: float = 0.5) -> JobRequest:
    return JobRequest(f"w0!{job_id}", now, cpu=cpu, memory=memory, priority=priority, work=100.0)


def test_tasks_share_machines_by_best_fit_and_priority_and_all_end_once():
    batsim = FakeBatsim(user_policy(PROPERTIES, EXAMPLE, {"max_wait": 50.0}))
    policy = batsim.policy
    assert (policy.cluster.cpu_capacity.tolist(), policy.needs.compute_sharing) == ([1.0, 0.5], True)
    batsim.submit(request("0", 0.0, cpu=0.4))  # fills the small machine best (0.1 left, not 0.6)
    assert batsim.running == {"w0!0": 1}
    batsim.submit(request("1", 0.0, cpu=0.7))  # only the large one has 0.7
    batsim.submit(request("2", 0.0, cpu=2.0))  # fits no machine, even empty: rejected at once
    assert batsim.running == {"w0!0": 1, "w0!1": 0} and "w0!2" in batsim.done
    # two tasks wait (0.3 and 0.1 left); when CPU frees, the higher priority one goes first
    batsim.now = 5.0
    batsim.submit(request("3", 5.0, cpu=0.35, priority=0.2))
    batsim.now = 6.0
    batsim.submit(request("4", 6.0, cpu=0.35, priority=0.9))
    assert sorted(batsim.wakeups) == [55.0, 56.0]  # each waiting task's deadline
    batsim.now = 20.0
    batsim.complete("w0!1")
    assert list(batsim.running.items()) == [("w0!0", 1), ("w0!4", 0), ("w0!3", 0)]  # shared, by priority
    batsim.advance(60.0)  # the wake-ups come; nothing waits any more
    for job_id in list(batsim.running):
        batsim.complete(job_id)
    assert policy.ledger.balanced()
    assert policy.ledger.outcomes()["completed"] == 4 and policy.ledger.outcomes()["rejected"] == 1


def test_a_task_still_waiting_at_its_deadline_is_rejected_then():
    batsim = FakeBatsim(user_policy(PROPERTIES, EXAMPLE, {"max_wait": 30.0}))
    batsim.submit(request("0", 0.0, cpu=1.0))
    batsim.submit(request("1", 0.0, cpu=0.9))
    assert batsim.wakeups == [30.0] and "w0!1" in batsim.policy.ledger.tasks
    batsim.now = 30.0
    batsim.wakeups.clear()
    batsim.policy.woken(30.0)
    assert batsim.step() == [Reject(("w0!1",))]
    assert batsim.policy.ledger.tasks["w0!1"].note == "waited 30 s"
    batsim.policy.machines_unavailable(40.0, [0])  # the base class kills a failed machine's tasks
    assert batsim.step() == [Kill(("w0!0",))]
    assert batsim.policy.ledger.balanced() and batsim.policy.ledger.outcomes()["not_restarted"] == 1


def test_the_example_refuses_a_bad_option_naming_it():
    with pytest.raises(ValueError, match="max_wait must be"):
        user_policy(PROPERTIES, EXAMPLE, {"max_wait": 0})
    with pytest.raises(ParameterError, match="unexpected keyword argument 'max_waiting'"):
        user_policy(PROPERTIES, EXAMPLE, {"max_waiting": 10})


def test_wake_ups_are_asked_once_per_waiting_task():
    batsim = FakeBatsim(user_policy(PROPERTIES, EXAMPLE, {"max_wait": 30.0}))
    batsim.submit(request("0", 0.0, cpu=1.0))
    batsim.submit(request("1", 0.0, cpu=0.9))
    batsim.submit(request("2", 1.0, cpu=0.6))
    assert [d for d in batsim.policy.decide(2.0) if isinstance(d, WakeAt)] == []
    assert np.array_equal(batsim.policy.cluster.tasks, [1, 0])
