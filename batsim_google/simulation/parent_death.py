"""Processes that die with their parent: a campaign's workers and the simulations they start.

A process killed with SIGKILL cannot stop its children, which would run on, orphaned, for hours.
On Linux the kernel can do it (``prctl(PR_SET_PDEATHSIG)``): each child asks, as it starts, to get
SIGKILL when its parent ends. Elsewhere a watchdog thread polls the parent's pid once a second.

The command line itself is started by a launcher in the documented way, ``uv run batsim-google``:
``uv`` runs it as a child and waits, and killed with SIGKILL, ``uv`` left the command, Batsim and
the scheduler finishing the run in the background. So a command whose parent is such a launcher
(:data:`LAUNCHERS`) ends, as on SIGTERM, when that parent does (:func:`end_with_launcher`): by a
watchdog thread rather than the kernel, whose signal comes when the parent's *thread* that started
the command ends, which in a multi-threaded launcher may be long before the launcher does. A
command started from a shell is left alone (``nohup`` must keep working).
Standard library only: the simulations' launcher uses it too.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from pathlib import Path

#: prctl's option "signal me when my parent ends" (linux/prctl.h).
PR_SET_PDEATHSIG = 1
WATCHDOG_SECONDS = 1.0
#: Programs (``/proc/PID/comm``) that run a command as their child and wait for it.
LAUNCHERS = frozenset({"uv", "uvx"})


def _prctl():
    """libc's prctl, resolved here rather than in a child between fork and exec (no dlopen there)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _ask_the_kernel() -> bool:
    return _PRCTL is not None and _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0


def die_with_parent(parent: int, watchdog: bool = True) -> None:
    """Make this process end when its parent, pid ``parent``, ends; if the parent already ended
    (the race between its fork and this call), end now. Without the kernel's help, a ``watchdog``
    thread does it (none where no thread may run: between fork and exec)."""
    if not _ask_the_kernel() and watchdog:
        threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watchdog").start()
    if os.getppid() != parent:
        os._exit(1)


def _watch(parent: int, signum: int = signal.SIGKILL) -> None:
    while os.getppid() == parent:
        time.sleep(WATCHDOG_SECONDS)
    os.kill(os.getpid(), signum)


def end_with_launcher() -> bool:
    """If this process's parent is a launcher (:data:`LAUNCHERS`), send this process SIGTERM when
    the parent ends (the commands turn it into Ctrl-C: their children are stopped, their partial
    outputs removed). Returns whether the parent is one."""
    parent = os.getppid()
    try:
        name = Path(f"/proc/{parent}/comm").read_text().strip()
    except OSError:  # no /proc: not Linux
        return False
    if name not in LAUNCHERS:
        return False
    if parent not in _watched:  # once per process (the commands of a test session share it)
        _watched.add(parent)
        threading.Thread(target=_watch, args=(parent, signal.SIGTERM), daemon=True, name="launcher-watchdog").start()
    return True


#: Launchers a watchdog of this process already watches.
_watched: set[int] = set()


def child_dies_with_this_process() -> dict:
    """Popen keyword arguments that make the child end when this process ends (Linux; elsewhere
    nothing, the runner stops its children itself unless killed).

    The kernel signals the child when the *thread* that started it ends: the caller's thread must
    outlive the child, as the runner's does (it waits for its children, even in a Dask worker's
    thread, and stops them before it returns)."""
    if _PRCTL is None:
        return {}
    parent = os.getpid()
    return {"preexec_fn": lambda: die_with_parent(parent, watchdog=False)}
