"""A horizon in real Batsim 4.2.1: a run with services meant to live for months ends at the
horizon, what was open then is counted censored, every task ends once, and the metrics stop there."""

from __future__ import annotations

import json
import time

import polars as pl
import pytest
from cell_scenarios import PLATFORM, rows, task, workload
from click.testing import CliRunner

from batsim_google.cli import main

pytestmark = pytest.mark.batsim
HORIZON, WARMUP = 2000.0, 100.0
MONTH = 30 * 86400.0


def test_a_horizon_ends_a_run_of_long_services_and_censors_what_is_open(tmp_path, batsim_binary):
    jobs = [task(i, subtime=5.0 * i, delay=MONTH, kind="service", cpu=0.25, memory=0.25) for i in range(8)]
    jobs += [task(100 + i, subtime=20.0 * i, delay=300.0, priority=0.3) for i in range(150)]  # a queue builds
    jobs += [task(300 + i, subtime=HORIZON + 1000.0 * i, delay=10.0) for i in range(5)]  # after the horizon
    path = workload(tmp_path / "workload.json", jobs)
    output = tmp_path / "out"
    started = time.monotonic()
    result = CliRunner().invoke(
        main,
        ["run", "--platform", str(PLATFORM), "--workload", str(path), "-o", str(output)]
        + ["--horizon", str(HORIZON), "--warmup", str(WARMUP), "--timeout", "120", "--batsim", batsim_binary]
        + ["--no-progress"],
    )
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 120  # the services' month is never simulated
    tasks = pl.read_csv(output / "out_tasks.csv")
    assert sorted(tasks["task_id"]) == sorted(f"w0!{job['id']}" for job in jobs)  # every task once
    outcomes = dict(tasks.group_by("outcome").len().iter_rows())
    assert set(outcomes) == {"completed", "censored"}
    censored = tasks.filter(pl.col("outcome") == "censored")
    assert censored["ended"].min() >= HORIZON - 1 and censored.height == outcomes["censored"]
    assert {f"w0!{i}" for i in range(8)} | {f"w0!{300 + i}" for i in range(5)} <= set(censored["task_id"])
    assert censored.height > 13  # tasks still queued at the horizon too
    batsim_jobs = rows(output / "out_jobs.csv")
    assert max(float(job["finish_time"] or 0) for job in batsim_jobs) == pytest.approx(HORIZON, abs=1.0)
    summary = json.loads((output / "out_accounting.json").read_text())
    assert summary["balanced"] and summary["outcomes"]["censored"] == censored.height
    metrics = json.loads((output / "metrics.json").read_text())
    assert (metrics["window_start_s"], metrics["window_end_s"]) == pytest.approx((WARMUP, HORIZON), abs=1.0)
    assert metrics["censored"] == censored.height
    assert f"censored at the horizon {censored.height}" in result.output
