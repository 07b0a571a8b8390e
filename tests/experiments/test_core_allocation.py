"""Jobs on virtual cores (for evalys): no core held by two jobs at once, and the cores' busy time
is the run's CPU utilization; on the hand-built run of tests/fixtures/run4."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.errors import InputFileError
from batsim_google.experiments.core_allocation import core_allocation, interval_text
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = RunOutputs(FIXTURES / "run4")
PLATFORM = FIXTURES / "cell4_energy.xml"  # m0, m1: CPU 1; m2, m3: 0.5


def ids(text: str) -> set[int]:
    cores = set()
    for part in text.split():
        low, _, high = part.partition("-")
        cores.update(range(int(low), int(high or low) + 1))
    return cores


def test_interval_text():
    assert interval_text(np.array([0, 1, 2, 3, 7, 9, 10])) == "0-3 7 9-10"
    assert interval_text(np.array([], dtype=int)) == ""


def test_no_core_is_held_twice_and_busy_cores_are_the_cpu_utilization():
    allocation = core_allocation(RUN, PLATFORM, 4)  # every request here is a multiple of 1/4
    assert (
        allocation.cores == 4 + 4 + 2 + 2
        and allocation.too_small == allocation.no_core_free == allocation.short_of_cores == 0
    )
    jobs = allocation.jobs.with_columns(pl.col("starting_time", "finish_time").cast(pl.Float64))
    rows = list(jobs.iter_rows(named=True))
    for i, a in enumerate(rows):
        assert len(ids(a["allocated_resources"])) == int(a["requested_number_of_resources"])
        for b in rows[i + 1 :]:
            if a["starting_time"] < b["finish_time"] and b["starting_time"] < a["finish_time"]:
                assert not ids(a["allocated_resources"]) & ids(b["allocated_resources"]), (a["job_id"], b["job_id"])
    busy = sum(len(ids(r["allocated_resources"])) * (r["finish_time"] - r["starting_time"]) for r in rows)
    assert busy / (allocation.cores * 225.0) == pytest.approx(run_metrics(RUN, PLATFORM)["utilization"])
    # w0!0's first job on m0 (cores 0-3) takes all of it; w0!6 (CPU 0.25) takes one core of m2 (8-9)
    assert jobs.filter(pl.col("job_id") == "0")["allocated_resources"].to_list() == ["0-3"]
    assert jobs.filter(pl.col("job_id") == "6")["allocated_resources"].to_list() in (["8"], ["9"])


def test_requests_under_one_core_are_left_out_and_counted(tmp_path):
    allocation = core_allocation(RUN, PLATFORM, 2)  # w0!6's 0.25 is half a core
    assert allocation.too_small == 3  # its three jobs
    assert "6" not in allocation.jobs["job_id"].to_list()
    result = CliRunner().invoke(
        main, ["per-core-jobs", str(RUN.directory), "--platform", str(PLATFORM), "-o", str(tmp_path / "c.csv")]
    )
    assert result.exit_code == 0, result.output
    assert pl.read_csv(tmp_path / "c.csv").height == 14 and "on 3000 cores" in result.output


def test_a_run_without_the_ledger_is_refused(tmp_path):
    (tmp_path / "out_jobs.csv").write_text((FIXTURES / "run4" / "out_jobs.csv").read_text())
    with pytest.raises(InputFileError, match="CPU requests are unknown"):
        core_allocation(RunOutputs(tmp_path), PLATFORM, 4)


def test_a_job_on_an_over_committed_machine_gets_the_cores_free_and_is_counted_short(tmp_path):
    import shutil

    run = tmp_path / "run4"
    shutil.copytree(FIXTURES / "run4", run)
    tasks = (run / "out_tasks.csv").read_text()
    (run / "out_tasks.csv").write_text(tasks.replace("w0!6,task,0.5,0.25,", "w0!6,task,0.5,1.0,"))  # m2, m3: CPU 0.5
    allocation = core_allocation(RunOutputs(run), PLATFORM, 4)
    assert (allocation.no_core_free, allocation.short_of_cores) == (0, 3)  # w0!6's three jobs, each on 2 of 4 cores
    assert allocation.jobs.filter(pl.col("job_id").str.contains("6"))["requested_number_of_resources"].to_list() == [
        "2",
        "2",
        "2",
    ]
    result = CliRunner().invoke(
        main, ["per-core-jobs", str(run), "--platform", str(PLATFORM), "-o", str(tmp_path / "c.csv"), "--cores", "4"]
    )
    assert result.exit_code == 0, result.output
    assert (
        "0 finding no core free on an over-committed machine; 3 written with fewer cores than they asked"
        in result.output
    )
