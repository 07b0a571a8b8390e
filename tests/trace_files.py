"""Small trace files for the tests: task_events rows as text, written in the trace's layout."""

from __future__ import annotations

import gzip
from pathlib import Path

USER = "u" * 44


def event(time_us: int, job: int, task: int, code: int, *, machine: str = "7", priority: int = 2,
          scheduling_class: int = 1, cpu: str = "0.0625", memory: str = "0.05", missing: str = "") -> str:
    """One task_events line in the documented column order."""
    return f"{time_us},{missing},{job},{task},{machine},{code},{USER},{scheduling_class},{priority},{cpu},{memory},0.0001,0"


def seconds_us(seconds: float) -> int:
    """Trace timestamp of ``seconds`` after the window start (600 s offset, microseconds)."""
    return int(round((seconds + 600) * 1_000_000))


def write_part(folder: Path, lines: list[str], part: int = 0, parts: int = 3, table: str = "task_events",
               compress: bool = True) -> Path:
    directory = folder / table
    directory.mkdir(parents=True, exist_ok=True)
    name = f"part-{part:05d}-of-{parts:05d}.csv" + (".gz" if compress else "")
    data = ("\n".join(lines) + "\n").encode()
    path = directory / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path
