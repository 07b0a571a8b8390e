"""Processes as the tests of signals, orphans and process groups watch them, from /proc."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper is dead)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def wait_for(condition: Callable[[], bool], seconds: float = 60.0) -> bool:
    """Whether ``condition`` came true within ``seconds`` (looked at every 0.1 s)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def parents() -> dict[int, int]:
    """Every process's parent."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return found


def descendants(pid: int) -> set[int]:
    """The children of ``pid``, theirs, and so on."""
    tree, found, todo = parents(), set(), [pid]
    while todo:
        parent = todo.pop()
        children = {child for child, ppid in tree.items() if ppid == parent}
        found |= children
        todo += children
    return found
