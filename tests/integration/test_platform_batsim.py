"""Batsim 4.2.1 runs on the generated platforms, with energy and failure events (integration)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from procset import ProcSet

from batsim_google.cli import main
from batsim_google.errors import SimulationError
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.batsim_events import write_availability_events
from batsim_google.platform.failures import FailureLaw, draw_failures
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation
from batsim_google.trace.machines import read_machine_history

pytestmark = pytest.mark.batsim


def run_batsim(platform, workload, output, *, events=None, energy=False, timeout, batsim):
    """pybatsim's fillerSchedWithEvents (it copes with machine events) on the platform."""
    return run_simulation(
        Simulation(
            platform,
            [workload],
            output,
            pybatsim_scheduler("fillerSchedWithEvents", timeout_ms=int(timeout * 1000)),
            events=[events] if events else [],
            energy=energy,
            timeout=timeout,
            batsim=batsim,
        )
    )


def _rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _down_periods(events_path):
    """Per machine, the (start, end) of each unavailability in the events file (end None: open)."""
    periods, down = {}, {}
    for line in events_path.read_text().splitlines():
        event = json.loads(line)
        for machine in ProcSet.from_str(event["resources"]):
            if event["type"] == "machine_unavailable":
                down[machine] = event["timestamp"]
            else:
                periods.setdefault(machine, []).append((down.pop(machine), event["timestamp"]))
    for machine, start in down.items():
        periods.setdefault(machine, []).append((start, None))
    return periods


def _check_run(run, events_path, platform):
    jobs = _rows(run.path("jobs.csv"))
    # Tasks do their work; services run until Batsim stops them at their lifetime (walltime).
    ends = {"task": "COMPLETED_SUCCESSFULLY", "service": "COMPLETED_WALLTIME_REACHED"}
    assert jobs and all(
        job["final_state"] == ends["service" if job["profile"] == "service" else "task"] for job in jobs
    )
    periods = _down_periods(events_path)
    for job in jobs:
        start = float(job["starting_time"])
        for machine in ProcSet.from_str(job["allocated_resources"]):
            assert not any(s <= start < (e if e is not None else np.inf) for s, e in periods.get(machine, [])), job
    (schedule,) = _rows(run.path("schedule.csv"))
    # Batsim accounts unavailability when a machine comes back: closed periods only (each event
    # is handled a few milliseconds after its timestamp, hence the tolerance per period).
    closed = [e - s for p in periods.values() for s, e in p if e is not None]
    assert float(schedule["time_unavailable"]) == pytest.approx(sum(closed), abs=0.005 * len(closed))
    # Delay jobs leave CPUs idle: every host draws its idle watts from start to end.
    idle = sum(float(h.properties["wattage_per_state"].split(":")[0]) for h in compute_hosts(platform))
    energy = _rows(run.path("consumed_energy.csv"))
    assert float(energy[-1]["wattmin"]) == pytest.approx(idle)
    assert float(schedule["consumed_joules"]) == pytest.approx(idle * float(schedule["makespan"]), rel=1e-4)
    assert _rows(run.path("machine_states.csv"))
    return jobs, schedule


def test_batsim_runs_the_512_machine_cell_with_energy_and_failures(batsim_binary, tmp_path):
    platform = REPO / "platforms" / "google-2011-cell-512.xml"
    workload = tmp_path / "workload.json"
    write_generated_workload(workload, preset("google"), load_request_law(), 3, Generation(tasks=300, nb_res=512))
    # Short times between failures, so that many happen while the jobs run.
    law = FailureLaw(mean_time_between_failures=20_000.0, mean_repair_time=2_000.0)
    events = tmp_path / "failures.jsonl"
    write_availability_events(events, draw_failures(512, law, 86_400.0, np.random.default_rng(5)))
    run = run_batsim(
        platform, workload, tmp_path / "cell", events=events, energy=True, timeout=300, batsim=batsim_binary
    )
    jobs, schedule = _check_run(run, events, platform)
    assert len(jobs) == 300 and int(schedule["nb_computing_machines"]) == 512
    assert float(schedule["time_unavailable"]) > 0


def test_batsim_accepts_the_events_of_a_trace(batsim_binary, tmp_path):
    trace = REPO / "tests" / "data" / "synthetic-trace"
    platform, events = tmp_path / "trace.xml", tmp_path / "trace.jsonl"
    runner = CliRunner()
    assert runner.invoke(main, ["platform", "--machine-events", str(trace), "-o", str(platform)]).exit_code == 0
    assert (
        runner.invoke(main, ["failures", str(platform), "--machine-events", str(trace), "-o", str(events)]).exit_code
        == 0
    )
    history = read_machine_history([trace])
    workload = tmp_path / "workload.json"
    write_generated_workload(
        workload, preset("google"), load_request_law(), 1, Generation(tasks=20, nb_res=len(history.cell))
    )
    run = run_batsim(
        platform, workload, tmp_path / "trace", events=events, energy=True, timeout=120, batsim=batsim_binary
    )
    _check_run(run, events, platform)


def test_a_repeated_event_makes_batsim_abort_and_the_run_fail(batsim_binary, tmp_path):
    """Why events are normalized: Batsim 4.2.1 aborts on a repeated machine_unavailable."""
    events = tmp_path / "repeated.jsonl"
    events.write_text(
        '{"timestamp": 0, "type": "machine_unavailable", "resources": "1"}\n'
        '{"timestamp": 1, "type": "machine_unavailable", "resources": "1"}\n'
    )
    workload = tmp_path / "workload.json"
    write_generated_workload(workload, preset("google"), load_request_law(), 1, Generation(tasks=5, nb_res=64))
    platform = REPO / "platforms" / "google-2011-cell-64.xml"
    with pytest.raises(SimulationError, match="already in UNAVAILABLE state"):
        run_batsim(platform, workload, tmp_path / "bad", events=events, timeout=60, batsim=batsim_binary)
