"""Placement policies: which usable machine gets a task, given free CPU and memory.

A policy returns a machine index or -1. ``first-fit`` takes the lowest machine id that fits;
``best-fit`` the one left with the least free CPU+memory afterwards (tightest packing), which
keeps large holes for large tasks and leaves more machines empty for energy policies.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.policy_config import PLACEMENT_NAMES

Placement = Callable[[Cluster, float, float, np.ndarray | None], int]


def _fitting(cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None) -> np.ndarray:
    mask = cluster.usable() & (cluster.free_cpu() >= cpu) & (cluster.free_memory() >= memory)
    return mask if extra is None else mask & extra


def first_fit(cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None) -> int:
    mask = _fitting(cluster, cpu, memory, extra)
    return int(np.argmax(mask)) if mask.any() else -1


def best_fit(cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None) -> int:
    mask = _fitting(cluster, cpu, memory, extra)
    if not mask.any():
        return -1
    leftover = cluster.free_cpu() - cpu
    leftover += cluster.free_memory()
    leftover -= memory
    leftover[~mask] = np.inf
    return int(np.argmin(leftover))


PLACEMENTS: dict[str, Placement] = dict(zip(PLACEMENT_NAMES, (first_fit, best_fit), strict=True))
