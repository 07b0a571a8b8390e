"""A cell that starts loaded, in real Batsim 4.2.1: a converted window with its initial state on a
sampled cell, and a generated workload with a warm start; every initial task runs right after 0."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main

pytestmark = pytest.mark.batsim
MACHINES = 128
HORIZON = 600.0
#: Batsim starts a burst one message at a time, each a link latency apart: 0.6 ms x ~1,000 jobs.
RIGHT_AFTER_START = 1.0


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.output


def _started_initial_tasks(workload, output) -> tuple[int, int]:
    """(initial tasks in the workload, those Batsim started within RIGHT_AFTER_START s)."""
    initial = {str(job["id"]) for job in json.loads(workload.read_text())["jobs"] if job.get("initial")}
    jobs = pl.read_csv(output / "out_jobs.csv", schema_overrides={"job_id": pl.String})  # resubmissions: w0_7#1
    jobs = jobs.with_columns(pl.col("job_id").str.replace("^w0!", ""))
    started = jobs.filter(pl.col("job_id").is_in(list(initial)) & (pl.col("starting_time") <= RIGHT_AFTER_START))
    return len(initial), started.height


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = tmp_path_factory.mktemp("cell") / "cell.xml"
    _invoke(["platform", "--machines", str(MACHINES), "-o", str(path)])
    return path


def _run(platform, workload, output, batsim_binary) -> str:
    return _invoke(
        ["run", "--platform", str(platform), "--workload", str(workload), "-o", str(output)]
        + ["--horizon", str(HORIZON), "--timeout", "300", "--batsim", batsim_binary, "--no-progress"]
    )


def test_a_converted_window_starts_with_its_initial_state_running(tmp_path, platform, google_2011, batsim_binary):
    workload = tmp_path / "window.json"
    converted = _invoke(
        ["trace", "convert", str(google_2011), "-o", str(workload), "--start", "7000", "--end", "7300"]
        + ["--sample-cell", str(MACHINES), "--seed", "1"]
    )
    assert "initial state" in converted
    _run(platform, workload, tmp_path / "out", batsim_binary)
    initial, started = _started_initial_tasks(workload, tmp_path / "out")
    assert initial > 500 and started == initial


def test_a_warm_start_starts_with_the_steady_state_running(tmp_path, platform, batsim_binary):
    workload = tmp_path / "warm.json"
    _invoke(
        ["generate", "--preset", "google", "--tasks", "100", "--warm-start", "--seed", "2"]
        + ["--nb-res", str(MACHINES), "--arrival-scale", str(12583 / MACHINES), "-o", str(workload)]
    )
    _run(platform, workload, tmp_path / "out", batsim_binary)
    initial, started = _started_initial_tasks(workload, tmp_path / "out")
    assert initial > 500 and started == initial
