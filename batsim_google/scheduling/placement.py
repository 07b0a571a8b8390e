"""Placement policies: which usable machine gets a task, given free CPU and memory.

A policy returns a machine index or -1. ``first-fit`` takes the lowest machine id that fits;
``best-fit`` the one left with the least free CPU+memory afterwards (tightest packing), which
keeps large holes for large tasks and leaves more machines empty for energy policies.
``above_free_tier`` asks for the room that a task above the free tier sees
(:class:`~batsim_google.scheduling.cluster.Cluster`'s ``free_tier_room``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.policy_config import PLACEMENT_NAMES

Placement = Callable[[Cluster, float, float, np.ndarray | None, bool], int]


def _fitting(
    cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None, above: bool
) -> tuple[np.ndarray | None, np.ndarray]:
    """The machines looked at (None: all; else ``extra``, machine indexes in increasing order)
    and which of them are usable with room for the request: a blocked group is tried on the few
    machines freed since, so only those are looked at, not the whole cell."""
    if extra is None:
        return None, cluster.usable() & (cluster.free_cpu(above) >= cpu) & (cluster.free_memory(above) >= memory)
    fits = cluster.usable()[extra] & (cluster.free_cpu(above)[extra] >= cpu)
    return extra, fits & (cluster.free_memory(above)[extra] >= memory)


def _machine(machines: np.ndarray | None, position: int) -> int:
    return position if machines is None else int(machines[position])


def first_fit(
    cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None, above_free_tier: bool = False
) -> int:
    machines, mask = _fitting(cluster, cpu, memory, extra, above_free_tier)
    return _machine(machines, int(np.argmax(mask))) if mask.any() else -1


def best_fit(
    cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None, above_free_tier: bool = False
) -> int:
    machines, mask = _fitting(cluster, cpu, memory, extra, above_free_tier)
    if not mask.any():
        return -1
    free_cpu, free_memory = cluster.free_cpu(above_free_tier), cluster.free_memory(above_free_tier)
    if machines is not None:
        free_cpu, free_memory = free_cpu[machines], free_memory[machines]
    leftover = free_cpu - cpu
    leftover += free_memory
    leftover -= memory
    leftover[~mask] = np.inf
    return _machine(machines, int(np.argmin(leftover)))


PLACEMENTS: dict[str, Placement] = dict(zip(PLACEMENT_NAMES, (first_fit, best_fit), strict=True))
