"""Run metrics, suspension and Gaevoy et al.'s queue metrics on a hand-built run (tests/fixtures/run4,
whose README tells each task's story); every expected value is worked out from that story."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from batsim_google.errors import InputFileError
from batsim_google.experiments.load_energy import load_energy
from batsim_google.experiments.metrics import SLOWDOWN_BOUND_S, cpu_capacity, cpu_utilization_over_time, run_metrics
from batsim_google.experiments.outputs import RunOutputs, started_jobs, task_times
from batsim_google.experiments.queue_metrics import queue_metrics
from batsim_google.experiments.suspension import suspended_over_time, suspension_intervals, suspension_per_task
from batsim_google.experiments.timeline import interval_steps, time_average
from batsim_google.platform.simgrid_xml import PlatformHost

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = RunOutputs(FIXTURES / "run4")
PLATFORM = FIXTURES / "cell4_energy.xml"
CAPACITY = 1.0 + 1.0 + 0.5 + 0.5  # its machines' CPU
MAKESPAN = 225.0


@pytest.fixture(scope="module")
def metrics() -> dict:
    return run_metrics(RUN, PLATFORM)


def test_task_times_join_batsim_jobs_to_tasks():
    tasks = {row["task_id"]: row for row in task_times(RUN).iter_rows(named=True)}
    assert tasks["w0!1"]["jobs"] == 3 and tasks["w0!1"]["execution"] == 10 + 5 + 50
    assert tasks["w0!1"]["first_start"] == 0.0 and tasks["w0!1"]["end"] == 90.0
    assert tasks["w0!7"]["first_wait"] == 30.0 and tasks["w0!7"]["end"] == 150.0  # its resubmission never ran
    assert tasks["w0!4"]["jobs"] == 0 and tasks["w0!4"]["first_start"] is None


def test_counts_and_outcomes(metrics):
    assert metrics["makespan_s"] == MAKESPAN
    assert metrics["tasks"] == 9
    assert (metrics["completed"], metrics["killed_by_design"], metrics["killed_by_user"]) == (5, 1, 1)
    assert (metrics["rejected"], metrics["not_restarted"], metrics["pending_at_end"]) == (1, 1, 0)
    assert metrics["evictions"] == 4  # w0!0, w0!1 twice, w0!7
    assert metrics["resubmissions"] == 7  # the Batsim jobs of workload 'resubmit', one never ran
    assert metrics["failure_kills"] == 4  # w0!3 once, w0!6 three times
    assert metrics["lost_to_failures"] == 1  # w0!6
    assert metrics["balanced"] is True


def test_batsims_job_counts(metrics):
    assert metrics["jobs"] == 16  # 9 workload jobs, 7 resubmissions
    assert metrics["jobs_completed"] == 5  # w0!2, w0!5, w0!8 and the resubmissions of w0!0, w0!1
    assert metrics["jobs_rejected"] == 2  # w0!4 and w0!7's resubmission
    assert metrics["jobs_killed"] == 16 - 5 - 2  # every other job ran and was stopped


def test_delivered_work_counts_restarted_work_once(metrics):
    # CPU x work of the tasks that did all their work: w0!0, w0!1, w0!2, w0!5, w0!8, and the service w0!3
    delivered = 1.0 * 100 + 0.5 * 50 + 1.0 * 20 + 0.5 * 4 + 1.0 * 75 + 0.5 * 200
    assert metrics["delivered_cpu_s"] == pytest.approx(delivered)
    assert metrics["energy_per_cpu_hour_j"] == pytest.approx(metrics["energy_j"] / (delivered / 3600))


def test_without_the_ledger_batsims_files_give_the_metrics_and_the_ledgers_are_null(tmp_path):
    for name in ("jobs.csv", "machine_states.csv", "consumed_energy.csv"):
        shutil.copy(RUN.path(name), tmp_path / f"out_{name}")
    metrics = run_metrics(RunOutputs(tmp_path))  # no platform either
    assert metrics["makespan_s"] == MAKESPAN
    assert (metrics["jobs"], metrics["jobs_completed"], metrics["jobs_killed"], metrics["jobs_rejected"]) == (
        16,
        5,
        9,
        2,
    )
    assert metrics["mean_waiting_s"] == pytest.approx(30 / 8)  # the workload jobs' waits, as with the ledger
    # each job that succeeded is a task: (finish - submit) / max(execution, 10)
    slowdowns = [1.0, 1.0, 65 / 50, 115 / 100, 1.0]  # w0!5 (4 s: 1), w0!2, w0_1#2, w0_0#1, w0!8
    assert metrics["mean_bounded_slowdown"] == pytest.approx(np.mean(slowdowns))
    # one machine per job: execution times over 4 machines (counted in out_machine_states.csv) x makespan
    executions = 10 + 10 + 4 + 5 + 20 + 20 + 20 + 5 + 8 + 50 + 100 + 20 + 75 + 200
    assert metrics["utilization"] == pytest.approx(executions / (4 * MAKESPAN))
    assert metrics["energy_j"] == metrics["batsim_energy_j"] == 45000.5  # the load term is not applied
    from batsim_google.experiments.metrics import LEDGER_METRICS

    assert all(metrics[name] is None for name in LEDGER_METRICS)
    # with the platform, a job without a CPU request takes its machine's whole cpu_capacity (m0, m1: 1;
    # m2, m3: 0.5): jobs on m0 and m1 run 10+20+100+20+75 and 50+200 s, on m2 and m3 10+4+5+8+20 and 20+5
    on_platform = run_metrics(RunOutputs(tmp_path), PLATFORM)
    whole = 1.0 * (10 + 20 + 100 + 20 + 75 + 50 + 200) + 0.5 * (10 + 4 + 5 + 8 + 20 + 20 + 5)
    assert on_platform["utilization"] == pytest.approx(whole / (3 * MAKESPAN))


def test_batsims_machine_count_comes_from_its_schedule_when_there(tmp_path):
    shutil.copy(RUN.path("machine_states.csv"), tmp_path / "out_machine_states.csv")
    assert RunOutputs(tmp_path).machines() == 4
    (tmp_path / "out_schedule.csv").write_text("batsim_version,nb_computing_machines,makespan\n4.2.1,7,1.0\n")
    assert RunOutputs(tmp_path).machines() == 7


def test_waiting_times_are_the_first_waits_of_started_tasks(metrics):
    # Eight tasks started (w0!4 was rejected); only w0!7 waited, 30 s.
    assert metrics["mean_waiting_s"] == pytest.approx(30 / 8)
    # Linear p95 of seven zeros and 30: position 0.95 * 7 = 6.65 between 0 and 30.
    assert metrics["p95_waiting_s"] == pytest.approx(0.65 * 30)


def test_bounded_slowdown_over_tasks_that_did_all_their_work(metrics):
    assert SLOWDOWN_BOUND_S == 10.0
    slowdowns = [
        130 / 100,  # w0!0: evicted, done at 130
        90 / 50,  # w0!1: done at 90
        20 / 20,  # w0!2
        max(1.0, 4 / 10),  # w0!5: 4 s of work counts as 10
        75 / 75,  # w0!8
        220 / 200,  # w0!3: a service, to the end of its second life
    ]
    assert metrics["mean_bounded_slowdown"] == pytest.approx(np.mean(slowdowns))


def test_utilization_is_allocated_cpu_time_over_capacity_times_makespan(metrics):
    cpu_seconds = (
        1.0 * (10 + 100)
        + 0.5 * (10 + 5 + 50)
        + 1.0 * 20
        + 0.5 * (20 + 200)
        + 0.5 * 4
        + 0.25 * (20 + 5 + 8)
        + 1.0 * 20
        + 1.0 * 75
    )
    assert metrics["utilization"] == pytest.approx(cpu_seconds / (CAPACITY * MAKESPAN))


def test_energy_is_batsims_last_cumulative_figure_plus_the_loads(metrics, tmp_path):
    assert metrics["batsim_energy_j"] == 45000.5
    # idle:full watts, so epsilon = idle; (full - idle) x load-seconds, from the jobs' stories:
    # m0 (100 W more at full) busy 225 s; m1 (100 W) half busy 25-40 and 90-225, full 40-90;
    # m2 (60 W) 19 s full, 28 s half (w0!6 twice); m3 (60 W) 20 s full, 5 s half
    load = 100 * 225 + 100 * (0.5 * 15 + 50 + 0.5 * 135) + 60 * (19 + 0.5 * 28) + 60 * (20 + 0.5 * 5)
    assert metrics["load_energy_j"] == pytest.approx(load)
    assert metrics["energy_j"] == pytest.approx(45000.5 + load)
    for name in ("jobs.csv", "attempts.csv", "tasks.csv", "accounting.json"):
        shutil.copy(RUN.path(name), tmp_path / f"out_{name}")
    without = run_metrics(RunOutputs(tmp_path), PLATFORM)  # a run without -E
    assert without["energy_j"] is None and without["load_energy_j"] == pytest.approx(load)


def test_load_energy_follows_simgrids_linear_model_and_caps_the_load():
    host = PlatformHost("m0", (1e9,), 1, {"wattage_per_state": "100:150:200, 10:10:10", "cpu_capacity": "0.5"})
    jobs = pl.DataFrame(
        {
            "machine": [0, 0, 0],
            "starting_time": [0.0, 10.0, 10.0],
            "finish_time": [10.0, 20.0, 20.0],
            "cpu": [0.125, 0.5, 0.25],
        }
    )
    # 0-10: load 0.25 -> 150 - 100 + 50 x 0.25; 10-20: load 1.5, at most 1 -> 50 + 50
    assert load_energy(jobs, [host]) == pytest.approx(10 * (50 + 12.5) + 10 * 100)
    assert load_energy(jobs, [PlatformHost("m0", (1e9,), 1, {})]) is None  # no energy model
    idle_job = pl.DataFrame({"machine": [0], "starting_time": [0.0], "finish_time": [10.0], "cpu": [0.0]})
    assert load_energy(idle_job, [host]) == pytest.approx(10 * 50)  # running, at ~0 % load: epsilon
    with pytest.raises(ValueError, match="ran on machine 1, but the platform has 1 compute hosts"):
        load_energy(idle_job.with_columns(machine=pl.lit(1)), [host])


def test_suspensions_from_eviction_to_next_start(metrics):
    jobs = started_jobs(RUN)
    intervals = suspension_intervals(jobs, RUN.tasks(), MAKESPAN).sort("task_id", "start")
    assert intervals.rows() == [
        ("w0!0", 10.0, 30.0, False),
        ("w0!1", 10.0, 15.0, False),
        ("w0!1", 20.0, 40.0, False),
        ("w0!7", 150.0, 160.0, False),  # never started again: killed by its user while waiting, at 160
    ]
    assert sorted(suspension_per_task(intervals).to_list()) == [10.0, 20.0, 25.0]
    steps = suspended_over_time(intervals)
    assert steps.rows() == [(10.0, 2.0), (15.0, 1.0), (20.0, 2.0), (30.0, 1.0), (40.0, 0.0), (150.0, 1.0), (160.0, 0.0)]
    assert metrics["suspended_tasks"] == 3
    assert metrics["mean_suspension_s"] == pytest.approx((10 + 20 + 25) / 3)
    assert metrics["median_suspension_s"] == 20.0
    assert metrics["peak_suspended_tasks"] == 2
    assert metrics["censored_suspensions"] == 0


def test_a_suspension_ends_with_its_task_or_is_censored_at_the_end_of_the_run():
    jobs = pl.DataFrame(
        {
            "task_id": ["a", "b", "c", "d"],
            "starting_time": [0.0] * 4,
            "finish_time": [10.0, 20.0, 30.0, 40.0],
            "end_reason": ["evicted"] * 4,
        }
    )
    tasks = pl.DataFrame(
        {
            "task_id": ["a", "b", "c", "d"],
            "outcome": ["killed_by_user", "pending_at_end", None, "not_restarted"],
            "ended": [50.0, 300.0, None, 40.0],
        }
    )
    intervals = suspension_intervals(jobs, tasks, 300.0).sort("task_id")
    assert intervals.rows() == [("a", 10.0, 50.0, False), ("b", 20.0, 300.0, True), ("c", 30.0, 300.0, True)]


def test_cpu_utilization_over_time():
    usage = cpu_utilization_over_time(RUN, CAPACITY)
    at = dict(usage.iter_rows())
    assert at[0.0] == pytest.approx((1.0 + 0.5) / CAPACITY)  # w0!0 and w0!1
    assert at[5.0] == pytest.approx((1.0 + 0.5 + 0.5) / CAPACITY)  # and the service w0!3
    assert at[MAKESPAN] == pytest.approx(0.0)


def test_queue_metrics_of_gaevoy_et_al():
    # Per started task: (submit, last end, time run); waiting = end - submit - run.
    tasks = {
        "w0!0": (0, 130, 110),
        "w0!1": (0, 90, 65),
        "w0!2": (10, 30, 20),
        "w0!3": (5, 225, 220),
        "w0!5": (10, 14, 4),
        "w0!6": (20, 60, 33),
        "w0!7": (100, 150, 20),
        "w0!8": (150, 225, 75),
    }
    sojourn = np.array([end - submit for submit, end, _ in tasks.values()], dtype=float)
    run = np.array([r for *_, r in tasks.values()], dtype=float)
    waiting = sojourn - run  # 20, 25, 0, 0, 0, 7, 30, 0
    span = 225.0 - 0.0
    # Machines computing (m0 always; m1 from 25; m2 and m3 as the README tells), step by step.
    busy = (2 * 5 + 3 * 9 + 2 * 1 + 3 * 10 + 3 * 15 + 3 * 5 + 2 * 7 + 3 * 8 + 2 * 165) / span
    q = queue_metrics(RUN)
    assert q["mean_execution_s"] == pytest.approx(run.mean())
    assert q["mean_running_tasks"] == pytest.approx(run.sum() / span)
    assert q["mean_busy_machines"] == pytest.approx(busy)
    assert q["mean_waiting_s"] == pytest.approx(waiting.mean())
    assert q["mean_waiting_queued_s"] == pytest.approx(waiting[waiting > 1].mean())
    assert q["queued_share"] == pytest.approx(4 / 8)
    assert q["mean_queue_length"] == pytest.approx(waiting.sum() / span)
    assert q["mean_sojourn_s"] == pytest.approx(sojourn.mean())


def test_step_functions_and_time_averages():
    steps = interval_steps(np.array([0.0, 5.0]), np.array([10.0, 7.0]), np.array([2.0, 1.0]))
    assert steps.rows() == [(0.0, 2.0), (5.0, 3.0), (7.0, 2.0), (10.0, 0.0)]
    # 0 before the first step; the window clips the steps.
    assert time_average(steps["time"], steps["value"], -10.0, 10.0) == pytest.approx((2 * 5 + 3 * 2 + 2 * 3) / 20)
    assert time_average([1.0], [4.0], 2.0, 3.0) == 4.0
    with pytest.raises(ValueError):
        time_average([0.0], [1.0], 3.0, 3.0)


def test_missing_outputs_are_named(tmp_path):
    with pytest.raises(InputFileError, match=f"{tmp_path}: no Batsim outputs in this folder \\(no out_jobs.csv\\)"):
        run_metrics(RunOutputs(tmp_path), PLATFORM)
    (tmp_path / "out_jobs.csv").write_text("job_id,workload_name\n1,w0\n")
    with pytest.raises(InputFileError, match="out_jobs.csv"):
        RunOutputs(tmp_path).jobs()


def test_a_job_without_attempt_is_an_error(tmp_path):
    for name in ("jobs.csv", "tasks.csv", "accounting.json"):
        shutil.copy(RUN.path(name), tmp_path / f"out_{name}")
    attempts = RUN.path("attempts.csv").read_text().splitlines()
    (tmp_path / "out_attempts.csv").write_text("\n".join(line for line in attempts if "w0_6#2" not in line) + "\n")
    with pytest.raises(InputFileError, match="1 job.*without an attempt.*w0_6#2"):
        started_jobs(RunOutputs(tmp_path))


def test_cpu_capacity_of_a_written_cell(tmp_path):
    from batsim_google.platform.cell import google_2011_cell
    from batsim_google.platform.energy import load_energy_model
    from batsim_google.platform.simgrid_xml import write_platform

    write_platform(tmp_path / "cell.xml", google_2011_cell(64), load_energy_model())
    machines = google_2011_cell(64).machines
    assert cpu_capacity(tmp_path / "cell.xml") == pytest.approx(machines["cpu"].sum())


def test_cpu_capacity_reads_clusters_and_needs_compute_hosts(tmp_path):
    assert cpu_capacity(FIXTURES / "cell4_energy.xml") == pytest.approx(1.0 + 1.0 + 0.5 + 0.5)  # two <cluster>s
    master_only = tmp_path / "master.xml"
    master_only.write_text(
        '<platform version="4.1"><zone id="z" routing="Full">'
        '<host id="master" speed="1Gf"><prop id="role" value="master"/></host></zone></platform>'
    )
    with pytest.raises(ValueError, match="master.xml: no compute host"):
        cpu_capacity(master_only)


def test_waits_under_the_queued_threshold_count_as_zero():
    # With a 10 s threshold, w0!6's 7 s of waiting is no queueing; w0!0, w0!1 and w0!7 waited 20, 25, 30.
    q = queue_metrics(RUN, threshold=10.0)
    assert q["queued_share"] == pytest.approx(3 / 8)
    assert q["mean_waiting_s"] == pytest.approx((20 + 25 + 30) / 8)
    assert q["mean_waiting_queued_s"] == pytest.approx((20 + 25 + 30) / 3)
    assert q["mean_queue_length"] == pytest.approx((20 + 25 + 30) / 225)


def test_metrics_command_prints_the_metrics_and_names_a_folder_without_outputs(tmp_path):
    from click.testing import CliRunner

    from batsim_google.cli import main

    result = CliRunner().invoke(
        main, ["metrics", str(RUN.directory), "--platform", str(PLATFORM), "--json", str(tmp_path / "m.json")]
    )
    assert result.exit_code == 0, result.output
    assert "delivered_cpu_s         322\n" in result.output and "jobs_rejected           2\n" in result.output
    assert json.loads((tmp_path / "m.json").read_text()) == run_metrics(RUN, PLATFORM)
    empty = CliRunner().invoke(main, ["metrics", str(tmp_path)])
    assert empty.exit_code == 2 and f"{tmp_path}: no Batsim outputs in this folder" in empty.output


def test_run_summary_lines_say_na_for_what_is_not_known():
    from batsim_google.cli.metrics import summary_lines

    lines = summary_lines(
        {
            **dict.fromkeys(["energy_j", "completed"]),
            "mean_waiting_s": 3.75,
            "p95_waiting_s": 19.5,
            "mean_bounded_slowdown": 1.2,
            "utilization": 0.5,
            "not_restarted": 0,
            "delivered_cpu_s": 7200.0,
            "jobs_completed": 5,
            "jobs_killed": 9,
            "jobs_rejected": 2,
            "rejected_by_reason": {"no walltime (planning schedulers need one)": 2},
            "idle_energy_j": 3e9,
            "censored": 3,
            "window_start_s": 600.0,
            "window_end_s": 86400.0,
        }
    )
    assert lines[0] == (
        "over 600-86400 s of simulated time: energy n/a, of which load n/a, idle machines 3 GJ, waiting mean 3.75 s, "
        "p95 19.5 s, bounded slowdown 1.2, utilization 0.5, completed tasks n/a, abandoned at the restart cap 0, censored at the horizon 3, "
        "delivered 2 CPU-h, energy per CPU-h n/a"
    )
    assert lines[1] == "Batsim jobs: 5 completed, 9 killed, 2 rejected (2 no walltime (planning schedulers need one))"
