"""A burst on a loaded cell, in real Batsim 4.2.1: a big job's tasks that fit start after the
placement latency, those that must preempt after the preemption delay (each its own, drawn from
its law, with ``preemption_delay_spread``), evicting the free tier
where it holds the room they take (``pay_for_room``), or beside large tasks (``preempt_share``);
inside the free tier, a burst of priority 1 evicts priority 0 (``free_tier_preempt_share``); a
pass larger than ``pass_tasks`` starts together, later by its tasks beyond over ``pass_rate``."""

from __future__ import annotations

import numpy as np
import pytest
from cell_scenarios import PLATFORM, rows, task, workload
from uncalibrated import UNCALIBRATED

from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.schedulers import built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings

pytestmark = pytest.mark.batsim
FREE, FREE_HIGH, NORMAL = 1 / 12, 2 / 12, 5 / 12
LATENCY, DELAY, ARRIVAL = 2.0, 27.0, 100.0


def burst_jobs() -> list[dict]:
    """Ten free-tier tasks of a quarter machine fill the 4-machine cell (capacity 3) but for half a
    machine; at t = 100 a normal job of six half-machine tasks arrives."""
    jobs = [task(i, 0, 1000, priority=FREE, cpu=0.25, memory=0.25) for i in range(10)]
    return jobs + [task(10 + i, ARRIVAL, 200, priority=NORMAL, cpu=0.5, memory=0.5) for i in range(6)]


def simulate(folder, batsim_binary, jobs=None, **policy) -> dict[str, dict]:
    folder.mkdir(parents=True, exist_ok=True)
    config = PolicyConfig(**{**UNCALIBRATED, "placement_latency": LATENCY, "free_tier_room": True, **policy})
    inputs = RunInputs(PLATFORM, [workload(folder / "workload.json", burst_jobs() if jobs is None else jobs)])
    settings = SimulationSettings(timeout=120, batsim=batsim_binary)
    summary = run_scheduler(built_in(config), inputs, folder / "out", settings).summary
    assert summary["balanced"]
    return {row["job_id"]: row for row in rows(folder / "out" / "out_jobs.csv")}


def starts_and_evictions(out: dict[str, dict]) -> tuple[list[float], list[float]]:
    """The big job's start times, and the times free-tier tasks were evicted (killed by Batsim)."""
    starts = sorted(float(out[str(10 + i)]["starting_time"]) for i in range(6))
    evicted = sorted(
        float(row["finish_time"])
        for job, row in out.items()
        if row["final_state"] == "COMPLETED_KILLED" and job.isdigit() and int(job) < 10
    )
    return starts, evicted


def test_a_big_job_on_a_loaded_cell_preempts_after_the_delay(tmp_path, batsim_binary):
    out = simulate(tmp_path / "borg", batsim_binary, pay_for_room=True, preemption_delay=DELAY)
    starts, evicted = starts_and_evictions(out)
    # the task that fits in the half machine left starts after the latency, the five others wait
    assert starts[0] == pytest.approx(ARRIVAL + LATENCY, abs=0.1)
    assert starts[1:] == pytest.approx([ARRIVAL + LATENCY + DELAY] * 5, abs=0.1)
    # they take the whole free tier's room: all ten free-tier tasks go, at the preempting starts
    assert evicted == pytest.approx([ARRIVAL + LATENCY + DELAY] * 10, abs=0.1)
    assert all(row["final_state"] == "COMPLETED_SUCCESSFULLY" for job, row in out.items() if "#" in job)


def test_without_paying_for_room_the_burst_starts_at_once_past_the_capacity(tmp_path, batsim_binary):
    out = simulate(tmp_path / "room", batsim_binary, pay_for_room=False, preemption_delay=DELAY)
    starts, evicted = starts_and_evictions(out)
    assert starts == pytest.approx([ARRIVAL + LATENCY] * 6, abs=0.1) and evicted == []


def test_large_tasks_preempt_the_free_tier_after_the_delay_even_with_room(tmp_path, batsim_binary):
    # the scheduler's default rule, at a share of 1 for a test that cannot pass by chance: the six
    # tasks ask 0.5 of memory (past preempt_memory), so each preempts the free-tier tasks beside it
    out = simulate(tmp_path / "large", batsim_binary, preempt_share=1.0, preempt_memory=0.05, preemption_delay=DELAY)
    starts, evicted = starts_and_evictions(out)
    assert starts == pytest.approx([ARRIVAL + LATENCY + DELAY] * 6, abs=0.1)
    assert len(evicted) >= 6 and evicted == pytest.approx([ARRIVAL + LATENCY + DELAY] * len(evicted), abs=0.1)


def test_a_preempting_burst_starts_over_the_delays_law_each_start_evicting(tmp_path, batsim_binary):
    # the six large tasks preempt (a share of 1), each after its own delay, drawn in queue order
    # from the scheduler's stream (seed 0): a wave over seconds, each start with its evictions
    spread = 5.1
    out = simulate(
        tmp_path / "spread",
        batsim_binary,
        preempt_share=1.0,
        preempt_memory=0.05,
        preemption_delay=DELAY,
        preemption_delay_spread=spread,
    )
    starts = [float(out[str(10 + i)]["starting_time"]) for i in range(6)]
    draws = np.maximum(np.random.default_rng([0, 4]).logistic(DELAY, spread, 6), 0.0)
    assert starts == pytest.approx((ARRIVAL + LATENCY + draws).tolist(), abs=0.01)
    assert max(starts) - min(starts) > 1.0
    _, evicted = starts_and_evictions(out)
    assert len(evicted) >= 6 and all(min(abs(e - s) for s in starts) < 0.01 for e in evicted)


def test_a_free_tier_burst_of_priority_1_evicts_priority_0_after_the_delay(tmp_path, batsim_binary):
    # four priority-0 tasks of 0.45, one on each small machine and two on a large one; at t = 100 a
    # burst of four priority-1 tasks asking more memory than CPU, at a share of 1: each evicts one
    jobs = [task(i, 0, 1000, priority=FREE, cpu=0.45, memory=0.45) for i in range(4)]
    jobs += [task(10 + i, ARRIVAL, 200, priority=FREE_HIGH, cpu=0.02, memory=0.04) for i in range(4)]
    out = simulate(tmp_path / "tier", batsim_binary, jobs, free_tier_preempt_share=1.0, preemption_delay=DELAY)
    starts = sorted(float(out[str(10 + i)]["starting_time"]) for i in range(4))
    evicted = [float(row["finish_time"]) for job, row in out.items() if row["final_state"] == "COMPLETED_KILLED"]
    assert starts == pytest.approx([ARRIVAL + LATENCY + DELAY] * 4, abs=0.1)
    # held together, each is then placed where priority 0 still runs: four evicted, at those starts
    assert evicted == pytest.approx([ARRIVAL + LATENCY + DELAY] * 4, abs=0.1)


def test_a_big_pass_starts_together_after_its_extra_time(tmp_path, batsim_binary):
    # six tasks at t = 100 and 100.5 (one pass, within 0.76 s), two more at 102 (a pass of their
    # own); past 2 tasks a pass waits one second per 2 tasks beyond: (6 - 2) / 2 = 2 s more
    jobs = [task(i, ARRIVAL + 0.5 * (i % 2), 50, priority=NORMAL, cpu=0.1, memory=0.1) for i in range(6)]
    jobs += [task(6 + i, ARRIVAL + 2, 50, priority=NORMAL, cpu=0.1, memory=0.1) for i in range(2)]
    out = simulate(tmp_path / "pass", batsim_binary, jobs, pass_tasks=2, pass_rate=2.0)
    starts = [float(out[str(i)]["starting_time"]) for i in range(8)]
    assert starts[:6] == pytest.approx([ARRIVAL + LATENCY + 2.0] * 6, abs=0.01)
    assert starts[6:] == pytest.approx([ARRIVAL + 2 + LATENCY] * 2, abs=0.01)
    assert max(starts[:6]) - min(starts[:6]) < 0.01  # together (Batsim's messages take a few ms)
