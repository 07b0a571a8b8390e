"""Writing the ledger next to Batsim's outputs: attempts, tasks and whether everything balanced.

A front-end streams the ledger (:meth:`.tasks.Ledger.stream_to` a :class:`LedgerWriter` made at
the simulation's start): each attempt's row is written when it ends and each task's when it gets
its outcome, so that the scheduler's memory follows what runs, not the run's length. The rows go
to temporary files renamed into place at the end (:mod:`batsim_google.output_files`): a run that
fails leaves no half-written ledger. ``PREFIX_attempts.csv`` lists the attempts in the order they
ended, ``PREFIX_tasks.csv`` the tasks in the order they got their outcome (a ledger written whole
at the end, never streamed: in submission order).
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import json
from pathlib import Path
from typing import NoReturn

from batsim_google.output_files import AtomicFile, write_text
from batsim_google.scheduling.tasks import Attempt, Ledger, Task

ATTEMPTS = "attempts.csv"
TASKS = "tasks.csv"
SUMMARY = "accounting.json"
ATTEMPT_HEADER = ("task_id", "job_id", "attempt", "machine", "start", "end", "end_reason")
TASK_HEADER = (
    "task_id", "kind", "priority", "cpu", "memory", "submit", "work", "restarts", "outcome", "ended", "note",
)  # fmt: skip


class LedgerWriter:
    """``PREFIX_attempts.csv`` and ``PREFIX_tasks.csv`` written row by row as the run goes, through
    temporary files put in place by :meth:`close`; removed by :meth:`discard`, or when the process
    exits before :meth:`close`."""

    def __init__(self, prefix: str | Path) -> None:
        prefix = str(prefix)
        self._files = [AtomicFile(f"{prefix}_{ATTEMPTS}"), AtomicFile(f"{prefix}_{TASKS}")]
        atexit.register(self.discard)
        self._handles = [file.temporary.open("w", newline="") for file in self._files]
        self._attempts, self._tasks = (csv.writer(handle) for handle in self._handles)
        self._attempts.writerow(ATTEMPT_HEADER)
        self._tasks.writerow(TASK_HEADER)

    def attempt(self, a: Attempt) -> None:
        try:
            self._attempts.writerow((a.task_id, a.job_id, a.attempt, a.machine, a.start, a.end, a.end_reason))
        except OSError as error:
            self._failed(0, error)

    def task(self, task: Task) -> None:
        request = task.request
        row = (
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
        )
        try:
            self._tasks.writerow(row)
        except OSError as error:
            self._failed(1, error)

    def close(self) -> None:
        """Put both files in place."""
        atexit.unregister(self.discard)
        for index, handle in enumerate(self._handles):
            try:
                handle.close()
            except OSError as error:
                self._failed(index, error)
        try:
            for file in self._files:
                file.commit()
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Remove the temporary files; the targets stay as they were."""
        atexit.unregister(self.discard)
        for handle in self._handles:
            with contextlib.suppress(OSError):
                handle.close()
        for file in self._files:
            file.discard(None)

    def _failed(self, index: int, error: OSError) -> NoReturn:
        """Remove both temporary files, then raise ``error`` as an OutputFileError naming the file
        it failed to write (``index`` in :attr:`_files`)."""
        self.discard()
        self._files[index].discard(error)
        raise error


def write_ledger(ledger: Ledger, prefix: str | Path, timing: dict | None = None) -> dict:
    """Write ``PREFIX_attempts.csv``, ``PREFIX_tasks.csv`` and ``PREFIX_accounting.json``: the rows
    ``ledger`` still holds, after those it streamed to its :class:`LedgerWriter`, if any.

    The summary says how many tasks were submitted and how each ended; ``balanced`` is true when
    every submitted task ended exactly once. ``timing`` (messages handled, seconds spent
    deciding) is kept in it as given.
    """
    writer = ledger.sink if isinstance(ledger.sink, LedgerWriter) else LedgerWriter(prefix)
    try:
        ledger.stream_to(writer)
        for task in ledger.tasks.values():  # not ended: a run cut short
            writer.task(task)
    except BaseException:
        writer.discard()
        raise
    writer.close()
    summary = {
        "submitted": ledger.submitted,
        "outcomes": ledger.outcomes(),
        "attempts": ledger.attempt_count,
        "open": ledger.open,
        "balanced": ledger.balanced(),
        **(timing or {}),
    }
    write_text(f"{prefix}_{SUMMARY}", json.dumps(summary, indent=1) + "\n")
    return summary
