"""Writing the ledger next to Batsim's outputs: attempts, tasks and whether everything balanced."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from batsim_google.output_files import AtomicFile, write_text
from batsim_google.scheduling.tasks import Ledger

ATTEMPTS = "attempts.csv"
TASKS = "tasks.csv"
SUMMARY = "accounting.json"


def write_ledger(ledger: Ledger, prefix: str | Path, timing: dict | None = None) -> dict:
    """Write ``PREFIX_attempts.csv``, ``PREFIX_tasks.csv`` and ``PREFIX_accounting.json``.

    The summary says how many tasks were submitted and how each ended; ``balanced`` is true when
    every submitted task ended exactly once. ``timing`` (messages handled, seconds spent
    deciding) is kept in it as given.
    """
    prefix = str(prefix)
    with AtomicFile(f"{prefix}_{ATTEMPTS}") as temporary, temporary.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["task_id", "job_id", "attempt", "machine", "start", "end", "end_reason"])
        writer.writerows(
            (a.task_id, a.job_id, a.attempt, a.machine, a.start, a.end, a.end_reason) for a in ledger.attempts
        )
    with AtomicFile(f"{prefix}_{TASKS}") as temporary, temporary.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["task_id", "kind", "priority", "cpu", "memory", "submit", "work", "restarts", "outcome", "ended", "note"]
        )
        for task in ledger.tasks.values():
            request = task.request
            writer.writerow(
                [
                    task.task_id,
                    request.kind,
                    request.priority,
                    request.cpu,
                    request.memory,
                    request.subtime,
                    request.work,
                    task.restarts,
                    task.outcome.value if task.outcome else "",
                    task.ended_at,
                    task.note,
                ]
            )
    summary = {
        "submitted": len(ledger.tasks),
        "outcomes": ledger.outcomes(),
        "attempts": len(ledger.attempts),
        "open": ledger.open,
        "balanced": ledger.balanced(),
        **(timing or {}),
    }
    write_text(f"{prefix}_{SUMMARY}", json.dumps(summary, indent=1) + "\n")
    return summary
