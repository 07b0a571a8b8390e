"""No pstate switch that a known failure interrupts: reading the failures and the switch times,
and the power manager's use of them (Batsim 4.2.1 aborts otherwise: tests/integration)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import REPO
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.switch_guard import SwitchGuard, failure_times, switch_seconds
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.simulation.frontend import cell_policy

PLATFORM = REPO / "tests" / "fixtures" / "cell4_energy.xml"  # 4 machines; switches: 1 flop at 0.1 f/s


def test_failure_times_read_machine_unavailable_events_only(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(event)
            for event in [
                {"timestamp": 305.0, "type": "machine_unavailable", "resources": "1-2"},
                {"timestamp": 400.0, "type": "machine_available", "resources": "1-2"},
                {"timestamp": 900.0, "type": "machine_unavailable", "resources": "1"},
                {"timestamp": 950.0, "type": "user_kill", "job_id": "w0!3"},
            ]
        )
        + "\n"
    )
    times = failure_times([path], 4)
    assert [t.tolist() for t in times] == [[], [305.0, 900.0], [305.0], []]
    path.write_text('{"timestamp": 1.0, "type": "machine_unavailable", "resources": "7"}\n')
    with pytest.raises(ValueError, match=rf"{path}:1: unreadable machine_unavailable event"):
        failure_times([path], 4)


def test_switch_seconds_are_one_flop_at_the_virtual_pstates_speeds():
    on, off = switch_seconds(compute_hosts(PLATFORM))  # <cluster> speeds 1Gf, 1e-6f, 0.1f, 0.1f; sleep_pstates 1:2:3
    assert on.tolist() == pytest.approx([10.0] * 4) and off.tolist() == pytest.approx([10.0] * 4)


def test_guard_refuses_switches_that_end_after_a_failure():
    guard = SwitchGuard([np.array([100.0, 500.0]), np.array([])], np.array([10.0, 10.0]), np.array([5.0, 5.0]))
    both = np.array([True, True])
    assert guard.allows(both, 80.0, on=True).tolist() == [True, True]  # ends at 90, before 100
    assert guard.allows(both, 92.0, on=True).tolist() == [False, True]  # would end at 102
    assert guard.allows(both, 92.0, on=False).tolist() == [True, True]  # switching off takes 5 s
    assert guard.allows(both, 100.0, on=False).tolist() == [False, True]  # failing right now
    assert guard.allows(both, 101.0, on=True).tolist() == [True, True]  # next failure: 500
    assert guard.allows(both, 495.0, on=True).tolist() == [False, True]
    assert guard.allows(np.array([False, True]), 495.0, on=True).tolist() == [False, True]


def test_power_manager_wakes_and_puts_to_sleep_no_machine_about_to_fail():
    guard = SwitchGuard([np.array([]), np.array([305.0]), np.array([])], np.full(3, 10.0), np.full(3, 10.0))
    policy = CellPolicy(np.ones(3), np.ones(3), mechanics_config(energy="idle-sleep", idle_timeout=60.0), guard)
    sim = FakeBatsim(policy)
    sim.submit(JobRequest("w0!a", 0.0, "task", 0.5, 1.0, 1.0, 10_000.0))
    sim.advance(55.0)
    sim.advance(60.0)
    assert sim.switching == {1: False, 2: False}
    sim.finish_switches()
    sim.now = 300.0  # machine 1 fails at 305, within its 10 s switch: machine 2 is woken
    sim.submit(JobRequest("w0!b", 300.0, "task", 0.5, 1.0, 1.0, 10.0))
    assert sim.switching == {2: True}
    sim.finish_switches()
    assert sim.running["w0!b"] == 2
    sim.now = 310.0
    sim.complete("w0!b")
    sim.advance(369.0)
    assert sim.switching == {}
    guard = SwitchGuard([np.array([]), np.array([]), np.array([375.0])], np.full(3, 10.0), np.full(3, 10.0))
    sim.policy.switch_guard = guard  # machine 2, idle since 310, would sleep at 370 but fails at 375
    sim.advance(370.0)
    assert sim.switching == {}


def test_the_front_ends_policy_has_a_guard_with_an_energy_policy_and_events(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text('{"timestamp": 305, "type": "machine_unavailable", "resources": "1"}\n')
    properties = [host.properties for host in compute_hosts(PLATFORM)]
    sleepy = mechanics_config(energy="idle-sleep")
    assert cell_policy(properties, sleepy, PLATFORM, [events]).switch_guard is not None
    assert cell_policy(properties, sleepy).switch_guard is None  # nothing to foresee
    assert cell_policy(properties, PolicyConfig(), PLATFORM, [events]).switch_guard is None  # never switches
    with pytest.raises(ValueError, match="4 compute hosts, but Batsim has 3 machines"):
        cell_policy(properties[:3], sleepy, PLATFORM, [events])


@pytest.mark.parametrize("failure", [205.0, 215.0])
def test_a_task_waits_for_no_machine_too_close_to_failing_to_be_woken(failure):
    guard = SwitchGuard([np.array([]), np.array([failure])], np.full(2, 10.0), np.full(2, 10.0))
    config = mechanics_config(energy="idle-sleep", idle_timeout=100.0, wake_before_evicting=True)
    sim = FakeBatsim(CellPolicy(np.ones(2), np.ones(2), config, guard))
    sim.submit(JobRequest("w0!low", 0.0, "task", 0.1, 1.0, 1.0, 10_000.0))
    sim.advance(150.0)
    assert sim.switching == {1: False}
    sim.finish_switches()
    sim.now = 200.0  # a wake of machine 1 would end at 210
    sim.submit(JobRequest("w0!high", 200.0, "task", 0.9, 1.0, 1.0, 100.0))
    if failure < 210.0:  # it fails first: not woken, so "high" evicts rather than waits for it
        ((killed, executes),) = sim.kills
        assert killed == ("w0!low",) and [e.job_id for e in executes] == ["w0!high"]
        assert sim.switching == {}
    else:
        assert not sim.kills and sim.switching == {1: True}


def test_a_task_waits_for_machines_the_guard_keeps_asleep_instead_of_being_rejected():
    guard = SwitchGuard([np.array([305.0]), np.array([305.0])], np.full(2, 10.0), np.full(2, 10.0))
    sim = FakeBatsim(
        CellPolicy(np.ones(2), np.ones(2), mechanics_config(energy="idle-sleep", idle_timeout=60.0), guard)
    )
    sim.advance(61.0)
    sim.step()
    sim.finish_switches()  # both asleep
    sim.now = 300.0
    sim.submit(JobRequest("w0!a", 300.0, "task", 0.5, 1.0, 1.0, 10.0))
    sim.policy.no_more_jobs = True
    sim.step()
    assert not sim.finished and sim.switching == {} and "w0!a" in sim.submitted  # none woken, none rejected
    sim.now = 305.0
    sim.policy.machines_unavailable(sim.now, [0, 1])
    sim.now = 400.0
    sim.policy.machines_available(sim.now, [0, 1])
    sim.policy.no_more_events = True
    sim.step()
    assert sim.switching == {0: True}
    sim.finish_switches()
    assert sim.running == {"w0!a": 0}


def test_an_energy_policy_on_a_platform_without_sleep_states_is_refused_before_launch(tmp_path):
    from batsim_google.simulation.run import run_scheduler
    from batsim_google.simulation.schedulers import built_in
    from batsim_google.simulation.settings import RunInputs, SimulationSettings

    platform = tmp_path / "awake.xml"
    platform.write_text("\n".join(line for line in PLATFORM.read_text().splitlines() if "sleep_pstates" not in line))
    with pytest.raises(
        ValueError,
        match=r"energy policy 'idle-sleep'\) refused: .* needs a sleep_pstates property on every host \(4 without",
    ):
        scheduler = built_in(PolicyConfig(energy="idle-sleep"))
        run_scheduler(
            scheduler, RunInputs(platform, []), tmp_path / "out", SimulationSettings(batsim="/nonexistent", warn=print)
        )
    assert not (tmp_path / "out").exists()
