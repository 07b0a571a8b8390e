"""Both sides of a replay as one table of attempts: a small trace and a run's outputs written by
hand to be the same history, which must give the same figures."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from trace_files import event, seconds_us, write_part

from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.replay_attempts import real_attempts, simulated_attempts, workload_jobs
from batsim_google.experiments.replay_fidelity import bands, cpu_per_minute, group_names
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample
from batsim_google.trace.schema import TaskEvent as E

START, END = 100.0, 700.0


@pytest.fixture
def trace(tmp_path):
    rows = [
        # job 1 (free): running from before the window on 501, evicted at 150, back 160-400
        (10, 1, E.SUBMIT, "", 0),
        (20, 1, E.SCHEDULE, "501", 0),
        (150, 1, E.EVICT, "501", 0),
        (150, 1, E.SUBMIT, "", 0),
        (160, 1, E.SCHEDULE, "502", 0),
        (400, 1, E.FINISH, "502", 0),
        # job 2 (normal): submitted at 200, started at 203, ended at 500
        (200, 2, E.SUBMIT, "", 2),
        (203, 2, E.SCHEDULE, "503", 2),
        (500, 2, E.FINISH, "503", 2),
        # job 3 (normal): submitted at 650, started after the window
        (650, 3, E.SUBMIT, "", 2),
        (800, 3, E.SCHEDULE, "504", 2),
        (900, 3, E.FINISH, "504", 2),
        (2000, 9, E.SUBMIT, "", 2),
    ]
    rows.sort(key=lambda row: row[0])
    lines = [event(seconds_us(t), j, 0, c, machine=m, priority=p, cpu="0.5") for t, j, c, m, p in rows]
    write_part(tmp_path / "trace", lines)
    return tmp_path / "trace"


@pytest.fixture
def run(tmp_path):
    """The same history as Batsim and the scheduler record it (times from the window start)."""
    folder = tmp_path / "run"
    folder.mkdir()
    header = "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata"
    jobs = [
        '0,w0,0,0.0,1,-1,0,COMPLETED_KILLED,0.0,50.0,50.0,0.0,50.0,1.0,0,0,""',
        'w0_0#1,resubmit,w0_0#1,50.0,1,-1,1,COMPLETED_SUCCESSFULLY,60.0,240.0,300.0,10.0,250.0,1.0,1,0,""',
        '1,w0,1,100.0,1,-1,1,COMPLETED_SUCCESSFULLY,103.0,297.0,400.0,3.0,300.0,1.0,2,0,""',
        '2,w0,2,550.0,1,-1,0,REJECTED,,,,,,,,,""',
    ]
    (folder / "out_jobs.csv").write_text("\n".join([header, *jobs]) + "\n")
    (folder / "out_attempts.csv").write_text(
        "task_id,job_id,attempt,machine,start,end,end_reason\n"
        "w0!0,w0!0,0,0,0.0,50.0,evicted\n"
        "w0!0,resubmit!w0_0#1,1,1,60.0,300.0,success\n"
        "w0!1,w0!1,0,2,103.0,400.0,success\n"
    )
    (folder / "out_tasks.csv").write_text(
        "task_id,kind,priority,cpu,memory,submit,work,restarts,outcome,ended,note\n"
        "w0!0,task,0.08,0.5,0.05,0.0,300.0,1,completed,300.0,\n"
        "w0!1,task,0.25,0.5,0.05,100.0,297.0,0,completed,400.0,\n"
        "w0!2,task,0.25,0.5,0.05,550.0,100.0,0,censored,600.0,\n"
    )
    workload = tmp_path / "w.json"
    workload.write_text(
        json.dumps(
            {
                "nb_res": 4,
                "jobs": [
                    {"id": 0, "subtime": 0, "res": 1, "profile": "p", "google_priority": 0, "initial": "running"},
                    {"id": 1, "subtime": 100, "res": 1, "profile": "p", "google_priority": 2},
                    {"id": 2, "subtime": 550, "res": 1, "profile": "p", "google_priority": 2},
                ],
                "profiles": {"p": {"type": "delay", "delay": 1}},
            }
        )
    )
    return RunOutputs(folder), workload


def test_real_attempts_are_the_traces_in_window_times(trace):
    table = real_attempts([trace], START, END, RowAccount()).sort("task", "submit")
    assert table["task"].to_list() == ["1_0", "1_0", "2_0", "3_0"]
    assert table["group"].to_list() == ["free", "free", "normal", "normal"]
    assert table["submit"].to_list() == [-90.0, 50.0, 100.0, 550.0]
    assert table["start"].to_list() == [-80.0, 60.0, 103.0, None]  # job 3 starts after the window
    assert table["end"].to_list() == [50.0, 300.0, 400.0, None]
    assert table["evicted"].to_list() == [True, False, False, False]


def test_the_same_history_gives_the_same_figures_on_both_sides(trace, run):
    outputs, workload = run
    real = real_attempts([trace], START, END, RowAccount())
    simulated = simulated_attempts(outputs, workload)
    assert simulated.sort("submit")["submit"].to_list() == [-math.inf, 50.0, 100.0, 550.0]
    duration = END - START
    assert bands(simulated, duration) == bands(real, duration)
    free = bands(real, duration)["free"]
    assert free["tasks"] == 1 and free["median_wait_s"] == pytest.approx(10.0)
    assert free["evictions_per_1000_task_hours"] == pytest.approx(1000 / ((50 + 240) / 3600))
    assert free["evictions"] == 1 and free["task_hours"] == pytest.approx((50 + 240) / 3600)
    assert bands(real, duration)["normal"]["never_started"] == 1
    assert cpu_per_minute(simulated, duration) == pytest.approx(cpu_per_minute(real, duration))


def test_a_sampled_cell_keeps_the_attempts_of_its_machines(trace):
    # seed 4 keeps machines 501, 502 and 504 (hashed_uniforms < 6,000 / 12,583), not 503
    table = real_attempts([trace], START, END, RowAccount(), sample=MachineSample(6000, seed=4))
    assert sorted(table["submit"].to_list()) == [-90.0, 50.0, 550.0]


def test_a_generated_workloads_jobs_get_the_group_of_their_model_priority(tmp_path):
    # a generated job has no google_priority, only a model priority in ]0, 1]: 0.1 is Google's 1
    # (free), 0.2 its 2 (normal), 0.8 its 9 (production), 0.95 its 11 (monitoring); a recorded
    # google_priority wins
    priorities = [0.1, 0.2, 0.8, 0.95, 0.1]
    jobs = [{"id": i, "subtime": 0, "res": 1, "profile": "p", "priority": p} for i, p in enumerate(priorities)]
    jobs[-1]["google_priority"] = 9
    workload = tmp_path / "generated.json"
    workload.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 1}}}))
    table = workload_jobs(workload)
    assert table["google_priority"].to_list() == [1, 2, 9, 11, 9]
    groups = table.select(group_names(pl.col("google_priority")))
    assert groups.to_series().to_list() == ["free", "normal", "production", "monitoring", "production"]
