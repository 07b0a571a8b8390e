"""A generated workload runs through real Batsim 4.2.1 with pybatsim's bundled fillerSched."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from batsim_google.presets import preset
from batsim_google.requests import load_request_law
from batsim_google.runner import Simulation, run_simulation
from batsim_google.workload import write_generated_workload

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
pytestmark = pytest.mark.batsim


def pybatsim(scheduler: str):
    return lambda endpoint: [sys.executable, "-m", "batsim.cmds.launcher", scheduler, "-s", endpoint, "-t", "30000"]


@pytest.mark.parametrize("grain", [None, 10.0])
def test_generated_workload_completes_in_batsim(tmp_path, batsim_binary, grain):
    workload = tmp_path / "workload.json"
    write_generated_workload(workload, preset("google"), load_request_law(), 4, tasks=300, nb_res=8, grain=grain)
    result = run_simulation(
        Simulation(FIXTURES / "cluster8.xml", [workload], tmp_path / "out", pybatsim("fillerSched"), timeout=120, batsim=batsim_binary)
    )
    data = json.loads(workload.read_text())
    delays = {str(job["id"]): data["profiles"][job["profile"]]["delay"] for job in data["jobs"]}
    subtimes = {str(job["id"]): job["subtime"] for job in data["jobs"]}
    with result.path("jobs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 300
    assert {row["job_id"] for row in rows} == set(delays)
    for row in rows:
        assert row["final_state"] == "COMPLETED_SUCCESSFULLY"
        assert float(row["submission_time"]) == pytest.approx(subtimes[row["job_id"]], abs=1e-6)
        assert float(row["execution_time"]) == pytest.approx(delays[row["job_id"]], abs=1e-3)
        assert int(row["requested_number_of_resources"]) == 1
