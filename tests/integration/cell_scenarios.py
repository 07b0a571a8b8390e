"""What the scheduler's integration tests share: hand-built scenarios on the 4-machine test cell
and reading Batsim's CSV outputs."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import polars as pl

from batsim_google.generation.batsim_json import WorkloadWriter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLATFORM = FIXTURES / "cell4_energy.xml"  # m0, m1: capacity 1; m2, m3: capacity 0.5


def task(i, subtime, delay, priority=0.5, cpu=0.5, memory=0.5, kind="task") -> dict:
    """One job of a scenario; a service's ``delay`` is its lifetime."""
    return {
        "id": i,
        "subtime": float(subtime),
        "delay": float(delay),
        "kind": kind,
        "priority": priority,
        "cpu": cpu,
        "memory": memory,
    }


def workload(path: Path, jobs: list[dict]) -> Path:
    with WorkloadWriter(path, nb_res=4) as writer:
        writer.write(pl.DataFrame(jobs))
    return path


def rows(path: Path) -> list[dict]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def total_energy(path: Path) -> float:
    """Joules consumed by the compute machines, from Batsim's ``out_consumed_energy.csv``."""
    return float(rows(path)[-1]["energy"])


def idle_sleep_beats_always_on(simulate: Callable[..., tuple[dict, dict]], folder: Path) -> Path:
    """Six short tasks ten minutes apart (an idle-heavy workload) under always-on and idle-sleep:
    both balance, every task completes, idle-sleep consumes less than 0.6x. ``simulate(folder,
    jobs, **policy)`` runs one; returns the idle-sleep run's output folder."""
    jobs = [task(i, 600.0 * i, 30.0, cpu=0.25, memory=0.25) for i in range(6)]
    always, _ = simulate(folder / "always", jobs, energy="always-on")
    sleepy, out = simulate(folder / "sleep", jobs, energy="idle-sleep", idle_timeout=60.0)
    assert always["balanced"] and sleepy["balanced"]
    assert all(row["final_state"] == "COMPLETED_SUCCESSFULLY" for row in out.values())
    on = total_energy(folder / "always" / "out" / "out_consumed_energy.csv")
    off = total_energy(folder / "sleep" / "out" / "out_consumed_energy.csv")
    assert off < 0.6 * on
    return folder / "sleep" / "out"


def preemption_jobs() -> list[dict]:
    """Four low-priority tasks fill the cell (two big, two small); a high-priority big one arrives
    at t = 10 and fits nowhere."""
    jobs = [task(i, 0, 100, priority=0.1, cpu=1.0 if i < 2 else 0.5, memory=1.0 if i < 2 else 0.5) for i in range(4)]
    return jobs + [task(4, 10, 20, priority=0.9, cpu=1.0, memory=0.5)]


def evicted_for_the_high_task(out: dict[str, dict]) -> str:
    """Checks Batsim's jobs of :func:`preemption_jobs`: the high-priority task starts at once, by
    evicting exactly one low-priority big task; returns that task's job id."""
    high = out["4"]
    assert high["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert float(high["waiting_time"]) < 0.1  # placed at once, by eviction
    killed = [job for job, row in out.items() if row["final_state"] == "COMPLETED_KILLED"]
    assert len(killed) == 1 and killed[0] in {"0", "1"}  # one low-priority big task, not the small ones
    return killed[0]
