"""Only the wanted calls near the earliest are asked of Batsim; every wanted time still gets its call, asked\nahead of time."""

from __future__ import annotations

import numpy as np
from fake_batsim import FakeBatsim
from uncalibrated import mechanics_config

from batsim_google.scheduling.decisions import WakeAt
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.scheduling.wake_ups import ASK_WITHIN_S, MIN_LEAD_S, WakeUps, on_batsim_grid


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
    grid = [on_batsim_grid(float(time)) for time in wanted]  # asked on Batsim's printed grid
    assert set(grid) <= set(asked_at)
    assert all(time - asked_at[time] >= window for time in grid)
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
    sim.advance(on_batsim_grid(drawn[99]))
    first_ends = sorted(a.end for a in sim.policy.ledger.attempts if a.attempt == 0 and a.end_reason == "evicted")
    assert first_ends == [on_batsim_grid(time) for time in drawn[:100]]  # each at the call asked for its drawn time


def test_a_time_a_rounding_error_after_now_is_called_a_little_later_not_in_batsims_past():
    wake_ups = WakeUps()
    now = 5.542082
    wake_ups.want(now + 1e-12, now)
    wake_ups.want(now, now)  # not later than now: this pass handles it
    assert wake_ups.ask(now) == [WakeAt(now + MIN_LEAD_S)]


def batsim_now(time: float) -> float:
    """The ``now`` of a call Batsim 4.2.1 makes at ``time``: its writer prints numbers with ``%6f``."""
    return float(f"{time:6f}")


def test_every_call_comes_back_at_or_after_the_time_wanted_though_batsim_prints_six_decimals():
    """Asked at the exact time wanted, about half of the calls came back a hair before it (Batsim
    rounds to the nearest microsecond), and what was due then waited for a later call."""
    rng = np.random.default_rng(3)
    wanted = np.concatenate([rng.uniform(0.01, 2e6, 5000), [0.1, 2.0000005, 3600.0, 1e9 + 0.25]])
    wake_ups = WakeUps(window=float("inf"))
    for time in wanted:
        wake_ups.want(float(time), 0.0)
    asked = sorted(request.time for request in wake_ups.ask(0.0))
    assert len(asked) == len(wanted)
    for time, call in zip(sorted(wanted), asked, strict=True):
        assert batsim_now(call) == call  # printed as itself
        assert time <= call < time + 1.01e-6  # not before the time wanted, at most a microsecond after
    assert batsim_now(3600.0) == 3600.0 and wake_ups_time(3600.0) == 3600.0  # a time on the grid stays


def wake_ups_time(time: float) -> float:
    wake_ups = WakeUps()
    wake_ups.want(time, 0.0)
    return wake_ups.ask(0.0)[0].time
