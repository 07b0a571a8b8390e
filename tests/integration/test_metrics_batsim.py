"""``metrics DIR`` on the output folder of another scheduler (pybatsim's fillerSched) in real Batsim
4.2.1, and ``run``'s summary and metrics.json."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.metrics import LEDGER_METRICS
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation

PLATFORM = Path(__file__).resolve().parents[1] / "fixtures" / "cell4_energy.xml"
pytestmark = pytest.mark.batsim


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("workload") / "workload.json"
    write_generated_workload(path, preset("google"), load_request_law(), 4, Generation(tasks=40, nb_res=4))
    return path


def test_metrics_of_a_fillersched_run_come_from_batsims_files(tmp_path, batsim_binary, workload):
    output = tmp_path / "filler"
    run_simulation(
        Simulation(
            PLATFORM,
            [workload],
            output,
            pybatsim_scheduler("fillerSched"),
            energy=True,
            timeout=120,
            batsim=batsim_binary,
            scheduler_log=False,
        )
    )
    result = CliRunner().invoke(main, ["metrics", str(output), "--json", str(tmp_path / "metrics.json")])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    with (output / "out_schedule.csv").open() as handle:
        batsim = {
            name: float(value) for name, value in next(csv.DictReader(handle)).items() if name != "batsim_version"
        }
    assert metrics["jobs"] == batsim["nb_jobs"] == 40
    assert (metrics["jobs_completed"], metrics["jobs_killed"], metrics["jobs_rejected"]) == (
        batsim["nb_jobs_success"],
        batsim["nb_jobs_killed"],
        batsim["nb_jobs_rejected"],
    )
    assert metrics["makespan_s"] == pytest.approx(batsim["makespan"], abs=1e-5)
    assert metrics["mean_waiting_s"] == pytest.approx(batsim["mean_waiting_time"], rel=1e-6)
    # fillerSched gives each job a whole machine: utilization is Batsim's computing time share
    computing = batsim["time_computing"] / (batsim["nb_computing_machines"] * batsim["makespan"])
    assert metrics["utilization"] == pytest.approx(computing, rel=1e-6)
    assert metrics["energy_j"] == pytest.approx(batsim["consumed_joules"], rel=1e-4)
    assert metrics["mean_bounded_slowdown"] >= 1.0 and metrics["p95_waiting_s"] >= metrics["mean_waiting_s"] > 0
    assert all(metrics[name] is None for name in LEDGER_METRICS)
    assert "evictions               n/a" in result.output


def test_run_prints_a_summary_and_writes_metrics_json(tmp_path, batsim_binary, workload):
    output = tmp_path / "cell"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--platform",
            str(PLATFORM),
            "--workload",
            str(workload),
            "-o",
            str(output),
            "--batsim",
            batsim_binary,
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["tasks"] == 40 and metrics["balanced"] is True
    assert metrics["completed"] + metrics["killed_by_design"] == 40 and metrics["delivered_cpu_s"] > 0
    assert f"completed tasks {metrics['completed']}, abandoned at the restart cap 0" in result.output
    assert "energy " in result.output and "GJ" in result.output
