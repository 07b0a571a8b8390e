"""``compare`` with schedulers of three kinds in real Batsim 4.2.1, on a 64-machine cell at the
Google cell's load per machine, with and without machine failures: the built-in Google-cell
scheduler, pybatsim's fillerSched (its variant for machine events, fillerSchedWithEvents: the
plain one runs jobs on failed machines and is refused with failures) and the whole-machine FCFS
of examples/policies."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main

pytestmark = pytest.mark.batsim
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TASKS = 600
CAMPAIGN = f"""
timeout = 300
[platforms]
cell64 = {{cell = 64}}
[workloads]
google = {{preset = "google", tasks = {TASKS}, seeds = [1], arrival_scale = "cell"}}
[failures]
none = {{}}
drawn = {{mtbf = 86400, mttr = 3600, horizon = 86400, seeds = [1]}}
[policies.google-cell]
energy = "always-on"
[schedulers.filler]
pybatsim = "fillerSchedWithEvents"
[schedulers.fcfs]
python = "{EXAMPLES / "policies" / "whole_machine_fcfs.py"}:WholeMachineFCFS"
"""


@pytest.fixture(scope="module")
def compared(tmp_path_factory, batsim_binary):
    folder = tmp_path_factory.mktemp("schedulers")
    (folder / "campaign.toml").write_text(CAMPAIGN)
    arguments = ["compare", str(folder / "campaign.toml"), "-o", str(folder / "out"), "--batsim", batsim_binary]
    result = CliRunner().invoke(main, [*arguments, "--no-progress", "--jobs", "2"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return folder / "out", result.output


def workload_waiting(directory: str) -> float:
    """Mean waiting time of the workload's jobs that started, from Batsim's out_jobs.csv."""
    with (Path(directory) / "out_jobs.csv").open() as handle:
        waits = [
            float(row["waiting_time"])
            for row in csv.DictReader(handle)
            if row["workload_name"] != "resubmit" and row["starting_time"]
        ]
    return sum(waits) / len(waits)


def test_every_run_finishes_with_batsims_metrics_for_all_three(compared):
    output, printed = compared
    runs = pl.read_csv(output / "runs.csv")
    assert runs.height == 6 and set(runs["status"]) == {"done"}
    assert runs.filter(pl.col("jobs") < TASKS).height == 0
    for column in ("makespan_s", "mean_waiting_s", "p95_waiting_s", "mean_bounded_slowdown", "utilization", "energy_j"):
        assert runs[column].null_count() == 0, column
    by_policy = {row["policy"]: row for row in runs.filter(pl.col("failures") == "drawn").iter_rows(named=True)}
    assert by_policy["filler"]["evictions"] is None and by_policy["fcfs"]["evictions"] == 0
    assert by_policy["fcfs"]["lost_to_failures"] > 0  # it kills what runs on a failed machine
    summary = pl.read_csv(output / "summary.csv")
    filler = summary.filter((pl.col("policy") == "filler") & (pl.col("metric") == "evictions"))
    assert filler["n"].to_list() == [0, 0] and filler["mean"].null_count() == 2
    # one accounting for every kind: the load of its jobs is in its energy too
    assert "cell64/google/none [filler], n = 1 runs (energy: delay-job load correction applied)" in printed


def test_whole_machine_fcfs_waits_longer_than_the_google_cell_scheduler(compared):
    output, _ = compared
    for failures in ("none", "drawn-s1"):
        folder = output / "runs" / "cell64" / "google-s1" / failures
        assert workload_waiting(folder / "fcfs") > 10 * workload_waiting(folder / "google-cell")
