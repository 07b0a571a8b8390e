"""The figures' structure where it can fail a paper: the axes' scales and limits suit the data (no
matplotlib warning), counts have integer ticks, the wait CDFs count the tasks the metrics count,
the power panel is drawn from Batsim's power-state changes when it wrote no energy file."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

from batsim_google.experiments.figures import (
    count_axis,
    energy_unit,
    measured_waits,
    plural,
    value_scale,
    waiting,
    write_plots,
)
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.report import summary_table
from batsim_google.experiments.run_figures import sliced_median, write_run_figures
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


def _row(outputs: RunOutputs, metrics: dict, policy: str = "p", seed: int = 1) -> dict:
    return {
        "platform": "cell4",
        "workload": "w",
        "workload_seed": seed,
        "failures": "none",
        "failure_seed": None,
        "policy": policy,
        "status": "done",
        "wall_seconds": 1.0,
        **metrics,
        "directory": str(outputs.directory),
    }


@pytest.mark.parametrize(
    ("values", "zero", "scale", "limits"),
    [
        ([0.0, 0.0, 0.0], True, "linear", (0.0, 1.0)),  # all waits 0: a width, not identical limits
        ([5.0, 5.0], True, "linear", (4.0, 6.0)),
        ([1.0, 1.0], False, "linear", (0.0, 2.0)),  # every slowdown 1
        ([0.0, 3.0, 4000.0], True, "symlog", (-0.5, 8000.0)),  # decades, with zeros
        ([1.0, 1.2, 1.4], False, "linear", None),  # slowdowns within a decade: no 1.1 x 10^0 labels
        ([1.0, 30.0, 500.0], False, "log", None),
    ],
)
def test_an_axis_suits_its_values(values, zero, scale, limits):
    figure, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax.plot(values, np.linspace(0, 1, len(values)))
        value_scale(ax, np.array(values), zero=zero)
        figure.canvas.draw()
    assert ax.get_xscale() == scale
    if limits:
        assert ax.get_xlim() == pytest.approx(limits)
    assert len([t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]) >= 2
    plt.close(figure)


def test_counts_have_integer_ticks_and_words_their_plural():
    figure, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    count_axis(ax.yaxis)
    assert all(float(tick).is_integer() for tick in ax.get_yticks())
    plt.close(figure)
    assert (plural(1, "run"), plural(2, "run"), plural(0, "task")) == ("1 run", "2 runs", "0 tasks")
    assert energy_unit(4.4e6) == (1e6, "MJ") and energy_unit(2e9) == (1e9, "GJ") and energy_unit(5.0) == (1.0, "J")


def test_the_wait_cdf_counts_the_tasks_of_the_window_as_the_metrics_do(run4, monkeypatch):
    metrics = run_metrics(run4, PLATFORM, Window(20.0, 168.75))
    waits, slowdowns = measured_waits(run4, metrics)
    assert waits.mean() == pytest.approx(metrics["mean_waiting_s"])
    assert slowdowns.mean() == pytest.approx(metrics["mean_bounded_slowdown"])
    everything, _ = measured_waits(run4, {})
    assert waits.size < everything.size  # the tasks submitted before the warm-up are left out
    saved = _saved(monkeypatch)
    waiting(run4.directory.parent / "waiting.png", pl.DataFrame([_row(run4, metrics)]))
    label = saved[0].axes[0].get_legend().get_texts()[0].get_text()
    assert label == f"p ({plural(waits.size, 'task')}, 1 run)"


def test_equal_waits_draw_without_warnings(run4, monkeypatch):
    jobs = pl.read_csv(run4.path("jobs.csv"), infer_schema_length=0)
    jobs.with_columns(pl.lit("0").alias("waiting_time")).write_csv(run4.path("jobs.csv"))
    saved = _saved(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        waiting(run4.directory.parent / "waiting.png", pl.DataFrame([_row(run4, run_metrics(run4, PLATFORM))]))
    wait = saved[0].axes[0]
    assert wait.get_xlim() == (0.0, 1.0) and len(wait.get_xticks()) >= 2


def test_the_campaign_figures_a_paper_takes(tmp_path, monkeypatch):
    runs = []
    for policy, seed in (("always-on", 1), ("always-on", 2), ("idle-sleep", 1)):
        shutil.copytree(FIXTURES / "run4", tmp_path / f"{policy}-{seed}")
        outputs = RunOutputs(tmp_path / f"{policy}-{seed}")
        runs.append(_row(outputs, run_metrics(outputs, PLATFORM, Window(10.0, 168.75)), policy, seed))
    table = pl.DataFrame(runs, schema_overrides={"failure_seed": pl.Int64}, infer_schema_length=None)
    saved = _saved(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_plots(tmp_path / "plots", table, summary_table(table), {"cell4": PLATFORM})
    energy, timeline, suspension, _ = saved
    ax = energy.axes[0]
    assert ax.get_xscale() == "symlog" and ax.get_xlim()[0] == 0.0 and ax.get_ylim()[0] == 0.0
    assert ax.get_ylabel() == "energy (kJ)"  # run4's 45 kJ, not 0.000045 GJ
    assert "over 1-2 runs" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["always-on", "idle-sleep"]
    # the machine states' legend once, beside the first panel; machines counted in whole numbers
    assert [a.get_legend() is not None for a in timeline.axes] == [True, True, False]
    assert all(float(t).is_integer() for t in timeline.axes[1].get_yticks())
    count = suspension.axes[1]
    assert all(float(t).is_integer() for t in count.get_yticks())
    assert count.get_xlim() == (0.0, 168.75)  # the measured span, as the timeline's


def test_the_power_panel_of_a_run_without_batsims_energy_file_comes_from_its_pstates(run4, monkeypatch):
    """The patched Batsim's --disable-energy-tracing writes no out_consumed_energy.csv; the power
    follows from out_pstate_changes.csv: every machine at pstate 0, 2 x 100 + 2 x 60 W idle."""
    run4.path("consumed_energy.csv").unlink()
    run4.path("pstate_changes.csv").write_text("time,machine_id,new_pstate\n0,0-3,0\n")
    saved = _saved(monkeypatch)
    write_run_figures(run4, run_metrics(run4, PLATFORM), PLATFORM)
    power = saved[0].axes[1]
    assert not power.texts  # no "not measured"
    assert power.lines[0].get_ydata()[0] == pytest.approx(0.32)  # kW


def test_the_median_line_breaks_where_a_slice_holds_no_task():
    middles, medians = sliced_median(np.array([1.0, 9.0]), np.array([4.0, 6.0]), 12.0, 3)
    assert middles.tolist() == [2.0, 6.0, 10.0]
    assert medians[0] == 4.0 and np.isnan(medians[1]) and medians[2] == 6.0


def test_the_utilization_curve_averages_to_the_utilization_metric_for_any_scheduler(run4, tmp_path):
    """Its mean over the window is the metric drawn beside it, with the ledger (run4) and without
    (Batsim's files alone: one job asking 0.25 CPU, one none, a whole machine)."""
    from batsim_google.experiments.metrics import allocated_cpu_over_time
    from batsim_google.experiments.timeline import time_average
    from batsim_google.platform.simgrid_xml import compute_hosts

    without, workload = _whole_machine_run(tmp_path / "no-ledger")
    for outputs, workloads in ((run4, []), (without, [workload])):
        metrics = run_metrics(outputs, PLATFORM, Window(10.0, 140.0), workloads)
        steps = allocated_cpu_over_time(outputs, compute_hosts(PLATFORM), workloads)
        mean = time_average(steps["time"].to_numpy(), steps["value"].to_numpy(), 10.0, 140.0)
        assert mean == pytest.approx(metrics["utilization"])


def _whole_machine_run(folder: Path) -> tuple[RunOutputs, Path]:
    folder.mkdir()
    header = (
        "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"
        "final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,"
        "allocated_resources,consumed_energy,metadata"
    )
    rows = [
        "0,w0,0,0,1,200,1,COMPLETED_SUCCESSFULLY,0,100,100,0,100,1,2,0,",
        "1,w0,1,0,1,200,1,COMPLETED_SUCCESSFULLY,50,100,150,50,150,1.5,0,0,",
    ]
    (folder / "out_jobs.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    workload = folder.parent / "workload.json"
    jobs = [
        {"id": 0, "subtime": 0, "res": 1, "walltime": 200, "profile": "a", "cpu": 0.25},
        {"id": 1, "subtime": 0, "res": 1, "walltime": 200, "profile": "a"},
    ]
    workload.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"a": {"type": "delay", "delay": 1}}}))
    return RunOutputs(folder), workload


def test_a_run_in_which_no_job_ran_draws_its_timeline_without_warnings(run4, monkeypatch):
    jobs = pl.read_csv(run4.path("jobs.csv"), infer_schema_length=0)
    rejected = jobs.with_columns(
        pl.lit("REJECTED").alias("final_state"),
        *[pl.lit(None, dtype=pl.String).alias(c) for c in ("starting_time", "execution_time", "finish_time")],
    )
    metrics = run_metrics(run4, PLATFORM)
    metrics.update(
        window_start_s=0.0, window_end_s=0.0, makespan_s=0.0, suspended_tasks=0
    )  # as for a run that ran no job
    rejected.write_csv(run4.path("jobs.csv"))
    saved = _saved(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_run_figures(run4, metrics, PLATFORM)
    assert saved[0].axes[-1].get_xlim() == (0.0, 1.0)
