"""A generated workload runs through real Batsim 4.2.1 with pybatsim's bundled fillerSched."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.simulation.runner import Simulation, run_simulation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
pytestmark = pytest.mark.batsim


def pybatsim(scheduler: str):
    return lambda endpoint: [sys.executable, "-m", "batsim.cmds.launcher", scheduler, "-s", endpoint, "-t", "30000"]


@pytest.mark.parametrize("grain", [None, 10.0])
def test_generated_workload_completes_in_batsim(tmp_path, batsim_binary, grain):
    workload = tmp_path / "workload.json"
    write_generated_workload(
        workload, preset("google"), load_request_law(), 4, Generation(tasks=300, nb_res=8, grain=grain)
    )
    result = run_simulation(
        Simulation(
            FIXTURES / "cluster8.xml",
            [workload],
            tmp_path / "out",
            pybatsim("fillerSched"),
            timeout=120,
            batsim=batsim_binary,
        )
    )
    jobs = {str(job["id"]): job for job in json.loads(workload.read_text())["jobs"]}
    profiles = json.loads(workload.read_text())["profiles"]
    with result.path("jobs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 300
    assert {row["job_id"] for row in rows} == set(jobs)
    kinds = {row["job_id"]: jobs[row["job_id"]]["kind"] for row in rows}
    assert set(kinds.values()) == {"task", "service"}
    for row in rows:
        job = jobs[row["job_id"]]
        assert float(row["submission_time"]) == pytest.approx(job["subtime"], abs=1e-6)
        assert int(row["requested_number_of_resources"]) == 1
        if job["kind"] == "task":  # a task does its work and succeeds
            assert row["final_state"] == "COMPLETED_SUCCESSFULLY"
            assert float(row["execution_time"]) == pytest.approx(profiles[job["profile"]]["delay"], abs=1e-3)
        else:  # a service runs until Batsim stops it at the end of its lifetime
            assert row["final_state"] == "COMPLETED_WALLTIME_REACHED"
            assert float(row["execution_time"]) == pytest.approx(job["walltime"], abs=1e-3)
