"""A single run's figures, drawn on the hand-built run of tests/fixtures/run4: a time axis that
ends with the measurement window, Batsim's power from its energy, suspensions of 0 s shown."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

from batsim_google.experiments.figures import common_time_axis
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.run_figures import power_over_time, sliced_median, write_run_figures
from batsim_google.experiments.window import Window

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLATFORM = FIXTURES / "cell4_energy.xml"


def _saved(monkeypatch) -> list[Figure]:
    saved, save = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, path, **kw: (saved.append(self), save(self, path, **kw)))
    return saved


@pytest.fixture
def run4(tmp_path) -> RunOutputs:
    shutil.copytree(FIXTURES / "run4", tmp_path / "run4")
    return RunOutputs(tmp_path / "run4")


def test_a_run_draws_its_figures_over_the_measurement_window(run4, monkeypatch):
    saved = _saved(monkeypatch)
    metrics = run_metrics(run4, PLATFORM, Window(0.0, 168.75))
    written = write_run_figures(run4, metrics, PLATFORM)
    assert [path.name for path in written] == ["timeline.png", "waiting.png", "suspension.png"]
    assert all(path.stat().st_size > 10_000 for path in written)
    timeline = saved[0]
    usage, power, states, waits = timeline.axes
    assert waits.get_xlim() == (0.0, 168.75)  # seconds; the drain to 225 s is left out and said so
    assert "went on to 225 s" in timeline._suptitle.get_text()
    assert usage.lines[1].get_ydata()[0] == pytest.approx(metrics["utilization"])  # the window's mean
    watts = power.lines[0].get_ydata() * 1e3
    assert watts[:3] == pytest.approx([410.0, 245.0, (45000.5 - 33500.0) / 95.0])
    first_waits = sorted(waits.collections[0].get_offsets()[:, 1])
    assert first_waits[-1] == 30.0 and len(first_waits) == 8  # the user's jobs that started (w0!4 rejected)


def test_the_suspension_cdf_shows_its_zeros(run4, monkeypatch):
    """A task evicted and restarted at the same instant was suspended 0 s: on a log axis it would
    vanish; here it is a dot at 0 and a share in the legend."""
    attempts = pl.read_csv(run4.path("attempts.csv"))
    jobs = pl.read_csv(run4.path("jobs.csv"), infer_schema_length=0)
    # w0!8 (runs 150-225) evicted at 160 and restarted at once, still within its work
    jobs = jobs.with_columns(
        pl.when(pl.col("job_id") == "8")
        .then(pl.lit("160.000000"))
        .otherwise(pl.col("finish_time"))
        .alias("finish_time"),
        pl.when(pl.col("job_id") == "8")
        .then(pl.lit("COMPLETED_KILLED"))
        .otherwise(pl.col("final_state"))
        .alias("final_state"),
    )
    again = jobs.filter(pl.col("job_id") == "8").with_columns(
        pl.lit("w0_8#1").alias("job_id"),
        pl.lit("resubmit").alias("workload_name"),
        pl.lit("160.000000").alias("submission_time"),
        pl.lit("160.000000").alias("starting_time"),
        pl.lit("225.000000").alias("finish_time"),
        pl.lit("COMPLETED_SUCCESSFULLY").alias("final_state"),
    )
    pl.concat([jobs, again]).write_csv(run4.path("jobs.csv"))
    attempts = attempts.with_columns(
        pl.when(pl.col("job_id") == "w0!8").then(pl.lit("evicted")).otherwise(pl.col("end_reason")).alias("end_reason")
    )
    extra = attempts.filter(pl.col("job_id") == "w0!8").with_columns(
        pl.lit("resubmit!w0_8#1").alias("job_id"), pl.lit("success").alias("end_reason")
    )
    pl.concat([attempts, extra]).write_csv(run4.path("attempts.csv"))
    saved = _saved(monkeypatch)
    write_run_figures(run4, run_metrics(run4, PLATFORM), PLATFORM)
    cdf = saved[-1].axes[0]
    assert cdf.get_xscale() == "symlog"
    dot = cdf.lines[1]
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == (0.0, 0.25)  # one of four suspended tasks: 0 s
    assert "4 tasks, 25% at 0 s" in cdf.get_legend().get_texts()[0].get_text()


def test_power_is_the_slope_of_batsims_energy_and_waits_a_median_per_slice():
    power = power_over_time(pl.DataFrame({"time": [10.0, 10.0, 20.0], "energy": [100.0, 100.0, 400.0]}))
    assert power.to_dict(as_series=False) == {"time": [0.0, 10.0], "value": [10.0, 30.0]}
    middles, medians = sliced_median(np.array([1.0, 2.0, 3.0, 9.0]), np.array([5.0, 1.0, 3.0, 7.0]), 10.0, 2)
    assert middles.tolist() == [2.5, 7.5] and medians.tolist() == [3.0, 7.0]


def test_runs_of_different_lengths_share_the_measured_span():
    runs = pl.DataFrame({"makespan_s": [2_747_520.0, 3600.0], "window_end_s": [19_724.0, 3600.0]})
    assert common_time_axis(runs) == 19_724.0


def test_a_campaign_timeline_of_runs_of_different_lengths_ends_with_their_windows(tmp_path, monkeypatch):
    from batsim_google.experiments.figures import timeline

    rows = []
    for policy, end in (("short", 100.0), ("long", 168.75)):
        shutil.copytree(FIXTURES / "run4", tmp_path / policy)
        rows.append(
            {
                "platform": "cell4",
                "workload": "w",
                "failures": "none",
                "policy": policy,
                "status": "done",
                "workload_seed": 1,
                "failure_seed": None,
                "directory": str(tmp_path / policy),
                "makespan_s": 225.0,
                "window_start_s": 0.0,
                "window_end_s": end,
            }
        )
    saved = _saved(monkeypatch)
    timeline(tmp_path / "timeline.png", pl.DataFrame(rows), PLATFORM)
    assert saved[0].axes[-1].get_xlim() == (0.0, 168.75)  # not the makespan: Batsim's states after it
