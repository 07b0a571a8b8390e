"""Placement policies: which usable machine gets a task, given free CPU and memory.

A policy returns a machine index or -1. ``first-fit`` takes the lowest machine id that fits;
``best-fit`` the one left with the least free CPU+memory afterwards (tightest packing), which
keeps large holes for large tasks and leaves more machines empty for energy policies.
``above_free_tier`` asks for the room that a task above the free tier sees
(:class:`~batsim_google.scheduling.cluster.Cluster`'s ``free_tier_room``).

The free tier, under its over-commit (``free_tier_overcommit`` > 1), is placed by a rule of its
own, :func:`free_tier_spread`: within the CPU its over-commit allows, on the machine its requests
fill least, as Borg spread it (it held free-tier tasks on 97 % of the machines, the more where the
tiers above requested the less; ``bench/borg_overcommit.py``). Packed instead, it would stack on the
machines the tiers above fill, and leave others empty.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from batsim_google.scheduling.cluster import Cluster
from batsim_google.scheduling.policy_config import PLACEMENT_NAMES

Placement = Callable[[Cluster, float, float, np.ndarray | None, bool], int]


def _fitting(cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None, above: bool) -> np.ndarray:
    mask = cluster.usable() & (cluster.free_cpu(above) >= cpu) & (cluster.free_memory(above) >= memory)
    return mask if extra is None else mask & extra


def first_fit(
    cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None, above_free_tier: bool = False
) -> int:
    mask = _fitting(cluster, cpu, memory, extra, above_free_tier)
    return int(np.argmax(mask)) if mask.any() else -1


def best_fit(
    cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None, above_free_tier: bool = False
) -> int:
    mask = _fitting(cluster, cpu, memory, extra, above_free_tier)
    if not mask.any():
        return -1
    leftover = cluster.free_cpu(above_free_tier) - cpu
    leftover += cluster.free_memory(above_free_tier)
    leftover -= memory
    leftover[~mask] = np.inf
    return int(np.argmin(leftover))


def free_tier_spread(cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None) -> int:
    """The machine for a free-tier task under the free tier's over-commit: among those where it fits
    (:meth:`.Cluster.free_tier_cpu_room`, :meth:`.Cluster.free_memory`), the one whose requests with
    it are the smallest share of its capacity (CPU and memory shares added; ties: the lowest id)."""
    cpu_room, memory_room = cluster.free_tier_cpu_room(), cluster.free_memory()
    mask = cluster.usable() & (cpu_room >= cpu) & (memory_room >= memory)
    if extra is not None:
        mask &= extra
    if not mask.any():
        return -1
    share = (cluster.cpu_used + cpu) / cluster.cpu_capacity
    share += (cluster.memory_used + memory) / cluster.memory_capacity
    share[~mask] = np.inf
    return int(np.argmin(share))


PLACEMENTS: dict[str, Placement] = dict(zip(PLACEMENT_NAMES, (first_fit, best_fit), strict=True))
