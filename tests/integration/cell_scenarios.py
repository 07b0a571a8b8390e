"""What the scheduler's integration tests share: hand-built scenarios on the 4-machine test cell
and reading Batsim's CSV outputs."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from batsim_google.batsim_json import WorkloadWriter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLATFORM = FIXTURES / "cell4_energy.xml"  # m0, m1: capacity 1; m2, m3: capacity 0.5


def task(i, subtime, delay, priority=0.5, cpu=0.5, memory=0.5, kind="task") -> dict:
    """One job of a scenario; a service's ``delay`` is its lifetime."""
    return {"id": i, "subtime": float(subtime), "delay": float(delay), "kind": kind,
            "priority": priority, "cpu": cpu, "memory": memory}


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
