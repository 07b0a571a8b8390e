"""A run's tables read once and shared by its metrics and figures (experiments.run_tables), on the
hand-built run of tests/fixtures/run4: each table is what its function gives reading the files
itself, the metrics and figures are the same from shared tables, and out_jobs.csv is read once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from batsim_google.experiments import outputs as outputs_module
from batsim_google.experiments.batsim_accounting import machine_rows, workload_jobs
from batsim_google.experiments.figures import measured_waits
from batsim_google.experiments.job_groups import workload_groups
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import JOBS, RunOutputs, first_waits, started_jobs, task_ends, task_times
from batsim_google.experiments.run_figures import write_run_figures
from batsim_google.experiments.run_tables import STARTED_COLUMNS, RunTables
from batsim_google.experiments.suspension import suspension_intervals
from batsim_google.experiments.window import Window
from batsim_google.fitting import batsim_input

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLATFORM = FIXTURES / "cell4_energy.xml"
MAKESPAN = 225.0
#: The tables the figures read, kept by the metrics; and the large ones only the metrics read.
NARROW, LARGE = ("makespan", "waits", "machine_rows", "task_ends", "intervals"), ("jobs", "started", "tasks")


@pytest.fixture
def run4(tmp_path) -> RunOutputs:
    shutil.copytree(FIXTURES / "run4", tmp_path / "run4")
    return RunOutputs(tmp_path / "run4")


def _workload(run: RunOutputs, path: Path) -> Path:
    """run4's workload (its jobs' ids and submission times), with CPU requests and Google jobs."""
    submitted = dict(run.jobs().filter(pl.col("workload_name") == "w0").select("job_id", "submission_time").iter_rows())
    jobs = [
        {"id": i, "subtime": submitted[str(i)], "res": 1, "profile": "p", "cpu": 0.25, "google_job": i // 2}
        for i in range(9)
    ]
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 1}}}))
    return path


def test_each_table_is_what_its_function_gives_from_the_files(run4, tmp_path):
    workloads = [_workload(run4, tmp_path / "w.json")]
    tables = RunTables(run4, workloads)
    assert_frame_equal(tables.jobs, run4.jobs())
    assert tables.makespan == MAKESPAN
    assert_frame_equal(tables.waits, first_waits(run4.jobs()))
    assert_frame_equal(tables.requests, workload_jobs(workloads))
    assert_frame_equal(tables.groups, workload_groups(workloads))
    started = started_jobs(run4)
    assert_frame_equal(tables.started, started.select(*STARTED_COLUMNS, "task_id", "machine", "end_reason"))
    assert_frame_equal(tables.tasks, task_times(run4))
    assert_frame_equal(tables.task_ends, task_ends(run4))
    assert_frame_equal(tables.machine_rows, machine_rows(run4, workloads).drop("job"))
    assert_frame_equal(tables.intervals, suspension_intervals(started, run4.tasks(), MAKESPAN))
    assert tables.intervals.height > 0


def test_without_the_ledger_a_task_is_a_batsim_job(run4):
    for name in ("out_tasks.csv", "out_attempts.csv"):
        (run4.directory / name).unlink()
    assert_frame_equal(RunTables(run4).task_ends, task_ends(run4))
    assert RunTables(run4).task_ends.height == run4.jobs().height


def test_a_dropped_table_is_built_again_when_asked_for(run4):
    tables = RunTables(run4)
    first = tables.tasks
    tables.drop("tasks", "no such table")
    assert "tasks" not in vars(tables)
    assert_frame_equal(tables.tasks, first)


def test_dropping_the_jobs_builds_the_tables_made_from_them_first(run4):
    tables = RunTables(run4)
    tables.drop_jobs()
    assert {"makespan", "waits", "machine_rows", "started"} <= set(vars(tables))
    assert "jobs" not in vars(tables) and "requests" not in vars(tables)


def test_shared_tables_give_the_same_metrics_and_the_figures_their_narrow_tables(run4, tmp_path):
    workloads = [_workload(run4, tmp_path / "w.json")]
    window = Window(10.0, 168.75)
    alone = run_metrics(run4, PLATFORM, window, workloads)
    tables = RunTables(run4, workloads)
    assert run_metrics(run4, PLATFORM, window, workloads, tables) == alone
    assert set(NARROW) <= set(vars(tables)) and not set(LARGE) & set(vars(tables))
    row = {"window_start_s": 10.0, "window_end_s": 168.75}
    shared, read = measured_waits(run4, row, tables), measured_waits(run4, row)
    assert all((a == b).all() for a, b in zip(shared, read)) and shared[0].size > 0


def test_the_figures_from_shared_tables_are_those_drawn_from_the_files(run4, tmp_path):
    metrics = run_metrics(run4, PLATFORM, Window(0.0, 168.75))
    drawn = [path.read_bytes() for path in write_run_figures(run4, metrics, PLATFORM)]
    tables = RunTables(run4)
    metrics = run_metrics(run4, PLATFORM, Window(0.0, 168.75), tables=tables)
    shared = [path.read_bytes() for path in write_run_figures(run4, metrics, PLATFORM, tables=tables)]
    assert len(drawn) == 3 and shared == drawn


def test_the_metrics_and_figures_read_batsims_jobs_once(run4, monkeypatch):
    read, original = [], outputs_module._read_csv
    monkeypatch.setattr(
        outputs_module,
        "_read_csv",
        lambda path, columns: (read.append((Path(path).name, *columns)), original(path, columns))[1],
    )
    tables = RunTables(run4)
    write_run_figures(run4, run_metrics(run4, PLATFORM, tables=tables), PLATFORM, tables=tables)
    jobs = [columns for columns in read if columns[0] == f"out_{JOBS}"]
    assert len(jobs) == 1 and "allocated_resources" in jobs[0]
    assert [columns[0] for columns in read].count("out_tasks.csv") == 2  # whole, and task_id, cpu for the CPU


def test_the_run_forgets_the_workloads_tables_once_read(run4, tmp_path):
    workloads = [_workload(run4, tmp_path / "w.json")]
    batsim_input.forget_workload_files()
    RunTables(run4, workloads).read_workloads()
    assert batsim_input._read_file.cache_info().currsize == 1  # kept by default: a campaign reads them again
    tables = RunTables(run4, workloads, keep_workloads=False)
    tables.read_workloads()
    assert batsim_input._read_file.cache_info().currsize == 0
    assert tables.requests.height == 9 and tables.groups.height == 9


def test_the_workloads_are_checked_against_the_run(run4, tmp_path):
    from batsim_google.errors import InputFileError

    workload = _workload(run4, tmp_path / "w.json")
    shifted = json.loads(workload.read_text())
    shifted["jobs"][0]["subtime"] += 1.0
    workload.write_text(json.dumps(shifted))
    with pytest.raises(InputFileError, match="not the workload w0 the run"):
        RunTables(run4, [workload]).read_workloads()
