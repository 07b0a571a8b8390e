"""Borg's passes: a big pass's tasks become placeable together, later the more it holds."""

from __future__ import annotations

import numpy as np
import pytest
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.passes import PASS_SPAN, Passes
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.tasks import JobRequest


def test_a_pass_within_its_tasks_keeps_each_task_s_own_latency():
    passes = Passes(latency=2.0, tasks=3, rate=10.0)
    joined = [passes.join(t) for t in (0.0, 0.1, 0.5)]
    assert joined[0] is joined[1] is joined[2] and joined[0].size == 3
    assert [passes.ready(t, joined[0]) for t in (0.0, 0.1, 0.5)] == [2.0, 2.1, 2.5]


def test_past_its_tasks_a_pass_is_placed_together_one_second_per_rate_tasks_later():
    passes = Passes(latency=2.0, tasks=3, rate=10.0)
    for t in [0.0] * 5 + [0.5] * 5:
        joined = passes.join(t)
    # 10 tasks, 7 past the 3: 0.7 s after the first's latency, for the first and the last alike
    assert passes.ready(0.0, joined) == pytest.approx(2.7)
    assert passes.ready(0.5, joined) == pytest.approx(2.7)


def test_a_task_past_the_span_opens_a_new_pass():
    passes = Passes(latency=2.0, tasks=1, rate=1.0)
    first = passes.join(0.0)
    assert passes.join(PASS_SPAN) is first
    second = passes.join(PASS_SPAN + 0.01)
    assert second is not first and second.size == 1 and first.size == 2
    assert passes.ready(0.0, first) == 3.0 and passes.ready(PASS_SPAN + 0.01, second) == pytest.approx(PASS_SPAN + 2.01)


def test_a_rate_of_zero_sets_no_limit():
    passes = Passes(latency=2.0, tasks=0, rate=0.0)
    for _ in range(10_000):
        joined = passes.join(0.0)
    assert passes.ready(0.0, joined) == 2.0


def job(job_id, at=0.0):
    return JobRequest(f"w0!{job_id}", at, "task", 0.5, 0.01, 0.01, 100.0)


def cell(**config) -> FakeBatsim:
    return FakeBatsim(CellPolicy(np.ones(4), np.ones(4), mechanics_config(**{"placement_latency": 2.0, **config})))


def test_the_scheduler_starts_a_big_pass_s_tasks_together_after_its_extra_time():
    sim = cell(pass_tasks=2, pass_rate=2.0)
    sim.submit(job("a"))  # alone so far: placeable at 2 s
    sim.now = 0.5
    for i in range(5):  # the pass holds 6 tasks, 4 past 2: 2 s more
        sim.submit(job(i, 0.5))
    sim.now = 1.5  # past the span: a pass of its own
    sim.submit(job("late", 1.5))
    sim.advance(3.9)
    assert list(sim.running) == ["w0!late"]  # its own latency only: 3.5 s
    sim.advance(4.0)
    starts = {job_id: sim.policy.by_job[job_id].start_time for job_id in sim.running}
    assert len(starts) == 7 and set(starts.values()) == {3.5, 4.0}
    assert {job_id for job_id, at in starts.items() if at == 4.0} == {"w0!a", *(f"w0!{i}" for i in range(5))}


def test_without_a_pass_rate_every_task_waits_the_latency_only():
    sim = cell(pass_tasks=2, pass_rate=0.0)
    for i in range(6):
        sim.submit(job(i))
    sim.advance(2.0)
    assert len(sim.running) == 6 and {sim.policy.by_job[j].start_time for j in sim.running} == {2.0}


def test_the_defaults_are_the_fit_on_every_hour_of_the_shared_parts():
    config = PolicyConfig()
    assert (config.pass_tasks, config.pass_rate) == (850, 641.0)


def test_without_a_placement_latency_no_pass_waits():
    sim = cell(placement_latency=0.0, pass_tasks=2, pass_rate=1.0)
    for i in range(6):
        sim.submit(job(i))
    assert len(sim.running) == 6 and not sim.wakeups
