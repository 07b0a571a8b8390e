"""The scheduler's log of the machines asleep and up, which corrects Batsim's labels."""

from __future__ import annotations

import csv

import numpy as np
from fake_batsim import FakeBatsim

from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig


def test_a_machine_failing_asleep_leaves_the_log_and_comes_back_asleep(tmp_path):
    sim = FakeBatsim(CellPolicy(np.ones(2), np.ones(2), PolicyConfig(energy="idle-sleep", idle_timeout=100.0)))
    sim.step()  # the first pass asks for the idle-timeout wake-up
    sim.advance(150.0)  # both idle since 0: asleep
    sim.finish_switches()
    sim.policy.machines_unavailable(200.0, [1])
    sim.policy.machines_available(300.0, [1])
    log = sim.policy.sleep_log
    assert list(zip(log.times, log.counts)) == [(150.0, 2), (200.0, 1), (300.0, 2)]
    log.write(tmp_path / "out")
    with (tmp_path / "out_sleeping.csv").open() as handle:
        assert list(csv.reader(handle)) == [["time", "sleeping"], ["150.0", "2"], ["200.0", "1"], ["300.0", "2"]]


def test_machines_always_on_write_no_log(tmp_path):
    sim = FakeBatsim(CellPolicy(np.ones(2), np.ones(2), PolicyConfig()))
    sim.policy.machines_unavailable(10.0, [0])
    sim.policy.machines_available(20.0, [0])
    sim.policy.sleep_log.write(tmp_path / "out")
    assert not list(tmp_path.iterdir())
