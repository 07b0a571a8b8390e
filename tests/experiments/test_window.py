"""The measurement window: each job's share inside it, Batsim's energy read at both ends, and the
tasks submitted inside it; on the hand-built run of tests/fixtures/run4 (its README tells each
task's story, from which every expected value here is worked out)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from batsim_google.errors import ParameterError
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.queue_metrics import queue_metrics
from batsim_google.experiments.window import Window, energy_between, seconds_inside, span_window, window_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = RunOutputs(FIXTURES / "run4")
PLATFORM = FIXTURES / "cell4_energy.xml"
CAPACITY = 3.0  # CPU of m0, m1 (1 each), m2, m3 (0.5 each)
MAKESPAN = 225.0


def test_a_job_counts_its_share_inside_the_window():
    jobs = pl.DataFrame({"start": [0.0, 5.0, 12.0, 30.0, 8.0], "finish": [4.0, 15.0, 18.0, 40.0, 30.0]})
    inside = jobs.select(seconds_inside("start", "finish", 10.0, 20.0)).to_series().to_list()
    assert inside == [0.0, 5.0, 6.0, 0.0, 10.0]  # before, straddling the start, inside, after, across


def test_energy_is_read_at_both_ends_of_the_window():
    records = pl.DataFrame({"time": [10.0, 20.0], "energy": [100.0, 400.0]})  # 10 W, then 30 W
    assert energy_between(records, 5.0, 15.0) == pytest.approx(50.0 + 150.0)
    assert energy_between(records, 0.0, 20.0) == pytest.approx(400.0)
    assert energy_between(records, 20.0, 30.0) == 0.0  # the run had ended


def test_metrics_over_a_window_of_the_hand_built_run():
    metrics = run_metrics(RUN, PLATFORM, Window(10.0, 150.0))
    assert (metrics["window_start_s"], metrics["window_end_s"]) == (10.0, 150.0)
    # CPU-seconds inside [10, 150]: w0_0#1 100, w0_1#1 2.5, w0_1#2 25, w0!2 20, w0!3 7.5, w0_3#1 62.5,
    # w0!5 2, w0!6's three jobs 5 + 1.25 + 2, w0!7 20 (w0!0, w0!1 ended at 10, w0!8 starts at 150)
    assert metrics["utilization"] == pytest.approx(247.75 / (CAPACITY * 140.0))
    # kept: the completed jobs and the service's last one, not the evicted or failed ones
    assert metrics["delivered_cpu_s"] == pytest.approx(100 + 25 + 20 + 62.5 + 2)
    # Batsim's power: 245 W from 10 to 130, 121.05 W from 130 to 225
    assert metrics["batsim_energy_j"] == pytest.approx(245 * 120 + 121.05263 * 20, rel=1e-5)
    # submitted in [10, 150): w0!2, w0!5, w0!6 (waited 0) and w0!7 (waited 30)
    assert metrics["mean_waiting_s"] == pytest.approx(7.5)
    assert metrics["mean_bounded_slowdown"] == 1.0  # w0!2 and w0!5; w0!0, w0!1 and w0!3 came before
    assert metrics["completed"] == 5  # outcomes are the whole run's


def test_windows_that_split_the_run_add_up_to_the_whole_run():
    whole = run_metrics(RUN, PLATFORM)
    parts = [run_metrics(RUN, PLATFORM, Window(*bounds)) for bounds in ((0.0, 100.0), (100.0, None))]
    for name in ("batsim_energy_j", "load_energy_j", "energy_j"):
        assert sum(part[name] for part in parts) == pytest.approx(whole[name])
    cpu_seconds = [part["utilization"] * CAPACITY * (part["window_end_s"] - part["window_start_s"]) for part in parts]
    assert sum(cpu_seconds) == pytest.approx(whole["utilization"] * CAPACITY * MAKESPAN)
    assert Window().bounds(MAKESPAN) == (0.0, MAKESPAN)
    assert run_metrics(RUN, PLATFORM, Window())["mean_waiting_s"] == whole["mean_waiting_s"]


def test_a_window_past_the_run_or_backwards_is_refused():
    with pytest.raises(ParameterError, match="leaves nothing of a run that ended at 225"):
        run_metrics(RUN, PLATFORM, Window(300.0))
    with pytest.raises(ParameterError, match="must come after the warm-up"):
        Window(100.0, 50.0)
    assert window_of(0.0, None) is None and window_of(60.0, 0.0) == Window(60.0, None)
    assert Window(0.0, 1000.0).bounds(MAKESPAN) == (0.0, MAKESPAN)  # a horizon after the run's end
    assert Window(57.0).bounds(0.0) == (57.0, 57.0)  # no job ran (all rejected): an empty window, no figure


def test_queue_metrics_over_a_window():
    metrics = queue_metrics(RUN, window=Window(10.0, 150.0))
    # submitted in [10, 150) and ran: w0!2 (20 s), w0!5 (4 s), w0!6 (20 + 5 + 8 s), w0!7 (20 s)
    assert metrics["mean_execution_s"] == pytest.approx((20 + 4 + 33 + 20) / 4)
    # every job's seconds inside [10, 150]: 100 + 5 + 50 + 20 + 15 + 125 + 4 + 20 + 5 + 8 + 20
    assert metrics["mean_running_tasks"] == pytest.approx(372 / 140)


def test_runs_default_window_is_the_workloads_span():
    """run4's user jobs are submitted from 0 to 150 s, nine of them: the span ends one mean gap
    (150 / 8 s) after the last, so that the last task is measured, and the drain after is not."""
    window = span_window(RUN.submissions())
    assert window == Window(0.0, 150.0 + 150.0 / 8)
    metrics = run_metrics(RUN, PLATFORM, window)
    assert metrics["window_end_s"] == 168.75 < metrics["makespan_s"] == MAKESPAN
    whole = run_metrics(RUN, PLATFORM)
    assert metrics["mean_waiting_s"] == whole["mean_waiting_s"]  # every user job's wait is inside
    assert metrics["utilization"] != whole["utilization"]


def test_the_span_starts_at_a_later_warm_up_and_is_none_when_there_is_none():
    assert span_window([10.0, 20.0, 30.0], warmup=15.0) == Window(15.0, 40.0)
    assert span_window([10.0, 20.0, 30.0], warmup=5.0) == Window(10.0, 40.0)  # nothing before the first
    assert span_window([10.0, 20.0, 30.0], warmup=40.0) is None  # past the span: to the run's end
    assert span_window([0.0, 0.0, 0.0]) is None  # all at once (a warm start alone)
    assert span_window([5.0]) is None


def test_a_task_cut_by_the_horizon_delivers_its_work_so_far_with_or_without_a_window(tmp_path):
    """The whole run is the window from 0 to its end: w0!8, here still running when the scheduler
    stopped at its horizon (225 s), delivered 75 CPU-seconds whether a window is given or not (the
    whole run counted only tasks that did all their work: 10x below a window from 1 s on a cell
    of services cut by the horizon)."""
    import shutil

    run = tmp_path / "run4"
    shutil.copytree(FIXTURES / "run4", run)
    attempts = (run / "out_attempts.csv").read_text()
    (run / "out_attempts.csv").write_text(
        attempts.replace("w0!8,w0!8,0,0,149.9994,225.0012,success", "w0!8,w0!8,0,0,149.9994,225.0012,horizon")
    )
    tasks = (run / "out_tasks.csv").read_text()
    (run / "out_tasks.csv").write_text(tasks.replace("75.0,0,completed,225.0012,", "75.0,0,censored,225.0012,"))
    whole = run_metrics(RunOutputs(run), PLATFORM)["delivered_cpu_s"]
    from_one_second = run_metrics(RunOutputs(run), PLATFORM, Window(1.0, None))["delivered_cpu_s"]
    assert whole == pytest.approx(run_metrics(RUN, PLATFORM)["delivered_cpu_s"], abs=0.01)  # w0!8's 75 s kept
    assert from_one_second == pytest.approx(whole, abs=0.01)  # nothing kept ran in the first second
