"""The contention predicted from a workload against a cell's capacity: the queue that forms where
the load passes the capacity, in priority order, and the free tier evicted by the tiers above."""

from __future__ import annotations

import numpy as np
import pytest

from batsim_google.model.priority import unit_priority
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.contention import BIN_S, predict_contention

FREE = float(unit_priority(0))  # the free tier
NORMAL = float(unit_priority(4))
#: No eviction drawn, per task-hour or at placements: the queue and the room alone.
QUIET = dict(
    eviction_rate_normal=0.0,
    eviction_rate_production=0.0,
    preempt_share=0.0,
    free_tier_preempt_share=0.0,
    free_tier_preempt_share_cpu=0.0,
    free_tier_preempt_share_alone=0.0,
)


def contention(jobs: list[tuple[float, float, float, float, float]], capacity=(1.0, 1.0), horizon=None, config=None):
    """``jobs``: (submit, makespan, cpu, memory, priority)."""
    submit, makespan, cpu, memory, priority = (np.array(column, dtype=float) for column in zip(*jobs, strict=True))
    return predict_contention(
        submit, makespan, cpu, memory, priority, capacity, horizon, config or PolicyConfig(**QUIET)
    )


def test_a_load_within_the_capacity_never_queues():
    jobs = [(60.0 * i, 600.0, 0.3, 0.3, NORMAL) for i in range(30)]  # at most 10 at once: 3 CPUs
    predicted = contention(jobs, capacity=(3.0, 3.0), horizon=3600.0)
    assert (predicted.restarts, predicted.queued_task_steps, predicted.peak_queue) == (0, 0, 0)
    assert predicted.steps == 30 + 30  # every submission and every end, at its own instant
    assert predicted.peak_running == 10


def test_tasks_past_the_capacity_wait_until_room_is_freed():
    # three full-machine tasks at once on one machine, each 10 bins long: two wait 10 bins, one 20
    jobs = [(0.0, 10 * BIN_S, 1.0, 0.5, NORMAL) for _ in range(3)]
    predicted = contention(jobs, horizon=40 * BIN_S)
    assert predicted.peak_queue == 2 and predicted.restarts == 0
    # the passes that find tasks waiting: the first end (2 waiting) and the second (1 waiting)
    assert predicted.queued_task_steps == 2 + 1
    assert predicted.steps == 1 + 3  # the submission, and the ends delayed one after the other
    assert predicted.peak_running == 1


def test_the_lower_priority_waits_and_memory_binds_too():
    jobs = [(0.0, 10 * BIN_S, 0.1, 0.8, NORMAL), (0.0, 10 * BIN_S, 0.1, 0.8, NORMAL + 0.2)]
    assert contention(jobs).peak_queue == 1  # 1.6 of memory on 1: one waits
    # the higher priority starts first, the lower when it ends (5 bins); the other way round, the
    # higher would still wait at the horizon's pass (10 bins)
    jobs = [(0.0, 20 * BIN_S, 1.0, 1.0, NORMAL), (0.0, 5 * BIN_S, 1.0, 1.0, NORMAL + 0.2)]
    assert contention(jobs, horizon=10 * BIN_S).queued_task_steps == 1


def test_the_tiers_above_take_the_free_tiers_room_past_the_capacity_or_pay_for_it():
    free_tier = [(0.0, 100 * BIN_S, 0.5, 0.5, FREE) for _ in range(2)]  # the cell's memory, all of it
    above = [(10 * BIN_S, 5 * BIN_S, 0.5, 0.5, NORMAL)]
    predicted = contention(free_tier + above, horizon=200 * BIN_S)
    assert predicted.restarts == 0 and predicted.peak_queue == 0  # the cell holds 1.5 of its memory
    paying = contention(free_tier + above, horizon=200 * BIN_S, config=PolicyConfig(pay_for_room=True, **QUIET))
    # one free-tier task evicted for the room, queued until the task above ends, then restarted
    assert paying.restarts == 1 and paying.peak_queue == 1
    # without the free tier's room, the task above waits for the free tier to end
    waiting = contention(free_tier + above, horizon=200 * BIN_S, config=PolicyConfig(free_tier_room=False, **QUIET))
    assert waiting.restarts == 0 and waiting.peak_queue == 1


def test_the_free_tier_over_commits_the_cpu_within_its_ratio():
    jobs = [(0.0, 10 * BIN_S, 0.49, 0.1, FREE) for _ in range(3)]  # 1.47 CPUs on 1, within 1.48
    assert contention(jobs).peak_queue == 0
    assert contention(jobs, config=PolicyConfig(free_tier_overcommit=1.0, **QUIET)).peak_queue == 1
    above = [(0.0, 10 * BIN_S, 0.49, 0.1, NORMAL) for _ in range(3)]  # the tiers above: within 1 CPU
    assert contention(above).peak_queue == 1


def test_evictions_drawn_besides_preemption_follow_the_rates_per_task_hour():
    jobs = [(0.0, 3600.0, 0.001, 0.001, NORMAL) for _ in range(1000)]  # 1,000 task-hours
    predicted = contention(jobs, capacity=(10.0, 10.0), config=PolicyConfig(eviction_rate_normal=1.6))
    assert predicted.restarts == pytest.approx(1.6)
    assert contention(jobs, capacity=(10.0, 10.0), horizon=1800.0, config=PolicyConfig()).restarts == pytest.approx(0.8)


def test_placements_draw_evictions_at_the_schedulers_shares_until_their_memory_is_freed():
    free_tier = [(0.0, 3600.0, 0.01, 0.02, FREE) for _ in range(50)]  # a warm start's: placed without evicting
    large = [(10.0 * i + 1, 60.0, 0.1, 0.07, NORMAL) for i in range(10)]  # asks more than preempt_memory
    small = [(10.0 * i + 2, 60.0, 0.1, 0.04, NORMAL) for i in range(10)]
    config = PolicyConfig(**{**QUIET, "preempt_share": 0.5})
    # each large placement evicts at half of them, 0.07 / 0.02 -> 4 victims: 10 x 0.5 x 4
    assert contention(free_tier + large + small, capacity=(10.0, 10.0), config=config).restarts == pytest.approx(20.0)
    upper = float(unit_priority(1))
    burst = [(100.0 + 0.1 * i, 60.0, 0.01, 0.03, upper) for i in range(4)]  # one shape within a second
    alone = [(500.0, 60.0, 0.01, 0.03, upper)]
    config = PolicyConfig(**{**QUIET, "free_tier_preempt_share": 0.8, "free_tier_preempt_share_alone": 0.1})
    # 0.03 / 0.02 -> 2 victims each, at 0.8 in the burst (more memory than CPU), 0.1 alone
    predicted = contention(free_tier + burst + alone, capacity=(10.0, 10.0), config=config)
    assert predicted.restarts == pytest.approx(4 * 0.8 * 2 + 0.1 * 2)


def test_without_a_horizon_a_service_of_years_is_followed_a_bounded_time():
    jobs = [(0.0, 1e12, 0.5, 0.5, NORMAL), (10.0, 60.0, 0.8, 0.1, NORMAL)]  # the second never fits
    predicted = contention(jobs)
    assert predicted.peak_queue == 1 and predicted.steps == 3  # the two submissions and the service's end
