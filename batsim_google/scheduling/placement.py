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


def among(mask: np.ndarray, machines: np.ndarray | None) -> np.ndarray:
    """``mask`` (one entry per machine) kept only at ``machines`` (machine indexes; None: all)."""
    if machines is None:
        return mask
    kept = np.zeros_like(mask)
    kept[machines] = mask[machines]
    return kept


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


def free_tier_spread(cluster: Cluster, cpu: float, memory: float, extra: np.ndarray | None = None) -> int:
    """The machine for a free-tier task under the free tier's over-commit: among those where it fits
    (and among ``extra``, machine indexes, if given)
    (:meth:`.Cluster.free_tier_cpu_room`, :meth:`.Cluster.free_memory`), the one whose requests with
    it are the smallest share of its capacity (CPU and memory shares added; ties: the lowest id)."""
    cpu_room, memory_room = cluster.free_tier_cpu_room(), cluster.free_memory()
    mask = among(cluster.usable() & (cpu_room >= cpu) & (memory_room >= memory), extra)
    if not mask.any():
        return -1
    share = (cluster.cpu_used + cpu) / cluster.cpu_capacity
    share += (cluster.memory_used + memory) / cluster.memory_capacity
    share[~mask] = np.inf
    return int(np.argmin(share))


PLACEMENTS: dict[str, Placement] = dict(zip(PLACEMENT_NAMES, (first_fit, best_fit), strict=True))
