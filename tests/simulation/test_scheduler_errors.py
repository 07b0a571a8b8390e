"""Errors on the scheduler's side name what is wrong: the job or machine and the field, the policy,
its task and machine, pybatsim's reason and the scheduler's name. The last tests run real Batsim."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.errors import InputFileError
from batsim_google.scheduling.policy_api import Policy, PolicyError
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.simulation.frontend import job_request, machine_capacities

PLATFORM = Path(__file__).resolve().parents[1] / "fixtures" / "cell4_energy.xml"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cpu": "abc"}, "workload job w0!3: cpu must be a finite number at least 0 (got 'abc')"),
        ({"cpu": -0.5}, "workload job w0!3: cpu must be a finite number at least 0 (got -0.5)"),
        ({"memory": math.nan}, "workload job w0!3: memory must be a finite number at least 0 (got nan)"),
        ({"priority": [1]}, "workload job w0!3: priority must be a finite number (got [1])"),
        ({"cpu": True}, "workload job w0!3: cpu must be a finite number at least 0 (got True)"),
        ({"trace_machine": 1.5}, "workload job w0!3: trace_machine must be a machine number (got 1.5)"),
        ({"trace_machine": "m"}, "workload job w0!3: trace_machine must be a finite number at least 0 (got 'm')"),
    ],
)
def test_a_bad_job_field_names_the_job_and_the_field(fields, message):
    with pytest.raises(InputFileError) as refused:
        job_request("w0!3", 0.0, fields, -1.0, 10.0)
    assert str(refused.value) == message


def test_good_job_fields_are_read_as_before():
    request = job_request("w0!3", 5, {"cpu": "0.25", "memory": 0.5, "trace_machine": 7.0}, -1.0, 10.0)
    assert (request.cpu, request.memory, request.trace_machine, request.priority) == (0.25, 0.5, 7, 0.5)


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"cpu_capacity": "x"}, "machine 2 of Batsim's platform (h2): cpu_capacity must be a finite number above 0"),
        ({"cpu_capacity": "-1"}, "machine 2 of Batsim's platform (h2): cpu_capacity must be a finite number above 0"),
        ({"memory_capacity": "inf"}, "machine 2 of Batsim's platform (h2): memory_capacity must be a finite number"),
        ({"cpu_capacity": "0"}, "machine 2 of Batsim's platform (h2): cpu_capacity must be a finite number above 0"),
    ],
)
def test_a_bad_machine_property_names_the_machine_and_the_property(properties, message):
    machines = [{}, {"cpu_capacity": "0.5"}, {"name": "h2", **properties}]
    with pytest.raises(InputFileError, match=f"^{message.replace('(', r'[(]').replace(')', r'[)]')}"):
        machine_capacities(machines)
    cpu, memory = machine_capacities(machines[:2])
    assert cpu.tolist() == [1.0, 0.5] and memory.tolist() == [1.0, 1.0]


class Buggy(Policy):
    """A user's policy with its bugs in ``schedule``, set by the test."""

    def schedule(self, now: float) -> None:
        self.bug(self, now)


def buggy(bug) -> Buggy:
    policy = Buggy(np.ones(4), np.ones(4))
    policy.bug = bug
    for index in range(2):
        policy.job_submitted(0.0, JobRequest(f"w0!{index}", 0.0, "task", 0.5, 0.5, 0.5, 10.0))
    return policy


@pytest.mark.parametrize(
    ("bug", "message"),
    [
        (
            lambda p, now: p.execute(p.pending[0], 999, now),
            "policy Buggy: execute task w0!0 on machine 999: no machine 999 (the platform has 4: 0 to 3)",
        ),
        (
            lambda p, now: p.execute(p.pending[0], -1, now),
            "policy Buggy: execute task w0!0 on machine -1: no machine -1 (the platform has 4: 0 to 3)",
        ),
        (
            lambda p, now: [p.execute(task, 0, now) for task in [p.pending[0]] * 2],
            "policy Buggy: execute task w0!0 on machine 0: task w0!0 is not pending (it is running on machine 0)",
        ),
        (
            lambda p, now: [p.execute(p.pending[0], 1, now), p.reject(p.ledger.tasks["w0!0"], now, "no")],
            "policy Buggy: reject task w0!0: task w0!0 is not pending (it is running on machine 1)",
        ),
        (
            lambda p, now: p.switch_off([2, 7], now),
            "policy Buggy: switch off: no machine 7 (the platform has 4: 0 to 3)",
        ),
    ],
)
def test_a_policys_impossible_decision_names_the_policy_the_task_and_the_machine(bug, message):
    with pytest.raises(PolicyError) as refused:
        buggy(bug).decide(0.0)
    assert str(refused.value) == message


# ----- with real Batsim: what a user of `run` sees ------------------------------------------------

BAD_POLICIES = """
from batsim_google.scheduling.policy_api import BatsimNeeds, Policy


class Machine999(Policy):
    needs = BatsimNeeds(failures=True)

    def schedule(self, now):
        while self.pending:
            self.execute(self.pending[0], 999, now)
"""


@pytest.fixture
def workload(tmp_path) -> Path:
    path = tmp_path / "w.json"
    result = CliRunner().invoke(main, ["generate", "--tasks", "10", "--nb-res", "4", "-o", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    return path


def run_error(tmp_path: Path, workload: Path, scheduler: str, batsim: str) -> str:
    arguments = ["run", "--platform", PLATFORM, "--workload", workload, "-o", tmp_path / "out", "--no-figures"]
    result = CliRunner().invoke(main, [str(a) for a in arguments + ["--batsim", batsim, "--scheduler", scheduler]])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.output.strip().splitlines()[-1]


@pytest.mark.batsim
def test_a_policys_bug_in_a_real_run_names_the_policy_the_task_and_the_machine(tmp_path, workload, batsim_binary):
    (tmp_path / "bad.py").write_text(BAD_POLICIES)
    line = run_error(tmp_path, workload, f"python={tmp_path / 'bad.py'}:Machine999", batsim_binary)
    assert line.endswith(
        "PolicyError: policy Machine999: execute task w0!0 on machine 999: no machine 999 (the platform has 4: 0 to 3)"
    )


@pytest.mark.batsim
@pytest.mark.parametrize(
    ("scheduler", "reason"),
    [
        ("fillerSchd", "pybatsim scheduler 'fillerSchd': No such scheduler (module file not found)."),
        ("broken.py", "RuntimeError: this scheduler's file raises"),
        ("no/such/file.py", "No such file or directory"),
    ],
)
def test_a_pybatsim_scheduler_that_cannot_start_says_why(
    tmp_path, workload, batsim_binary, scheduler, reason, monkeypatch
):
    (tmp_path / "broken.py").write_text('raise RuntimeError("this scheduler\'s file raises")\n')
    monkeypatch.chdir(tmp_path)
    line = run_error(tmp_path, workload, f"pybatsim={scheduler}", batsim_binary)
    assert line.startswith(f"Error: scheduler exited with status 1; see {tmp_path / 'out' / 'scheduler.log'}")
    assert reason in line
