"""The cost model's sweep over a workload's submissions and ends (no Batsim needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO

from batsim_google.cli import main
from batsim_google.errors import InputFileError
from batsim_google.simulation.cost_model import (
    COEFFICIENTS,
    MEASURED_BURST,
    WorkloadCost,
    estimate,
    read_workload_cost,
    workload_cost,
)

PLATFORM = REPO / "tests" / "fixtures" / "cluster8.xml"  # 8 machines


def test_overlapping_jobs_counted_at_each_instant():
    # job a runs [0, 3), job b [1, 2): the arrivals at 0 and 1 see 0 and 1 job running,
    # the ends at 2 and 3 see 2 and 1
    cost = workload_cost(np.array([0.0, 1.0]), np.array([3.0, 1.0]))
    assert cost == WorkloadCost(jobs=2, steps=4, job_steps=4.0, peak_running=2, largest_burst=1, horizon=1.0)


def test_a_burst_is_one_instant():
    cost = workload_cost(np.zeros(3), np.ones(3))
    # the arrival at 0 sees none running, the end at 1 sees the 3
    assert (cost.steps, cost.job_steps, cost.peak_running, cost.largest_burst) == (2, 3.0, 3, 3)


def test_a_job_ending_when_another_arrives_has_ended_for_it():
    cost = workload_cost(np.array([0.0, 1.0]), np.array([1.0, 1.0]))
    # arrivals see 0 and 0 (the first ends as the second arrives); ends at 1 and 2 see 2 and 1
    assert (cost.steps, cost.job_steps, cost.peak_running) == (4, 3.0, 1)


def test_empty_workload():
    assert workload_cost(np.array([]), np.array([])) == WorkloadCost(0, 0, 0.0, 0, 0, 0.0)


def test_sweep_matches_a_direct_count():
    rng = np.random.default_rng(3)
    submit = np.round(rng.uniform(0, 100, 500), 1)  # rounded: shared instants and bursts
    makespan = np.round(rng.exponential(20, 500), 1) + 0.1
    end = submit + makespan
    arrivals, ends = np.unique(submit), np.unique(end)
    at_arrivals = [int(np.sum((submit < t) & (end > t))) for t in arrivals]
    after_arrivals = [int(np.sum((submit <= t) & (end > t))) for t in arrivals]
    at_ends = [int(np.sum((submit <= t) & (end >= t))) for t in ends]
    cost = workload_cost(submit, makespan)
    assert cost.steps == arrivals.size + ends.size
    assert cost.job_steps == sum(at_arrivals) + sum(at_ends)
    assert cost.peak_running == max(after_arrivals)
    assert cost.largest_burst == np.unique(submit, return_counts=True)[1].max()
    assert cost.horizon == submit.max()


def _workload(path, jobs, profiles):
    path.write_text(json.dumps({"nb_res": 8, "jobs": jobs, "profiles": profiles}))
    return path


def test_services_end_at_their_walltime(tmp_path):
    jobs = [
        {"id": 1, "subtime": 0.0, "res": 1, "profile": "service", "walltime": 5.0},
        {"id": 2, "subtime": 2.0, "res": 1, "profile": "p", "walltime": -1},
    ]
    path = _workload(
        tmp_path / "w.json", jobs, {"service": {"type": "delay", "delay": 1e12}, "p": {"type": "delay", "delay": 1.0}}
    )
    cost = read_workload_cost(path)
    # the service runs [0, 5), not [0, 1e12): arrivals see 0 and 1 job, the ends at 3 and 5 see 2 and 1
    assert (cost.steps, cost.job_steps, cost.horizon) == (4, 4.0, 2.0)


def test_workloads_are_swept_together(tmp_path):
    profiles = {"p": {"type": "delay", "delay": 10.0}}
    first = _workload(tmp_path / "a.json", [{"id": 1, "subtime": 0.0, "res": 1, "profile": "p"}], profiles)
    second = _workload(tmp_path / "b.json", [{"id": 1, "subtime": 1.0, "res": 1, "profile": "p"}], profiles)
    assert read_workload_cost(first, second).peak_running == 2


def test_unreadable_workload_named(tmp_path):
    path = _workload(tmp_path / "w.json", [{"id": 1, "subtime": 0.0, "res": 1, "profile": "missing"}], {})
    with pytest.raises(InputFileError, match="w.json"):
        read_workload_cost(path)


def test_estimate_grows_with_each_term():
    small = WorkloadCost(jobs=10, steps=20, job_steps=100.0, peak_running=5, largest_burst=1, horizon=10.0)
    base = estimate(small, 8)
    for larger in (
        WorkloadCost(10, 20, 1e6, 5, 1, 10.0),
        WorkloadCost(10_000, 20, 100.0, 5, 1, 10.0),
    ):
        assert estimate(larger, 8).wall_seconds > base.wall_seconds
    assert estimate(small, 10_000).wall_seconds > base.wall_seconds
    assert estimate(WorkloadCost(10, 20, 100.0, 5_000, 1, 10.0), 8).peak_bytes > base.peak_bytes
    for kind, c in COEFFICIENTS.items():
        assert estimate(small, 8, kind).wall_seconds == pytest.approx(
            c.startup_seconds
            + c.startup_seconds_per_machine * 8
            + c.seconds_per_job * 10
            + c.seconds_per_job_step * 100
            + c.seconds_per_step * 20
        )
    # The patched binary waits on timers: its job-steps cost nothing, the stock one's grow the run.
    many_steps = WorkloadCost(10, 20, 1e9, 5, 1, 10.0)
    assert estimate(many_steps, 8, "stock").wall_seconds > 10 * estimate(many_steps, 8, "patched").wall_seconds


def test_estimate_command(tmp_path):
    jobs = [{"id": i, "subtime": float(i), "res": 1, "profile": "p"} for i in range(4)]
    path = _workload(tmp_path / "w.json", jobs, {"p": {"type": "delay", "delay": 2.5}})
    result = CliRunner().invoke(main, ["estimate", str(PLATFORM), str(path)])
    assert result.exit_code == 0, result.output
    assert "8 machines, 4 jobs submitted until 3 s: 8 steps" in result.output
    assert "predicted with the stock Batsim:" in result.output
    assert "predicted with the patched Batsim:" in result.output
    assert "warning" not in result.output


def test_estimate_command_warns_of_a_burst_beyond_the_measures(tmp_path):
    jobs = [{"id": i, "subtime": 0.0, "res": 1, "profile": "p"} for i in range(MEASURED_BURST + 1)]
    path = _workload(tmp_path / "w.json", jobs, {"p": {"type": "delay", "delay": 2.5}})
    result = CliRunner().invoke(main, ["estimate", str(PLATFORM), str(path)])
    assert result.exit_code == 0, result.output
    assert f"warning: {MEASURED_BURST + 1} jobs submitted at one instant" in result.output


def test_estimate_command_names_a_bad_workload(tmp_path):
    path = tmp_path / "w.json"
    path.write_text("{")
    result = CliRunner().invoke(main, ["estimate", str(PLATFORM), str(path)])
    assert result.exit_code == 2
    assert "w.json" in result.output


def test_a_horizon_ends_the_jobs_running_then_at_one_instant():
    # a runs [0, 3), b [1, 2), c [1, 10), d [4, 12): with the horizon at 5, c and d end together at 5
    submit, makespan = np.array([0.0, 1.0, 1.0, 4.0]), np.array([3.0, 1.0, 9.0, 8.0])
    whole, cut = workload_cost(submit, makespan), workload_cost(submit, makespan, horizon=5.0)
    assert (whole.steps, cut.steps) == (7, 6)  # ends at 2, 3, 10, 12 against 2, 3, 5
    # arrivals see 0, 1 and 1 running either way; ends see 3, 2, 2, 1 against 3, 2, 2 (c and d at 5)
    assert (whole.job_steps, cut.job_steps) == (10.0, 9.0)
    assert workload_cost(submit, makespan, horizon=100.0) == whole


def test_the_patched_binary_pays_per_step_the_stock_one_per_job_step():
    cost = WorkloadCost(jobs=10, steps=20, job_steps=1e6, peak_running=5, largest_burst=1, horizon=9.0)
    more_steps = WorkloadCost(jobs=10, steps=40, job_steps=1e6, peak_running=5, largest_burst=1, horizon=9.0)
    patched, stock = COEFFICIENTS["patched"], COEFFICIENTS["stock"]
    gap = estimate(more_steps, 8, "patched").wall_seconds - estimate(cost, 8, "patched").wall_seconds
    assert gap == pytest.approx(20 * patched.seconds_per_step) and gap > 0
    assert estimate(more_steps, 8, "stock").wall_seconds == estimate(cost, 8, "stock").wall_seconds
    assert stock.seconds_per_step == 0
    # timers: a job running at a step costs the patched binary no scan, the stock one a scan
    assert patched.seconds_per_job_step == 0 < stock.seconds_per_job_step


def test_estimate_takes_runs_horizon(tmp_path):
    jobs = [{"id": i, "subtime": float(i), "res": 1, "profile": "long", "walltime": -1} for i in range(4)]
    path = _workload(tmp_path / "w.json", jobs, {"long": {"type": "delay", "delay": 100.0}})
    lines = {
        horizon: CliRunner().invoke(main, ["estimate", str(PLATFORM), str(path), *horizon]).output.splitlines()[0]
        for horizon in ((), ("--horizon", "10"))
    }
    assert "8 steps" in lines[()] and "5 steps" in lines[("--horizon", "10")]  # 4 ends at 100-103, or 1 at 10


def test_contention_adds_restarts_as_jobs_and_steps_and_the_queue_per_task_and_pass():
    from batsim_google.simulation.contention import Contention

    cost = WorkloadCost(jobs=1000, steps=2000, job_steps=1e6, peak_running=500, largest_burst=1, horizon=3600.0)
    c = COEFFICIENTS["patched"]
    alone = estimate(cost, 100, "patched")
    same = estimate(
        cost,
        100,
        "patched",
        Contention(restarts=0.0, steps=2000.0, queued_task_steps=0.0, peak_queue=0, peak_running=500),
    )
    assert same == alone
    played = Contention(restarts=50.0, steps=1500.0, queued_task_steps=1e6, peak_queue=800, peak_running=300)
    wall = estimate(cost, 100, "patched", played).wall_seconds
    expected = alone.wall_seconds + 50 * c.seconds_per_job + (1500 + 50 - 2000) * c.seconds_per_step
    assert wall == pytest.approx(expected + 1e6 * c.seconds_per_queued_task_step)
    assert c.seconds_per_queued_task_step > 0
    memory = estimate(cost, 100, "patched", played).peak_bytes
    assert memory == pytest.approx(alone.peak_bytes - 200 * c.bytes_per_running_job)  # 300 at once, not 500


def test_a_streamed_run_keeps_what_batsim_keeps_of_each_ended_job_and_restart():
    from batsim_google.simulation.contention import Contention

    cost = WorkloadCost(jobs=100_000, steps=200_000, job_steps=1e6, peak_running=500, largest_burst=1, horizon=3600.0)
    played = Contention(restarts=20_000.0, steps=200_000.0, queued_task_steps=0.0, peak_queue=0, peak_running=500)
    for kind, c in COEFFICIENTS.items():
        loaded, streamed = (estimate(cost, 100, kind, played, streamed=s) for s in (False, True))
        assert streamed.wall_seconds == loaded.wall_seconds
        assert streamed.peak_bytes - loaded.peak_bytes == pytest.approx(
            c.bytes_per_streamed_job * 120_000
            - c.bytes_per_job * 100_000
            + (c.bytes_per_streamed_running_job - c.bytes_per_running_job) * 500
        )
    # The patch frees what an ended job held: a streamed run keeps a tenth of the loaded share.
    patched = COEFFICIENTS["patched"]
    assert patched.bytes_per_streamed_job < patched.bytes_per_job / 10


def test_estimate_command_takes_runs_streaming_option(tmp_path):
    jobs = [{"id": i, "subtime": float(i), "res": 1, "profile": "p"} for i in range(400)]
    path = _workload(tmp_path / "w.json", jobs, {"p": {"type": "delay", "delay": 0.5}})

    def patched_mb(*option: str) -> float:
        result = CliRunner().invoke(main, ["estimate", str(PLATFORM), str(path), *option])
        assert result.exit_code == 0, result.output
        line = next(line for line in result.output.splitlines() if "patched Batsim" in line)
        return float(line.split("peak memory ")[1].split(" MB")[0])

    assert patched_mb("--stream-workload") < patched_mb("--load-workload") == patched_mb()


def test_estimate_command_predicts_a_stream_where_run_would_choose_one(tmp_path, monkeypatch):
    """Left to choose, run streams a workload whose loaded prediction passes half the memory
    available: estimate predicts that run, and says why."""
    from batsim_google.simulation import cost_model

    jobs = [{"id": i, "subtime": float(i), "res": 1, "profile": "p"} for i in range(400)]
    path = _workload(tmp_path / "w.json", jobs, {"p": {"type": "delay", "delay": 0.5}})

    def patched_line(*option: str) -> str:
        result = CliRunner().invoke(main, ["estimate", str(PLATFORM), str(path), *option])
        assert result.exit_code == 0, result.output
        return next(line for line in result.output.splitlines() if "patched Batsim" in line)

    loaded, streamed = patched_line("--load-workload"), patched_line("--stream-workload")
    assert patched_line() == loaded
    monkeypatch.setattr(cost_model, "available_memory_bytes", lambda: 1e6)
    assert patched_line() == streamed + " (loaded whole, it would take over half the 1 MB available)"
    assert patched_line("--load-workload") == loaded


def test_estimate_command_plays_the_queue_on_the_platforms_capacity(tmp_path):
    """cluster8's 8 machines have capacity 1 each: 12 full-machine tasks for 10 minutes at once
    leave 4 waiting, which the patched prediction pays for."""
    jobs = [
        {"id": i, "subtime": 0.0, "res": 1, "profile": "p", "priority": 0.5, "cpu": 1.0, "memory": 0.5}
        for i in range(12)
    ]
    busy = _workload(tmp_path / "busy.json", jobs, {"p": {"type": "delay", "delay": 600.0}})
    light = _workload(tmp_path / "light.json", jobs[:8], {"p": {"type": "delay", "delay": 600.0}})
    outputs = {}
    for name, path in (("busy", busy), ("light", light)):
        result = CliRunner().invoke(main, ["estimate", str(PLATFORM), str(path), "--horizon", "3600"])
        assert result.exit_code == 0, result.output
        outputs[name] = result.output
    assert "a queue of up to 4 tasks" in outputs["busy"] and "a queue of up to 0 tasks" in outputs["light"]
