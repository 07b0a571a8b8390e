"""The scheduler's log of the machines asleep and up, which corrects Batsim's labels."""

from __future__ import annotations

import csv

import numpy as np
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.tasks import JobRequest


def test_a_machine_failing_asleep_leaves_the_log_and_comes_back_asleep(tmp_path):
    sim = FakeBatsim(CellPolicy(np.ones(2), np.ones(2), mechanics_config(energy="idle-sleep", idle_timeout=100.0)))
    sim.step()  # the first pass asks for the idle-timeout wake-up
    sim.advance(150.0)  # both idle since 0: asleep
    sim.finish_switches()
    sim.now = 200.0
    sim.policy.machines_unavailable(sim.now, [1])
    sim.step()
    sim.now = 300.0
    sim.policy.machines_available(sim.now, [1])
    sim.step()
    sim.now = 400.0
    sim.submit(JobRequest("w0!a", 400.0, "task", 0.5, 0.5, 0.5, 10.0))  # wakes one: switching, not asleep
    assert len(sim.switching) == 1
    log = sim.policy.sleep_log
    # both switch off at 100 (0 asleep yet), asleep at 150
    assert list(zip(log.times, log.counts)) == [(100.0, 0), (150.0, 2), (200.0, 1), (300.0, 2), (400.0, 1)]
    log.write(tmp_path / "out")
    with (tmp_path / "out_sleeping.csv").open() as handle:
        assert list(csv.reader(handle))[:3] == [["time", "sleeping"], ["100.0", "0"], ["150.0", "2"]]


def test_machines_always_on_write_no_log(tmp_path):
    sim = FakeBatsim(CellPolicy(np.ones(2), np.ones(2), mechanics_config()))
    sim.policy.machines_unavailable(10.0, [0])
    sim.step()
    sim.policy.machines_available(20.0, [0])
    sim.step()
    sim.policy.sleep_log.write(tmp_path / "out")
    assert not list(tmp_path.iterdir())
