"""The Google-cell scheduler in real Batsim 4.2.1, each scenario checked from Batsim's own outputs."""

from __future__ import annotations

import json

import pytest
from cell_scenarios import (
    PLATFORM,
    evicted_for_the_high_task,
    idle_sleep_beats_always_on,
    preemption_jobs,
    rows,
    task,
    workload,
)
from uncalibrated import UNCALIBRATED

from batsim_google.errors import SimulationError
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation import googleCell
from batsim_google.simulation.run import batsim_options, run_scheduler
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation
from batsim_google.simulation.schedulers import built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings

pytestmark = pytest.mark.batsim


def simulate(tmp_path, jobs, batsim_binary, events=(), **policy):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = workload(tmp_path / "workload.json", jobs) if isinstance(jobs, list) else jobs
    summary = run_scheduler(
        built_in(PolicyConfig(**{**UNCALIBRATED, **policy})),
        RunInputs(PLATFORM, [path], events),
        tmp_path / "out",
        SimulationSettings(timeout=120, batsim=batsim_binary),
    ).summary
    return summary, {row["job_id"]: row for row in rows(tmp_path / "out" / "out_jobs.csv")}


def test_preemption_evicts_lower_priorities_and_resubmits_them(tmp_path, batsim_binary):
    summary, out = simulate(tmp_path, preemption_jobs(), batsim_binary)
    killed = evicted_for_the_high_task(out)
    resubmitted = [row for row in out.values() if row["workload_name"] == "resubmit"]
    assert [row["job_id"] for row in resubmitted] == [f"w0_{killed}#1"]
    assert resubmitted[0]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert float(resubmitted[0]["execution_time"]) == pytest.approx(100.0)  # full work again
    assert summary["balanced"] and summary["outcomes"]["completed"] == 5
    assert "alredy in the job list" not in (tmp_path / "out" / "scheduler.log").read_text()  # pybatsim's echo warning


def test_services_are_killed_by_design_at_their_lifetime(tmp_path, batsim_binary):
    jobs = [task(i, i, 30.0 + 10 * i, kind="service", cpu=0.25, memory=0.25) for i in range(6)]
    summary, out = simulate(tmp_path, jobs, batsim_binary)
    for i in range(6):
        assert out[str(i)]["final_state"] == "COMPLETED_WALLTIME_REACHED"
        assert float(out[str(i)]["execution_time"]) == pytest.approx(30.0 + 10 * i, abs=1e-3)
    assert summary["outcomes"]["killed_by_design"] == 6 and summary["balanced"]


def test_failure_storm_resubmits_and_never_uses_failed_machines(tmp_path, batsim_binary):
    path = tmp_path / "generated.json"
    write_generated_workload(path, preset("google"), load_request_law(), 8, Generation(tasks=200, nb_res=4, grain=1.0))
    events = tmp_path / "events.jsonl"
    windows = []  # machine, down, up
    for k in range(30):
        machine, down = k % 4, 200.0 * k + 50.0
        windows.append((machine, down, down + 120.0))
    lines = []
    for machine, down, up in windows:
        lines.append({"type": "machine_unavailable", "resources": str(machine), "timestamp": down})
        lines.append({"type": "machine_available", "resources": str(machine), "timestamp": up})
    events.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    summary, out = simulate(tmp_path, path, batsim_binary, events=[events])
    assert summary["balanced"] and summary["submitted"] == 200
    attempts = rows(tmp_path / "out" / "out_attempts.csv")
    failures = [a for a in attempts if a["end_reason"] == "machine_failure"]
    assert len(failures) > 10
    assert any(row["workload_name"] == "resubmit" for row in out.values())
    for row in out.values():  # no job starts on a machine while it is down
        if row["starting_time"]:
            machine, start = int(row["allocated_resources"]), float(row["starting_time"])
            assert not any(m == machine and down <= start < up for m, down, up in windows), row
    for attempt in failures:  # each failure-ended attempt ended when its machine went down
        machine, end = int(attempt["machine"]), float(attempt["end"])
        assert any(m == machine and abs(end - down) < 0.1 for m, down, _ in windows)


def test_user_kill_event(tmp_path, batsim_binary):
    jobs = [
        task(0, 0, 100, cpu=1.0, memory=1.0),
        task(1, 0, 100, cpu=1.0, memory=1.0),
        task(2, 0, 100, cpu=1.0, memory=1.0),
        task(3, 0, 100, cpu=1.0, memory=1.0),
    ]
    events = tmp_path / "kills.jsonl"
    events.write_text(
        json.dumps({"type": "user_kill", "timestamp": 10, "job_id": "w0!0"})
        + "\n"
        + json.dumps({"type": "user_kill", "timestamp": 10, "job_id": "w0!3"})
        + "\n"
    )
    summary, out = simulate(tmp_path, jobs, batsim_binary, events=[events])
    states = {job: row["final_state"] for job, row in out.items()}
    # 0 ran on a capacity-1 machine and is killed; 3 fits nowhere while 0 and 1 run: rejected.
    assert states["0"] == "COMPLETED_KILLED" and states["3"] == "REJECTED"
    assert summary["outcomes"]["killed_by_user"] == 2 and summary["balanced"]


def test_idle_sleep_consumes_less_than_always_on(tmp_path, batsim_binary):
    run = lambda folder, jobs, **policy: simulate(folder, jobs, batsim_binary, **policy)  # noqa: E731
    out = idle_sleep_beats_always_on(run, tmp_path)
    states = rows(out / "out_machine_states.csv")
    assert max(int(row["nb_sleeping"]) for row in states) == 4


@pytest.mark.parametrize("wake_before_evicting", [False, True])
def test_a_task_fitting_nowhere_awake_evicts_or_waits_for_a_wake(tmp_path, batsim_binary, wake_before_evicting):
    jobs = [task(0, 0, 2000, priority=0.1, cpu=1.0, memory=1.0), task(1, 300, 50, priority=0.9, cpu=1.0, memory=0.5)]
    summary, out = simulate(
        tmp_path,
        jobs,
        batsim_binary,
        energy="idle-sleep",
        idle_timeout=60.0,
        wake_before_evicting=wake_before_evicting,
    )
    assert summary["balanced"] and out["1"]["final_state"] == "COMPLETED_SUCCESSFULLY"
    killed = [job for job, row in out.items() if row["final_state"] == "COMPLETED_KILLED"]
    if wake_before_evicting:  # the other big machine sleeps since t = 60; it wakes in 10 s here (1 flop at 0.1 f/s)
        assert killed == [] and float(out["1"]["waiting_time"]) == pytest.approx(10.0, abs=0.1)
    else:
        assert killed == ["0"] and float(out["1"]["waiting_time"]) < 0.1


@pytest.mark.parametrize("guarded", [False, True])
def test_no_switch_straddles_a_known_failure(tmp_path, batsim_binary, guarded):
    """m1 sleeps; a task only a big machine can hold, and that may evict nothing, comes at t = 300;
    m1 fails at 305, within its 10 s wake-up. Batsim 4.2.1 ends the switch as if m1 were up, then
    aborts at its machine_available: the scheduler, reading the same events, does not wake it."""
    jobs = [task(0, 0, 2000, priority=0.9, cpu=1.0, memory=1.0), task(1, 300, 50, priority=0.1, cpu=1.0, memory=0.5)]
    path = workload(tmp_path / "workload.json", jobs)
    events = tmp_path / "events.jsonl"
    events.write_text(
        '{"timestamp": 305, "type": "machine_unavailable", "resources": "1"}\n'
        '{"timestamp": 400, "type": "machine_available", "resources": "1"}\n'
    )
    output = tmp_path / "out"
    output.mkdir()
    options = {"policy": {"energy": "idle-sleep", "idle_timeout": 60.0}, "output": str(output / "out")}
    if guarded:
        options |= {"platform": str(PLATFORM), "events": [str(events)]}
    simulation = Simulation(
        PLATFORM,
        [path],
        output,
        pybatsim_scheduler(googleCell.__file__, options),
        events=[events],
        energy=True,
        batsim_options=batsim_options(CellPolicy.needs, has_events=True),
        timeout=120,
        batsim=batsim_binary,
    )
    if not guarded:
        with pytest.raises(SimulationError):
            run_simulation(simulation)
        assert "was not in UNAVAILABLE state" in (output / "batsim.log").read_text()
        return
    run_simulation(simulation)
    out = {row["job_id"]: row for row in rows(output / "out_jobs.csv")}
    assert out["1"]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert float(out["1"]["starting_time"]) == pytest.approx(410.0, abs=0.1)  # woken once m1 is back at 400
    assert json.loads((output / "out_accounting.json").read_text())["balanced"]


def test_jobs_of_several_machines_or_without_requests_are_handled_not_fatal(tmp_path, batsim_binary):
    """A converted SWF log's jobs: some take several processors, none asks for memory."""
    jobs = [{**task(i, i, 10.0), "res": 2 if i == 1 else 1} for i in range(3)]
    jobs[2]["memory"] = None
    summary, out = simulate(tmp_path, jobs, batsim_binary)
    assert out["1"]["final_state"] == "REJECTED"
    assert out["0"]["final_state"] == out["2"]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert summary["balanced"] and summary["outcomes"]["rejected"] == 1
    tasks = (tmp_path / "out" / "out_tasks.csv").read_text()
    assert "asks for 2 machines; tasks here take one" in tasks
