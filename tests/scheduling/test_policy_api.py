"""The policy API: the examples of examples/policies on fake events, and loading policies by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from batsim_google.errors import ParameterError
from batsim_google.scheduling.decisions import Execute, Kill, SwitchOff
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_api import Policy
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.simulation.policy_loader import load_policy_class

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies"
FCFS = f"{EXAMPLES / 'whole_machine_fcfs.py'}:WholeMachineFCFS"
CAPPED = f"{EXAMPLES / 'power_capped_fcfs.py'}:PowerCappedFCFS"


def machines(count: int) -> tuple[np.ndarray, np.ndarray]:
    return np.ones(count), np.ones(count)


def submit(policy: Policy, now: float, *job_ids: str) -> None:
    for job_id in job_ids:
        policy.job_submitted(now, JobRequest(job_id, now, cpu=0.1, memory=0.1, work=10.0))


def test_whole_machine_fcfs_gives_each_task_a_machine_in_submission_order():
    policy = load_policy_class(FCFS)(*machines(2))
    submit(policy, 0.0, "w!1", "w!2", "w!3")
    assert policy.decide(0.0) == [Execute("w!1", 0), Execute("w!2", 1)]  # small tasks, yet one per machine
    policy.job_ended(10.0, "w!2", "success")
    assert policy.decide(10.0) == [Execute("w!3", 1)]
    policy.job_ended(11.0, "w!1", "success")
    policy.job_ended(20.0, "w!3", "success")
    assert policy.decide(20.0) == []
    assert policy.ledger.balanced() and policy.ledger.outcomes()["completed"] == 3


def test_a_failed_machines_task_is_killed_and_ends_once_in_the_ledger():
    policy = load_policy_class(FCFS)(*machines(2))
    submit(policy, 0.0, "w!1", "w!2")
    policy.decide(0.0)
    policy.machines_unavailable(5.0, [0])
    assert policy.decide(5.0) == [Kill(("w!1",))]
    policy.job_ended(5.0, "w!1", "killed")
    policy.job_ended(10.0, "w!2", "success")
    assert policy.ledger.balanced()
    assert policy.ledger.outcomes()["not_restarted"] == 1
    assert [attempt.end_reason for attempt in policy.ledger.attempts] == ["machine_failure", "success"]


def test_power_capped_fcfs_puts_all_but_k_machines_to_sleep_and_uses_only_those():
    policy = load_policy_class(CAPPED)(*machines(4), awake=1)
    submit(policy, 0.0, "w!1", "w!2")
    assert policy.decide(0.0) == [SwitchOff((1, 2, 3)), Execute("w!1", 0)]
    policy.power_changed(3.0, [1, 2, 3], on=False)
    assert policy.decide(3.0) == []
    policy.job_ended(10.0, "w!1", "success")
    assert policy.decide(10.0) == [Execute("w!2", 0)]
    # the machines asleep, as the front-ends write them beside Batsim's outputs (Batsim may say idle)
    assert (policy.sleep_log.times, policy.sleep_log.counts) == ([3.0], [3])


def test_a_policy_whose_machines_never_sleep_keeps_no_sleep_log():
    policy = load_policy_class(FCFS)(*machines(2))
    submit(policy, 0.0, "w!1")
    policy.decide(0.0)
    assert policy.sleep_log.times == []


def test_the_built_in_policy_is_an_implementation_of_the_api():
    assert issubclass(CellPolicy, Policy)
    assert CellPolicy.needs.dynamic_jobs and CellPolicy.needs.compute_sharing


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "must be 'module:Class'"),
        ("missing/file.py:X", "no such file"),
        ("batsim_google.nope:X", "No module named"),
        ("batsim_google.scheduling.tasks:Task", "not a subclass"),
    ],
)
def test_a_policy_name_that_names_no_policy_is_refused_with_the_reason(spec, message):
    with pytest.raises(ParameterError, match=message):
        load_policy_class(spec)
