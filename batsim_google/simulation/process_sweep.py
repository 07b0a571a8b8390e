"""Every process a simulation started, found and ended, even those that left its process group.

A scheduler (or a user's policy) may fork a child that calls ``setsid``: that child is in no group
the runner stops, and its parent is no longer the runner's child. What it cannot shed unknowingly is
its environment: each simulation's processes run with :data:`RUN_VARIABLE` set to a token of
their own, and :func:`end_marked_processes` walks ``/proc`` for the processes that carry it.

Also how the runner tells that a process waits rather than works (:func:`group_waits`): a
scheduler that exited while Batsim still waits for its answer would leave Batsim waiting forever.
Standard library only (the simulations' launcher and the command line import it).
"""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

#: Environment variable whose value marks the processes of one simulation.
RUN_VARIABLE = "BATSIM_GOOGLE_RUN"
PROC = Path("/proc")


def new_run_token() -> str:
    """A token no other simulation, here or in another process, carries."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def marked_processes(token: str) -> list[int]:
    """The pids of the live processes whose environment sets :data:`RUN_VARIABLE` to ``token``
    (none where there is no ``/proc``)."""
    needle = f"{RUN_VARIABLE}={token}".encode()
    found = []
    if not PROC.is_dir():
        return found
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:  # ended meanwhile, or another user's
            continue
        if needle in environment.split(b"\0"):
            found.append(int(entry.name))
    return found


def end_marked_processes(token: str) -> list[int]:
    """SIGKILL every process marked with ``token``; the pids signalled."""
    ended = []
    for pid in marked_processes(token):
        try:
            os.kill(pid, signal.SIGKILL)
            ended.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return ended


def _state_and_ticks(pid: int) -> tuple[str, int] | None:
    """A process's scheduling state (R, S, D, ...) and CPU ticks used, summed over its threads."""
    states, ticks = [], 0
    try:
        for task in (PROC / str(pid) / "task").iterdir():
            fields = (task / "stat").read_text().rpartition(")")[2].split()
            states.append(fields[0])
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    except (OSError, IndexError, ValueError):
        return None
    return ("R" if "R" in states else "D" if "D" in states else states[0] if states else "Z"), ticks


def group_snapshot(pgid: int) -> tuple[tuple[int, str, int], ...]:
    """(pid, state, CPU ticks) of each process of the process group ``pgid``."""
    snapshot = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 3 and int(fields[2]) == pgid:
            state = _state_and_ticks(int(entry.name))
            if state is not None:
                snapshot.append((int(entry.name), *state))
    return tuple(sorted(snapshot))


#: CPU ticks (1/100 s) a waiting process group may use between two snapshots: ZeroMQ's attempts
#: to reconnect to a scheduler that is gone cost a little.
IDLE_TICKS = 2


def group_waits(before: tuple, after: tuple) -> bool:
    """Whether a process group did nothing between two snapshots: the same processes, none
    running or in I/O in either, at most :data:`IDLE_TICKS` of CPU used."""
    if not after or [pid for pid, *_ in before] != [pid for pid, *_ in after]:
        return False
    if any(state in ("R", "D") for _, state, _ in before + after):
        return False
    return sum(ticks for *_, ticks in after) - sum(ticks for *_, ticks in before) <= IDLE_TICKS
