"""``compare`` and ``validate`` end to end in real Batsim 4.2.1: a small energy campaign (2 policies
x 2 seeds on a 64-machine cell) on local processes, resumed, partly redone on a local Dask cluster;
then a validation by simulation."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.execution import MARKER
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.queue_metrics import QUEUE_METRICS, deviation

pytestmark = pytest.mark.batsim

CAMPAIGN = """
timeout = 300
[platforms]
cell64 = {cell = 64}
[workloads]
google = {preset = "google", tasks = 1100, seeds = [1, 2]}
[policies.always-on]
energy = "always-on"
[policies.idle-sleep]
energy = "idle-sleep"
idle_timeout = 120
"""
PNG = b"\x89PNG\r\n\x1a\n"


def compare(campaign: Path, output: Path, batsim: str, *options: str):
    result = CliRunner().invoke(
        main, ["compare", str(campaign), "-o", str(output), "--batsim", batsim, "--no-progress", *options]
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, batsim_binary):
    folder = tmp_path_factory.mktemp("compare")
    path = folder / "campaign.toml"
    path.write_text(CAMPAIGN)
    output = compare(path, folder / "out", batsim_binary, "--jobs", "2")
    return path, folder / "out", output


def schedule(directory: str) -> dict:
    with (Path(directory) / "out_schedule.csv").open() as handle:
        return next(csv.DictReader(handle))


def test_campaign_writes_tables_and_figures(campaign):
    _, output, printed = campaign
    assert "4 runs: 4 simulated, 0 reused, 0 failed" in printed
    runs = pl.read_parquet(output / "runs.parquet")
    assert runs.equals(pl.read_csv(output / "runs.csv", schema=runs.schema))
    assert runs.height == 4 and set(runs["status"]) == {"done"}
    assert sorted(runs.select("workload_seed", "policy").rows()) == [
        (1, "always-on"),
        (1, "idle-sleep"),
        (2, "always-on"),
        (2, "idle-sleep"),
    ]
    summary = pl.read_parquet(output / "summary.parquet")
    energy = summary.filter(pl.col("metric") == "energy_j")
    assert energy.height == 2 and set(energy["n"]) == {2}
    assert all(low < mean < high for low, mean, high in energy.select("ci_low", "mean", "ci_high").rows())
    for name in ("energy_vs_waiting", "timeline-cell64-google-none", "suspension-cell64-google-none"):
        assert (output / "plots" / f"{name}.png").read_bytes()[:8] == PNG


def test_metrics_agree_with_batsim_and_with_the_files(campaign):
    _, output, _ = campaign
    runs = pl.read_parquet(output / "runs.parquet")
    for row in runs.iter_rows(named=True):
        batsim = schedule(row["directory"])
        assert row["makespan_s"] == pytest.approx(float(batsim["makespan"]), abs=1e-5)
        # Batsim's own total counts from the first submission; ours from time 0 (a few joules apart).
        assert row["batsim_energy_j"] == pytest.approx(float(batsim["consumed_joules"]), rel=1e-6)
        assert 0 < row["load_energy_j"] and row["energy_j"] == pytest.approx(
            row["batsim_energy_j"] + row["load_energy_j"]
        )
        assert row["balanced"] and row["tasks"] == 1100
        assert row["evictions"] > 0 and row["resubmissions"] == row["evictions"]  # no failures, immediate restarts
        assert row["suspended_tasks"] > 0 and 0 < row["utilization"] < 1
        marker = json.loads((Path(row["directory"]) / MARKER).read_text())
        platform = output / "inputs" / "platforms"
        recomputed = run_metrics(RunOutputs(Path(row["directory"])), next(platform.glob("*.xml")))
        assert marker["metrics"].keys() == recomputed.keys()
        for name, value in recomputed.items():  # sums over jobs may differ in their last bit
            expected = pytest.approx(value, rel=1e-12) if isinstance(value, float) else value
            assert marker["metrics"][name] == expected, name


def test_idle_sleep_saves_energy_on_the_same_workloads(campaign):
    _, output, _ = campaign
    runs = pl.read_parquet(output / "runs.parquet")
    for seed in (1, 2):
        on, sleep = (
            runs.filter((pl.col("workload_seed") == seed) & (pl.col("policy") == p)).row(0, named=True)
            for p in ("always-on", "idle-sleep")
        )
        assert sleep["energy_j"] < 0.5 * on["energy_j"]
        # the same tasks, as many completed (evictions, drawn where the placements differ, move the makespan)
        assert sleep["tasks"] == on["tasks"] and sleep["completed"] == on["completed"]


def test_finished_runs_are_not_redone(campaign, batsim_binary):
    path, output, _ = campaign
    markers = {p: p.stat().st_mtime_ns for p in output.glob(f"runs/**/{MARKER}")}
    started = time.monotonic()
    printed = compare(path, output, batsim_binary)
    assert "4 runs: 0 simulated, 4 reused, 0 failed" in printed
    assert {p: p.stat().st_mtime_ns for p in output.glob(f"runs/**/{MARKER}")} == markers
    assert time.monotonic() - started < 30


def test_dask_cluster_redoes_half_finished_runs(campaign, batsim_binary):
    from distributed import LocalCluster

    path, output, _ = campaign
    before = pl.read_parquet(output / "runs.parquet")
    half_finished = output / "runs/cell64/google-s1/none/idle-sleep"
    (half_finished / MARKER).unlink()
    (half_finished / "out_jobs.csv").write_text("truncated")
    shutil.rmtree(output / "runs/cell64/google-s2/none/always-on")
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        printed = compare(path, output, batsim_binary, "--dask", cluster.scheduler_address)
    assert "4 runs: 2 simulated, 2 reused, 0 failed" in printed
    after = pl.read_parquet(output / "runs.parquet")
    metrics = [c for c in before.columns if c not in ("status", "wall_seconds")]
    assert after.select(metrics).equals(before.select(metrics))  # the simulations are deterministic
    assert sorted(after.filter(pl.col("status") == "done")["directory"].to_list()) == sorted(
        [str(half_finished.resolve()), str((output / "runs/cell64/google-s2/none/always-on").resolve())]
    )


def test_validate_by_simulation(tmp_path, batsim_binary):
    runner = CliRunner()
    platform, original = tmp_path / "cell64.xml", tmp_path / "original.json"
    assert runner.invoke(main, ["platform", "--machines", "64", "-o", str(platform)]).exit_code == 0
    generated = runner.invoke(
        main, ["generate", "--tasks", "600", "--seed", "11", "--nb-res", "64", "-o", str(original)]
    )
    assert generated.exit_code == 0
    result = runner.invoke(
        main,
        [
            "validate",
            str(original),
            "--platform",
            str(platform),
            "--replications",
            "2",
            "--seed",
            "5",
            "-o",
            str(tmp_path / "validation"),
            "--batsim",
            batsim_binary,
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((tmp_path / "validation" / "validation.json").read_text())
    assert (tmp_path / "validation" / "model.toml").is_file() and report["tasks"] == 600
    assert [m["metric"] for m in report["metrics"]] == list(QUEUE_METRICS)
    assert all(m["replications"] == 2 for m in report["metrics"] if m["mean"] is not None)
    # Dev from the runs' own markers: the original's metrics against the replications' mean.
    markers = {
        p.parts[-4]: json.loads(p.read_text())["queue"] for p in (tmp_path / "validation" / "runs").rglob(MARKER)
    }
    assert sorted(markers) == ["generated-s5", "generated-s6", "original"]
    means = {
        m: (markers["generated-s5"][m] + markers["generated-s6"][m]) / 2
        for m in QUEUE_METRICS
        if None not in (markers["generated-s5"][m], markers["generated-s6"][m])
    }
    assert report["deviation"] == pytest.approx(deviation(markers["original"], means)[0])
    assert math.isfinite(report["deviation"]) and report["deviation"] >= 0
    assert f"Dev = {report['deviation']:.4f}" in result.output


def test_a_script_without_the_main_guard_runs_its_campaign_on_local_workers(tmp_path, batsim_binary):
    """The workers (``spawn``) would import the script and start its campaign again in each, which
    Python refuses (BrokenProcessPool): they start without it."""
    (tmp_path / "campaign.toml").write_text(
        "timeout = 120\n[platforms]\ncell8 = {cell = 8}\n[workloads]\n"
        'google = {preset = "google", tasks = 40, seeds = [1, 2]}\n[policies.always-on]\nenergy = "always-on"\n'
    )
    script = (
        "from batsim_google import compare, load_campaign\n"
        f"result = compare(load_campaign('campaign.toml'), 'out', batsim={batsim_binary!r}, workers=2, progress=False)\n"
        "print(len(result.records), [record.status for record in result.records])\n"
    )
    (tmp_path / "unguarded.py").write_text(script)
    done = subprocess.run([sys.executable, "unguarded.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "2 ['done', 'done']"
