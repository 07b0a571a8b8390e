"""A replay on a sampled cell: its passes stand for the whole cell's, their counts scaled."""

from __future__ import annotations

import pytest

from batsim_google.experiments.replay_validation import sampled_policy
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.scheduling.passes import Passes
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.trace.sampling import MachineSample


def test_the_whole_cell_keeps_the_policy():
    policy = PolicyConfig()
    assert sampled_policy(policy, None) is policy


def test_a_sample_scales_the_pass_counts_by_its_fraction():
    policy = sampled_policy(PolicyConfig(pass_tasks=850, pass_rate=641.0), MachineSample(1024, seed=3))
    fraction = 1024 / GOOGLE_2011_MACHINES
    assert policy.pass_tasks == round(850 * fraction) == 69
    assert policy.pass_rate == pytest.approx(641.0 * fraction)
    assert policy.placement_latency == PolicyConfig().placement_latency


def test_a_sampled_pass_waits_as_the_whole_cell_s_pass_it_stands_for():
    whole, sample = PolicyConfig(), MachineSample(1024)
    sampled = sampled_policy(whole, sample)
    cell = Passes(whole.placement_latency, whole.pass_tasks, whole.pass_rate)
    replay = Passes(sampled.placement_latency, sampled.pass_tasks, sampled.pass_rate)
    for _ in range(3154):
        big = cell.join(0.0)
    for _ in range(round(3154 * sample.fraction)):
        small = replay.join(0.0)
    assert cell.ready(0.0, big) == pytest.approx(2.0 + (3154 - 850) / 641)
    assert replay.ready(0.0, small) == pytest.approx(cell.ready(0.0, big), abs=0.05)
