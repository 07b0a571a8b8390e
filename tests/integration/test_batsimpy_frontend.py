"""The Google-cell policy through batsim-py 1.0.5 in real Batsim 4.2.1: what runs, checked from
Batsim's outputs, and what cannot, each failure reproduced against the real Batsim."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from uncalibrated import UNCALIBRATED

from batsim_google.errors import ParameterError, SimulationError
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.preflight import check_batsim_py
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.schedulers import built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings

batsimpy_frontend = pytest.importorskip(
    "batsim_google.simulation.batsimpy_frontend", reason="batsim-py is not installed (uv sync --extra batsim-py)"
)
from cell_scenarios import PLATFORM, evicted_for_the_high_task, idle_sleep_beats_always_on, preemption_jobs, rows, task  # noqa: E402
from cell_scenarios import workload as our_workload  # noqa: E402


def workload(path: Path, jobs: list[dict], keep_no_walltime: bool = False) -> Path:
    """Our workload format; without ``keep_no_walltime``, jobs with no walltime (-1) lose the field,
    which Batsim reads the same way and batsim-py can parse."""
    our_workload(path, jobs)
    if not keep_no_walltime:
        data = json.loads(path.read_text())
        for job in data["jobs"]:
            if job["walltime"] == -1:
                del job["walltime"]
        path.write_text(json.dumps(data))
    return path


def platform_for_batsim_py(tmp_path: Path, keep_wattage: bool = True) -> Path:
    """The test platform with batsim-py's ``watt_per_state`` beside (or instead of) SimGrid's
    ``wattage_per_state``."""
    text = PLATFORM.read_text()
    replacement = (
        r'\1\n      <prop id="watt_per_state" value="\2"/>'
        if keep_wattage
        else r'<prop id="watt_per_state" value="\2"/>'
    )
    path = tmp_path / ("both_properties.xml" if keep_wattage else "watt_only.xml")
    path.write_text(re.sub(r'(<prop id="wattage_per_state" value="([^"]*)"/>)', replacement, text))
    return path


def simulate(tmp_path, jobs, batsim_binary, platform=PLATFORM, **policy):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = workload(tmp_path / "workload.json", jobs) if isinstance(jobs, list) else jobs
    summary = run_scheduler(
        built_in(PolicyConfig(**{"restart": "none", **UNCALIBRATED, **policy})),
        RunInputs(platform, [path]),
        tmp_path / "out",
        SimulationSettings(timeout=60, batsim=batsim_binary, frontend="batsim-py"),
    ).summary
    return summary, {row["job_id"]: row for row in rows(tmp_path / "out" / "out_jobs.csv")}


def run_batsim_py(code: str, *args, tmp_path: Path, timeout: float) -> tuple[int | None, str]:
    """Run a batsim-py script (which starts Batsim itself); its exit status, or None if it had to
    be stopped after ``timeout`` seconds, and everything it and Batsim printed."""
    process = subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env=dict(os.environ, TMPDIR=str(tmp_path)),  # Batsim's outputs
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return None, process.communicate()[0]


# ----- what runs ---------------------------------------------------------------------------------


@pytest.mark.batsim
def test_preemption_evicts_lower_priorities_without_resubmission(tmp_path, batsim_binary):
    jobs = preemption_jobs() + [task(5, 20, 10, cpu=2.0, memory=0.5)]  # 5: larger than every machine
    summary, out = simulate(tmp_path, jobs, batsim_binary)
    killed = evicted_for_the_high_task(out)
    assert float(out[killed]["finish_time"]) == pytest.approx(10.0, abs=0.1)
    assert out["5"]["final_state"] == "REJECTED"
    assert all(row["workload_name"] == "w0" for row in out.values())  # restart 'none': no new job
    outcomes = summary["outcomes"]
    assert summary["balanced"] and (outcomes["completed"], outcomes["not_restarted"], outcomes["rejected"]) == (4, 1, 1)
    evicted = [a for a in rows(tmp_path / "out" / "out_attempts.csv") if a["end_reason"] == "evicted"]
    assert [a["job_id"] for a in evicted] == [f"w0!{killed}"]


@pytest.mark.batsim
def test_services_are_killed_by_design_at_their_lifetime(tmp_path, batsim_binary):
    jobs = [task(i, i, 30.0 + 10 * i, kind="service", cpu=0.25, memory=0.25) for i in range(6)]
    path = workload(tmp_path / "services.json", jobs, keep_no_walltime=True)  # services have walltimes
    summary, out = simulate(tmp_path, path, batsim_binary)
    for i in range(6):
        assert out[str(i)]["final_state"] == "COMPLETED_WALLTIME_REACHED"
        assert float(out[str(i)]["execution_time"]) == pytest.approx(30.0 + 10 * i, abs=1e-3)
    assert summary["outcomes"]["killed_by_design"] == 6 and summary["balanced"]


@pytest.mark.batsim
def test_idle_sleep_consumes_less_than_always_on(tmp_path, batsim_binary):
    platform = platform_for_batsim_py(tmp_path)
    run = lambda folder, jobs, **policy: simulate(folder, jobs, batsim_binary, platform, **policy)  # noqa: E731
    out = idle_sleep_beats_always_on(run, tmp_path)
    # batsim-py disables Batsim's machine-state tracing: read the sleep pstate (1) from pstate changes
    changes = rows(out / "out_pstate_changes.csv")
    slept = {int(m) for row in changes if row["new_pstate"] == "1" for m in _machines(row["machine_id"])}
    assert slept == {0, 1, 2, 3}


def _machines(interval_set: str) -> list[int]:
    machines = []
    for part in interval_set.split():
        low, _, high = part.partition("-")
        machines += range(int(low), int(high or low) + 1)
    return machines


# ----- what batsim-py cannot do with Batsim 4.2.1 --------------------------------------------------


def test_runs_needing_what_batsim_py_lacks_are_refused_before_starting():
    unsupported = batsimpy_frontend.BatsimPyUnsupported
    with pytest.raises(unsupported, match="dynamic job registration"):
        check_batsim_py(PolicyConfig(restart="immediate"), RunInputs("p.xml", ["w.json"]))
    with pytest.raises(unsupported, match="machine_available"):
        check_batsim_py(PolicyConfig(restart="none"), RunInputs("p.xml", ["w.json"], ["events.jsonl"]))
    with pytest.raises(unsupported, match="exactly one workload"):
        check_batsim_py(PolicyConfig(restart="none"), RunInputs("p.xml", ["a.json", "b.json"]))
    check_batsim_py(PolicyConfig(restart="none"), RunInputs("p.xml", ["w.json"]))


@pytest.mark.batsim
def test_batsim_py_starts_batsim_without_dynamic_jobs_or_event_forwarding(tmp_path, batsim_binary):
    from batsim_py import SimulatorHandler

    path = workload(tmp_path / "one.json", [task(0, 0, 10)])
    code = (
        "import sys\nfrom batsim_py import SimulatorHandler\nsim = SimulatorHandler()\n"
        "try:\n    sim.start(sys.argv[1], sys.argv[2], 'network-only', allow_compute_sharing=True)\n"
        "finally:\n    sim.close()\n"
    )
    status, output = run_batsim_py(code, PLATFORM, path, tmp_path=tmp_path, timeout=30)
    assert status == 0, output
    sent = next(line for line in output.splitlines() if "SIMULATION_BEGINS" in line)  # Batsim's own log
    config = json.loads(sent[sent.index("Sending '") + 9 : sent.rindex("'")])["events"][0]["data"]["config"]
    assert config["dynamic-jobs-enabled"] is False and config["dynamic-jobs-acknowledged"] is False
    assert config["profile-reuse-enabled"] is False and config["forward-unknown-events"] is False
    assert not [name for name in dir(SimulatorHandler) if "regist" in name.lower()]  # and no call to register


@pytest.mark.batsim
def test_user_kill_events_abort_batsim_and_batsim_py_waits_forever(tmp_path, batsim_binary):
    path = workload(tmp_path / "one.json", [task(0, 0, 100)])
    events = tmp_path / "kills.jsonl"
    events.write_text(json.dumps({"type": "user_kill", "timestamp": 10, "job_id": "w0!0"}) + "\n")
    code = (
        "import sys\nfrom batsim_py import SimulatorHandler\nsim = SimulatorHandler()\n"
        "sim.start(sys.argv[1], sys.argv[2], 'quiet', allow_compute_sharing=True, external_events=sys.argv[3])\n"
    )
    status, output = run_batsim_py(code, PLATFORM, path, events, tmp_path=tmp_path, timeout=10)
    assert "Unknown event type: user_kill" in output  # no --forward-unknown-events
    assert status is None  # still waiting for Batsim's first message


@pytest.mark.batsim
def test_machine_failure_breaks_batsim_py_host_states(tmp_path, batsim_binary):
    path = workload(tmp_path / "one.json", [task(0, 0, 100, cpu=1.0, memory=1.0)])
    events = tmp_path / "failure.jsonl"
    events.write_text(
        json.dumps({"type": "machine_unavailable", "resources": "0", "timestamp": 5})
        + "\n"
        + json.dumps({"type": "machine_available", "resources": "0", "timestamp": 20})
        + "\n"
    )
    code = (
        "import sys\nfrom batsim_py import SimulatorHandler\nsim = SimulatorHandler()\n"
        "try:\n"
        "    sim.start(sys.argv[1], sys.argv[2], 'quiet', allow_compute_sharing=True, external_events=sys.argv[3])\n"
        "    sim.proceed_time()\n"
        "    sim.allocate('w0!0', [0])\n"
        "    while sim.is_running:\n"
        "        sim.proceed_time()\n"
        "        if sim.platform.get_host(0).is_unavailable and sim.jobs:\n"
        "            print('killing w0!0 at', sim.current_time, flush=True)\n"
        "            sim.kill_job('w0!0')  # Batsim 4 leaves a failed machine's tasks to the scheduler\n"
        "finally:\n    sim.close()\n"
    )
    status, output = run_batsim_py(code, PLATFORM, path, events, tmp_path=tmp_path, timeout=30)
    assert "killing w0!0 at 5" in output
    assert status not in (0, None)
    assert "SystemError: A host must be unavailable to become available, got IDLE" in output


@pytest.mark.batsim
def test_jobs_without_walltime_crash_batsim_py(tmp_path, batsim_binary):
    path = workload(tmp_path / "tasks.json", [task(0, 0, 10)], keep_no_walltime=True)  # walltime -1
    with pytest.raises(SimulationError, match=r"rejects jobs without walltime .*got -1\.0"):
        simulate(tmp_path, path, batsim_binary)


@pytest.mark.batsim
def test_energy_property_names_differ_between_batsim_py_and_simgrid(tmp_path, batsim_binary):
    jobs = [task(0, 0, 10)]
    with pytest.raises(SimulationError, match="batsim-py finds no power states"):  # wattage_per_state only
        simulate(tmp_path / "wattage", jobs, batsim_binary, energy="idle-sleep")
    # watt_per_state only: SimGrid 3.32 wants wattage_per_state (it would abort with "No power range
    # properties specified for host m0"): refused before Batsim starts, as `run` refuses it
    with pytest.raises(ParameterError, match=r"has no energy model \(4 of 4 compute hosts .* no wattage_per_state"):
        simulate(tmp_path / "watt", jobs, batsim_binary, platform_for_batsim_py(tmp_path, keep_wattage=False))
    assert not (tmp_path / "watt" / "out").exists()
