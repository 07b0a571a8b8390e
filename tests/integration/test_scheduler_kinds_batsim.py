"""Schedulers of every kind in real Batsim 4.2.1: the example policies of examples/policies (on the
policy API, through the pybatsim front-end), a pybatsim scheduler and batsched."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs, started_jobs
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.schedulers import Scheduler
from batsim_google.simulation.settings import RunInputs, SimulationSettings

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "tests" / "fixtures" / "cell4_energy.xml"
EXAMPLES = REPO / "examples" / "policies"
pytestmark = pytest.mark.batsim


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("workload") / "workload.json"
    write_generated_workload(path, preset("google"), load_request_law(), 4, Generation(tasks=40, nb_res=4))
    return path


def machine_states(output: Path) -> list[dict]:
    with (output / "out_machine_states.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_whole_machine_fcfs_runs_one_task_per_machine_and_balances(tmp_path, batsim_binary, workload):
    scheduler = Scheduler("python", f"{EXAMPLES / 'whole_machine_fcfs.py'}:WholeMachineFCFS")
    run = run_scheduler(
        scheduler, RunInputs(PLATFORM, [workload]), tmp_path, SimulationSettings(timeout=120, batsim=batsim_binary)
    )
    assert run.summary["balanced"] and run.summary["submitted"] == 40
    metrics = run_metrics(RunOutputs(tmp_path), PLATFORM)
    assert metrics["jobs"] == 40 and metrics["evictions"] == 0
    # never two jobs on one machine at once: at most 4 computing machines, one per job
    assert max(float(row["nb_computing"]) for row in machine_states(tmp_path)) <= 4


def test_power_capped_fcfs_keeps_at_most_k_machines_awake(tmp_path, batsim_binary, workload):
    scheduler = Scheduler("python", f"{EXAMPLES / 'power_capped_fcfs.py'}:PowerCappedFCFS", {"awake": 2})
    run = run_scheduler(
        scheduler, RunInputs(PLATFORM, [workload]), tmp_path, SimulationSettings(timeout=120, batsim=batsim_binary)
    )
    assert run.summary["balanced"]
    states = machine_states(tmp_path)
    assert max(float(row["nb_computing"]) + float(row["nb_idle"]) for row in states[1:]) <= 2
    assert max(float(row["nb_sleeping"]) for row in states) == 2


def test_batsched_easy_bf_runs_as_a_command_and_gets_batsims_metrics(tmp_path, batsim_binary, workload):
    """batsched (the C++ reference schedulers) rejects jobs without a walltime: the tasks of these
    workloads have none (-1), only services run; it needs none of compute sharing or dynamic jobs."""
    if shutil.which("batsched") is None:
        pytest.skip("no 'batsched' on PATH (oar-team/batsched, built outside this repository)")
    scheduler = Scheduler("command", ("batsched", "-v", "easy_bf", "-s", "{socket}"))
    run = run_scheduler(
        scheduler, RunInputs(PLATFORM, [workload]), tmp_path, SimulationSettings(timeout=120, batsim=batsim_binary)
    )
    assert run.summary is None
    metrics = run_metrics(RunOutputs(tmp_path), PLATFORM)
    with (tmp_path / "out_jobs.csv").open() as handle:
        services = sum(float(row["requested_time"]) > 0 for row in csv.DictReader(handle))
    assert metrics["jobs"] == 40 and metrics["jobs_rejected"] == 40 - services
    assert metrics["evictions"] is None and metrics["energy_j"] > 0


@pytest.mark.parametrize(
    ("scheduler", "evictions", "progress"),
    [
        (f"python={EXAMPLES / 'whole_machine_fcfs.py'}:WholeMachineFCFS", 0, "simulated time: 100%"),
        ("pybatsim=fillerSched", None, "no progress bar: a pybatsim scheduler does not report its simulated time"),
    ],
)
def test_run_takes_any_scheduler_and_writes_its_metrics(
    tmp_path, batsim_binary, workload, scheduler, evictions, progress
):
    arguments = ["run", "--platform", str(PLATFORM), "--workload", str(workload), "-o", str(tmp_path), "--progress"]
    result = CliRunner().invoke(main, [*arguments, "--batsim", batsim_binary, "--scheduler", scheduler])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["jobs"] == 40 and metrics["evictions"] == evictions  # null, "n/a", without a ledger
    assert progress in result.output


def test_a_policy_class_runs_through_the_batsim_py_front_end_too(tmp_path, batsim_binary):
    pytest.importorskip("batsim_py", reason="batsim-py is not installed (uv sync --extra batsim-py)")
    from cell_scenarios import task
    from cell_scenarios import workload as cell_workload

    path = cell_workload(tmp_path / "workload.json", [task(i, 0, 100, cpu=0.1, memory=0.1) for i in range(1, 7)])
    data = json.loads(path.read_text())
    for job in data["jobs"]:
        del job["walltime"]  # batsim-py cannot parse -1, which Batsim reads as no walltime
    path.write_text(json.dumps(data))
    command = [sys.executable, "-m", "batsim_google.simulation.batsimpy_frontend", "--platform", str(PLATFORM)]
    command += ["--workload", str(path), "-o", str(tmp_path / "out")]
    command += ["--policy-class", f"{EXAMPLES / 'whole_machine_fcfs.py'}:WholeMachineFCFS"]
    environment = dict(os.environ, PATH=f"{Path(batsim_binary).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["balanced"]
    with (tmp_path / "out" / "out_jobs.csv").open() as handle:
        starts = sorted(float(row["starting_time"]) for row in csv.DictReader(handle))
    assert max(starts[:4]) < 1.0 and min(starts[4:]) >= 100.0  # four machines, one task each


def test_a_pybatsim_scheduler_gives_the_same_run_twice(tmp_path, batsim_binary):
    """fillerSched iterates a set of job ids: with the fixed hash seed of its process, two runs of
    the same inputs write the same jobs, starts and machines."""
    workload = tmp_path / "workload.json"
    write_generated_workload(workload, preset("google"), load_request_law(), 11, Generation(tasks=200, nb_res=4))
    runs = []
    for name in ("first", "second"):
        scheduler = Scheduler("pybatsim", "fillerSched")
        run_scheduler(
            scheduler,
            RunInputs(PLATFORM, [workload]),
            tmp_path / name,
            SimulationSettings(timeout=120, batsim=batsim_binary),
        )
        runs.append((tmp_path / name / "out_jobs.csv").read_text())
    assert runs[0].count("\n") == 201 and runs[0] == runs[1]


def test_the_complete_example_policy_shares_machines_and_ends_every_task(tmp_path, batsim_binary, workload):
    scheduler = Scheduler("python", f"{EXAMPLES / 'deadline_best_fit.py'}:DeadlineBestFit", {"max_wait": 600})
    run = run_scheduler(
        scheduler, RunInputs(PLATFORM, [workload]), tmp_path, SimulationSettings(timeout=120, batsim=batsim_binary)
    )
    assert run.summary["balanced"] and run.summary["submitted"] == 40
    jobs = started_jobs(RunOutputs(tmp_path)).sort("machine", "starting_time")
    overlapping = jobs.filter(
        (pl.col("machine") == pl.col("machine").shift(1))
        & (pl.col("starting_time") < pl.col("finish_time").shift(1).cum_max().over("machine"))
    )
    assert overlapping.height > 0  # tasks shared machines (Batsim's compute sharing)
    tasks = RunOutputs(tmp_path).tasks()
    waited = tasks.filter(pl.col("outcome") == "rejected")
    assert (waited["ended"] - waited["submit"] <= 600 + 1e-3).all()


def test_run_measures_any_kind_to_the_horizon_and_tells_its_lost_tasks_in_its_terms(tmp_path, batsim_binary, workload):
    """``run --scheduler ... --horizon``: the metrics of a user's policy end at the horizon as the
    built-in one's do; the tasks it lost to a machine failure are told without the built-in
    scheduler's restart options, which it never had."""
    events = tmp_path / "failures.jsonl"
    events.write_text(
        '{"timestamp": 30, "type": "machine_unavailable", "resources": "0-3"}\n'
        '{"timestamp": 60, "type": "machine_available", "resources": "0-3"}\n'
    )
    fcfs = f"python={EXAMPLES / 'whole_machine_fcfs.py'}:WholeMachineFCFS"
    arguments = ["run", "--platform", str(PLATFORM), "--workload", str(workload), "--events", str(events)]
    arguments += ["-o", str(tmp_path / "out"), "--batsim", batsim_binary, "--no-figures", "--no-progress"]
    result = CliRunner().invoke(main, [*arguments, "--scheduler", fcfs, "--horizon", "600"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["window_end_s"] == 600 and "measured from the warm-up to the horizon" in result.output
    assert metrics["censored"] == 0  # it ran to its end: nothing was stopped at the horizon
    lost = metrics["not_restarted"]
    assert lost > 0
    assert f"{lost} task(s) stopped and not restarted (the python scheduler {fcfs[7:]} restarted none" in result.output
    assert "--restart" not in result.output
