"""Parallel jobs (widths > 1) generated from a model run through real Batsim 4.2.1 with pybatsim's
fillerSched: each job gets exactly its width in machines, for exactly its makespan, and no machine
ever runs two jobs at once."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import pytest
from procset import ProcSet
from test_generated_workload_batsim import pybatsim

from batsim_google.fitting.model_fit import (
    FitSettings,
    fit_model,
)
from batsim_google.fitting.swf_input import swf_task_table
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.laws import Empirical, Exponential, Gamma
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import TaskClass, WorkloadModel
from batsim_google.simulation.runner import Simulation, run_simulation
from batsim_google.trace.row_accounting import RowAccount

PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"
pytestmark = pytest.mark.batsim


def _handwritten() -> WorkloadModel:
    return WorkloadModel(
        dynamism=30.0,
        classes=(
            TaskClass(
                "par",
                "task",
                1.0,
                600.0,
                4.0,
                3.0,
                width=Empirical((1.0, 2.0, 5.0, 16.0, 40.0, 64.0), (0.4, 0.2, 0.15, 0.15, 0.05, 0.05)),
                groups="pow2",
                makespan_by_group={"1": Exponential(0.01), "33-63": Gamma(2.0, 300.0)},
            ),
        ),
    )


def _fitted_kth(kth: Path) -> WorkloadModel:
    frame = swf_task_table(kth, RowAccount())
    return fit_model(frame, FitSettings(methods=["lognormal-ml", "gamma-ml"], groups="pow2", profile="none")).model


@pytest.mark.parametrize(
    ("source", "platform", "machines"),
    [
        ("handwritten", "google-2011-cell-64.xml", 64),
        ("kth", "google-2011-cell-512.xml", 512),  # KTH jobs take up to 100 processors
    ],
)
def test_jobs_get_their_width_in_machines(request, tmp_path, batsim_binary, source, platform, machines):
    model = _handwritten() if source == "handwritten" else _fitted_kth(request.getfixturevalue("kth"))
    workload = tmp_path / "workload.json"
    write_generated_workload(workload, model, load_request_law(), 6, Generation(tasks=300, nb_res=machines))
    data = json.loads(workload.read_text())
    jobs = {str(job["id"]): job for job in data["jobs"]}
    assert max(job["res"] for job in jobs.values()) > 16  # really parallel jobs
    result = run_simulation(
        Simulation(
            PLATFORMS / platform,
            [workload],
            tmp_path / "out",
            pybatsim("fillerSched"),
            timeout=180,
            batsim=batsim_binary,
        )
    )
    with result.path("jobs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {row["job_id"] for row in rows} == set(jobs)
    busy = defaultdict(list)
    for row in rows:
        job = jobs[row["job_id"]]
        allocated = ProcSet.from_str(row["allocated_resources"])
        assert row["final_state"] == "COMPLETED_SUCCESSFULLY"
        assert int(row["requested_number_of_resources"]) == len(allocated) == job["res"]
        assert float(row["execution_time"]) == pytest.approx(data["profiles"][job["profile"]]["delay"], abs=1e-3)
        for machine in allocated:
            busy[machine].append((float(row["starting_time"]), float(row["finish_time"])))
    assert max(busy) < machines
    for periods in busy.values():
        periods.sort()
        assert all(end <= next_start + 1e-6 for (_, end), (next_start, _) in zip(periods, periods[1:]))
