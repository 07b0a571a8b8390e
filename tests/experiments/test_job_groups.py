"""Jobs of tasks in the metrics: the run of tests/fixtures/run4 with its tasks grouped into Google
jobs by a workload written for it; every expected value is worked out from run4's README."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from batsim_google.errors import InputFileError
from batsim_google.experiments.job_groups import JOB_METRICS, workload_groups
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.window import Window

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = RunOutputs(FIXTURES / "run4")
#: run4's tasks by Google job: A = 0, 1 (submitted 0, end 130 and 90, completed); B = 2, 5
#: (submitted 10, end 30 and 14, completed); C = 6, 7 (submitted 20 and 100: not restarted,
#: killed by its user); D = 8 (150-225, completed); tasks 3 and 4 belong to no job.
GOOGLE_JOBS = {0: 100, 1: 100, 2: 200, 5: 200, 6: 300, 7: 300, 8: 400}


def _workload(path: Path, google_jobs: dict[int, int]) -> Path:
    """The workload run4 simulated (its jobs' ids and submission times), with ``google_jobs``."""
    submitted = dict(RUN.jobs().filter(pl.col("workload_name") == "w0").select("job_id", "submission_time").iter_rows())
    jobs = [{"id": i, "subtime": submitted[str(i)], "res": 1, "profile": "p"} for i in range(9)]
    for job in jobs:
        if job["id"] in google_jobs:
            job["google_job"] = google_jobs[job["id"]]
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 1}}}))
    return path


def test_a_jobs_response_runs_from_its_first_submission_to_its_last_end(tmp_path):
    metrics = run_metrics(RUN, workloads=[_workload(tmp_path / "w.json", GOOGLE_JOBS)])
    assert (metrics["google_jobs"], metrics["google_jobs_completed"]) == (4, 3)  # C lost a task
    assert metrics["mean_job_response_s"] == pytest.approx((130 + 20 + 75) / 3)  # A, B, D
    assert metrics["p95_job_response_s"] == pytest.approx(75 + 0.9 * (130 - 75))  # linear, between 75 and 130


def test_jobs_count_in_the_window_their_first_task_was_submitted_in(tmp_path):
    metrics = run_metrics(RUN, window=Window(5.0), workloads=[_workload(tmp_path / "w.json", GOOGLE_JOBS)])
    assert (metrics["google_jobs"], metrics["google_jobs_completed"]) == (3, 2)  # A began at 0
    assert metrics["mean_job_response_s"] == pytest.approx((20 + 75) / 2)


def test_without_the_ledger_a_job_is_whole_when_its_batsim_jobs_succeeded(tmp_path):
    for name in ("jobs.csv", "machine_states.csv", "consumed_energy.csv"):
        shutil.copy(RUN.path(name), tmp_path / f"out_{name}")
    metrics = run_metrics(RunOutputs(tmp_path), workloads=[_workload(tmp_path / "w.json", GOOGLE_JOBS)])
    # w0!0 and w0!1 were evicted: their Batsim jobs did not succeed, so A is not whole
    assert (metrics["google_jobs"], metrics["google_jobs_completed"]) == (4, 2)
    assert metrics["mean_job_response_s"] == pytest.approx((20 + 75) / 2)


def test_without_jobs_of_tasks_the_job_metrics_are_null(tmp_path):
    assert all(run_metrics(RUN)[name] is None for name in JOB_METRICS)
    no_jobs = run_metrics(RUN, workloads=[_workload(tmp_path / "w.json", {})])
    assert all(no_jobs[name] is None for name in JOB_METRICS)


def test_each_workload_has_its_own_job_ids_and_a_broken_one_is_named(tmp_path):
    first = _workload(tmp_path / "a.json", {0: 1, 1: 1})
    second = _workload(tmp_path / "b.json", {0: 1})
    groups = workload_groups([first, second]).rows()
    assert groups == [("w0!0", "w0!1"), ("w0!1", "w0!1"), ("w1!0", "w1!1")]
    broken = tmp_path / "broken.json"
    broken.write_text('{"nb_res": 4, "jobs": [{"id": 0, "google_job": 1}')
    with pytest.raises(InputFileError, match="broken.json: not a Batsim workload"):
        workload_groups([broken])
    nameless = tmp_path / "nameless.json"
    nameless.write_text('{"nb_res": 4, "jobs": [{"google_job": 1}], "profiles": {}}')
    with pytest.raises(InputFileError, match="nameless.json: a job with a google_job has no id"):
        workload_groups([nameless])


def test_the_metrics_command_and_runs_summary_show_the_jobs_of_tasks(tmp_path):
    from click.testing import CliRunner

    from batsim_google.cli import main
    from batsim_google.cli.metrics import summary_lines

    workload = _workload(tmp_path / "w.json", GOOGLE_JOBS)
    result = CliRunner().invoke(main, ["metrics", str(RUN.directory), "--workload", str(workload)])
    assert result.exit_code == 0, result.output
    assert "google_jobs             4\n" in result.output and "mean_job_response_s     75\n" in result.output
    lines = summary_lines(run_metrics(RUN, workloads=[workload]))
    assert lines[2] == "jobs of tasks: 3 of 4 served whole, response mean 75 s, p95 124.5 s"
    assert len(summary_lines(run_metrics(RUN))) == 2  # no jobs of tasks, no line
