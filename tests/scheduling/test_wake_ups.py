"""Only the wanted calls near the earliest are asked of Batsim; every wanted time still gets its call, asked\nahead of time."""

from __future__ import annotations

import numpy as np
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.decisions import WakeAt
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.scheduling.wake_ups import ASK_WITHIN_S, MIN_LEAD_S, WakeUps


def calls(wake_ups: WakeUps, now: float = 0.0) -> list[float]:
    """The times Batsim calls at, asked at ``now`` and at each call, until nothing is wanted."""
    wake_ups.ask(now)
    called, asked = [], sorted(wake_ups.asked)  # the calls Batsim has been asked for
    while asked:
        now = asked.pop(0)
        called.append(now)
        asked = sorted(asked + [d.time for d in wake_ups.ask(now)])
    return called


def test_the_earliest_is_asked_with_those_within_the_window_then_the_next_at_its_call():
    wake_ups = WakeUps(window=1.0)
    for time in (5.0, 3.0, 9.0, 3.0, 0.0, 3.5):  # a duplicate, and a time not after now
        wake_ups.want(time, 0.0)
    assert wake_ups.ask(0.0) == [WakeAt(3.0), WakeAt(3.5)]
    assert wake_ups.ask(0.0) == []  # asked already
    wake_ups.want(1.0, 0.0)  # earlier than the ones asked: asked too
    assert wake_ups.ask(0.0) == [WakeAt(1.0)]
    assert wake_ups.asked == {1.0, 3.0, 3.5}
    assert calls(wake_ups, 0.0) == [1.0, 3.0, 3.5, 5.0, 9.0]
    assert len(wake_ups) == 0


def test_a_time_wanted_between_calls_is_asked_when_within_the_window():
    wake_ups = WakeUps(window=1.0)
    wake_ups.want(10.0, 0.0)
    assert wake_ups.ask(0.0) == [WakeAt(10.0)]
    wake_ups.want(20.0, 4.0)
    wake_ups.want(7.0, 4.0)
    assert wake_ups.ask(4.0) == [WakeAt(7.0)]
    assert calls(wake_ups, 4.0) == [7.0, 10.0, 20.0]


def test_a_time_wanted_long_before_is_never_asked_at_the_last_moment():
    """Batsim's clock may be a few milliseconds past the scheduler's when it reads a request: every
    time wanted more than the window ahead is asked at least the window ahead, even one a hair
    after another (asked together, not at the first one's call)."""
    window = 5.0
    rng = np.random.default_rng(7)
    wanted = np.concatenate([rng.uniform(10, 1000, 300), [500.0 + 1e-3, 500.0]])
    wake_ups = WakeUps(window)
    asked_at: dict[float, float] = {}
    for time in wanted:
        wake_ups.want(float(time), 0.0)
    pending, now = [], 0.0
    while True:
        for request in wake_ups.ask(now):
            asked_at[request.time] = now
            pending.append(request.time)
        if not pending:
            break
        pending.sort()
        now = pending.pop(0)
        if rng.random() < 0.5:  # a call sometimes wants a time of its own, near or far
            wake_ups.want(now + float(rng.exponential(20.0)), now)
    assert set(wanted) <= set(asked_at)
    assert all(time - asked_at[time] >= window for time in wanted)
    assert len(wake_ups) == 0


def test_thousands_of_drawn_evictions_keep_a_few_wake_ups_outstanding_and_all_happen():
    # every start draws its eviction (a rate of 500 per 1,000 task-hours: about 2,000 s away)
    config = mechanics_config(eviction_rate_normal=500.0)
    sim = FakeBatsim(CellPolicy(np.ones(100), np.ones(100), config))
    for i in range(1000):
        request = JobRequest(f"w0!{i}", 0.0, "task", 0.5, 0.1, 0.1, 1e6)
        sim.requests[request.job_id] = request
        sim.submitted.add(request.job_id)
        sim.policy.job_submitted(0.0, request)
    sim.step()
    assert len(sim.running) == 1000
    drawn = sorted(entry[0] for entry in sim.policy._reclaims)
    within = sum(time <= drawn[0] + ASK_WITHIN_S for time in drawn)
    assert len(sim.wakeups) == within < 50  # those within the window of the earliest, not one per draw
    assert len(drawn) == 1000
    sim.advance(drawn[99])
    first_ends = sorted(a.end for a in sim.policy.ledger.attempts if a.attempt == 0 and a.end_reason == "evicted")
    assert first_ends == drawn[:100]  # each evicted at its drawn time


def test_a_time_a_rounding_error_after_now_is_called_a_little_later_not_in_batsims_past():
    wake_ups = WakeUps()
    now = 5.542082
    wake_ups.want(now + 1e-12, now)
    wake_ups.want(now, now)  # not later than now: this pass handles it
    assert wake_ups.ask(now) == [WakeAt(now + MIN_LEAD_S)]
