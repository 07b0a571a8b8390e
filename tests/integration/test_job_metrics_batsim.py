"""Jobs of tasks through real Batsim 4.2.1: ``run`` on a generated workload with job-level
arrivals reports each Google job's response time, checked against the scheduler's own accounting."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from job_models import job_model

from batsim_google.cli import main
from batsim_google.generation.workload import (
    Generation,
    cell_load_scale,
    write_generated_workload,
)
from batsim_google.model.request_law import load_request_law

PLATFORM = Path(__file__).resolve().parents[1] / "fixtures" / "cell4_energy.xml"
pytestmark = pytest.mark.batsim


def test_run_reports_the_response_time_of_each_google_job(tmp_path, batsim_binary):
    workload = tmp_path / "workload.json"
    write_generated_workload(
        workload, job_model(), load_request_law(), 3, Generation(tasks=80, nb_res=4, arrival_scale=cell_load_scale(4))
    )
    output = tmp_path / "run"
    command = ["run", "--platform", str(PLATFORM), "--workload", str(workload), "-o", str(output)]
    result = CliRunner().invoke(main, [*command, "--batsim", batsim_binary, "--no-progress"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((output / "metrics.json").read_text())
    jobs = pl.DataFrame(
        [(f"w0!{job['id']}", job["google_job"]) for job in json.loads(workload.read_text())["jobs"]],
        schema=["task_id", "google_job"],
        orient="row",
    )
    tasks = pl.read_csv(output / "out_tasks.csv").join(jobs, on="task_id")
    per_job = tasks.group_by("google_job").agg(
        pl.col("submit").min(), pl.col("ended").max(), pl.col("outcome").is_in(["completed", "killed_by_design"]).all()
    )
    whole = per_job.filter("outcome")
    assert metrics["google_jobs"] == per_job.height == jobs["google_job"].n_unique() > 5
    assert metrics["google_jobs_completed"] == whole.height > 0
    # the scheduler's end times are its messages', a few milliseconds after Batsim's
    expected = (whole["ended"] - whole["submit"]).mean()
    assert metrics["mean_job_response_s"] == pytest.approx(expected, abs=0.01)
    assert f"jobs of tasks: {whole.height} of {per_job.height} served whole" in result.output
