"""Walltimes in real Batsim 4.2.1: a walltime never shortens a task (Batsim kills a job whose delay
equals its walltime: the margin), and batsched's planners run a workload with walltimes without
rejecting a job, the run's metrics carrying the same accounting as every scheduler's."""

from __future__ import annotations

import csv
import json
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.batsim_accounting import NO_WALLTIME

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "tests" / "fixtures" / "cell4_energy.xml"
pytestmark = pytest.mark.batsim
TASKS = 40


def _workload(folder: Path, mode: str) -> Path:
    path = folder / f"workload-{mode}.json"
    arguments = ["generate", "--tasks", str(TASKS), "--seed", "4", "--nb-res", "4", "--walltime", mode, "-o", str(path)]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    return path


def _run(tmp_path: Path, batsim: str, workload: Path, scheduler: str, name: str) -> tuple[dict, list[dict], str]:
    output = tmp_path / name
    arguments = ["run", "--platform", str(PLATFORM), "--workload", str(workload), "-o", str(output)]
    result = CliRunner().invoke(main, [*arguments, "--batsim", batsim, "--scheduler", scheduler, "--timeout", "120"])
    assert result.exit_code == 0, result.output
    with (output / "out_jobs.csv").open() as handle:
        jobs = list(csv.DictReader(handle))
    return json.loads((output / "metrics.json").read_text()), jobs, result.output


def _kinds(workload: Path) -> dict[str, str]:
    return {f"w0!{job['id']}": job["kind"] for job in json.loads(workload.read_text())["jobs"]}


def test_an_exact_walltime_never_kills_a_task(tmp_path, batsim_binary):
    workload = _workload(tmp_path, "exact")
    metrics, jobs, _ = _run(tmp_path, batsim_binary, workload, "pybatsim=fillerSched", "filler")
    kinds = _kinds(workload)
    ended = {kinds[f"{job['workload_name']}!{job['job_id']}"]: set() for job in jobs}
    for job in jobs:
        ended[kinds[f"{job['workload_name']}!{job['job_id']}"]].add(job["final_state"])
    assert ended["task"] == {"COMPLETED_SUCCESSFULLY"}
    assert ended.get("service", {"COMPLETED_WALLTIME_REACHED"}) == {"COMPLETED_WALLTIME_REACHED"}
    assert metrics["jobs_rejected"] == 0 and metrics["load_energy_j"] > 0 and metrics["utilization"] > 0


#: What batsched's energy_bf family plans with: the test cell's m0 (tests/fixtures/cell4_energy.xml).
ENERGY_OPTIONS = {
    "power_compute": 200.0,
    "power_idle": 100.0,
    "power_sleep": 10.0,
    "pstate_compute": 0,
    "pstate_sleep": 1,
    "time_switch_on": 10.0,
    "time_switch_off": 10.0,
    "energy_switch_on": 1500.0,
    "energy_switch_off": 1500.0,
}


def _batsched(variant: str, tmp_path: Path) -> str:
    if shutil.which("batsched") is None:
        pytest.skip("no 'batsched' on PATH (oar-team/batsched, built outside this repository)")
    options = []
    if variant.startswith("energy_bf"):
        sleeper = {
            "monitoring_period": 60,
            "idle_time_to_sedate": 60,
            "output_dir": str(tmp_path),
            "trace_output_filename": str(tmp_path / "batsched-trace.csv"),
        }
        options = ["--variant_options", json.dumps({**ENERGY_OPTIONS, **sleeper})]
    return "command=" + shlex.join(["batsched", "-v", variant, *options, "-s", "{socket}"])


def test_batsched_energy_bf_idle_sleeper_runs_a_workload_with_walltimes_rejecting_nothing(tmp_path, batsim_binary):
    scheduler = _batsched("energy_bf_idle_sleeper", tmp_path)
    workload = _workload(tmp_path, "user-estimate")
    metrics, jobs, output = _run(tmp_path, batsim_binary, workload, scheduler, "sleeper")
    assert len(jobs) == TASKS and metrics["jobs_rejected"] == 0 and metrics["rejected_by_reason"] == {}
    assert metrics["load_energy_j"] > 0 and metrics["idle_energy_j"] >= 0
    assert 0 < metrics["utilization"] <= 1 and 0 < metrics["occupancy"] <= 1
    assert "0 rejected" in output


def test_batsched_rejects_a_workload_without_walltimes_and_run_says_why(tmp_path, batsim_binary):
    scheduler = _batsched("easy_bf", tmp_path)
    workload = _workload(tmp_path, "none")
    metrics, _, output = _run(tmp_path, batsim_binary, workload, scheduler, "easy")
    tasks = sum(kind == "task" for kind in _kinds(workload).values())
    assert metrics["jobs_rejected"] == tasks and metrics["rejected_by_reason"] == {NO_WALLTIME: tasks}
    assert f"{tasks} rejected ({tasks} {NO_WALLTIME})" in output
