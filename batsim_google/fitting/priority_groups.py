"""Classes split by priority group, each with the empirical law of its Google priorities.

Google's priorities are not a decreasing density: of the tasks the trace submits in its first
4.2 hours, 0.9 % are production (9-11), but of the 132,982 it runs at its start, 42 % are, and
they request 64 % of the start's CPU: few production tasks are submitted, and they live long. A
truncated exponential per class cannot draw that (it drew about ten times too few production
tasks), and one priority law per class cannot either when the class mixes short free-tier tasks
with long production ones: the cell the arrivals keep (rate x lifetime per class) would hold the
wrong priorities. So a fit of the trace's tasks splits each a-priori class by priority group (the
groups the scheduler and validate-replay judge: free 0-1, normal 2-8, production 9-11), each
with its own lifetime law, rate and request bands, and gives each class the exact histogram of
its tasks' Google priorities (:attr:`~batsim_google.model.workload_model.TaskClass.priorities`).

A job's tasks share their priority (every job of the trace does), hence their group: a job's
class, the class most of its tasks belong to, is then of its tasks' group, and the priority drawn
for the job from its class's law is one of that group.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from batsim_google.model.laws import Empirical
from batsim_google.model.vocabulary import GOOGLE_PRIORITY_LEVELS

#: The priority groups classes are split by (Google priorities, inclusive): the scheduler's free
#: tier, normal and production (with monitoring, 10-11, which the trace hardly submits).
PRIORITY_SPLIT: dict[str, tuple[int, int]] = {"free": (0, 1), "normal": (2, 8), "production": (9, 11)}

Levels = tuple[int, int]


def in_levels(priority: np.ndarray, levels: Levels | None) -> np.ndarray:
    """Which Google priorities lie in ``levels`` (inclusive; None: any)."""
    priority = np.asarray(priority)
    if levels is None:
        return np.ones(priority.shape, dtype=bool)
    return (priority >= levels[0]) & (priority <= levels[1])


def by_priority_group(
    labelled: pl.DataFrame, names: list[str], kinds: list[str]
) -> tuple[pl.DataFrame, list[str], list[str], dict[str, Levels]]:
    """``labelled`` (a ``class`` and a ``google_priority`` column) with each class ``name`` split
    into ``name-free``, ``name-normal`` and ``name-production``; the new names and kinds (groups
    without a task left out); and each new class's levels."""
    group = pl.lit(None, dtype=pl.String)
    for name, (low, high) in reversed(PRIORITY_SPLIT.items()):
        group = pl.when(pl.col("google_priority").is_between(low, high)).then(pl.lit(name)).otherwise(group)
    labelled = labelled.with_columns(pl.concat_str(pl.col("class"), pl.lit("-"), group).alias("class"))
    present = set(labelled["class"].unique().to_list())
    new_names, new_kinds, levels = [], [], {}
    for name, kind in zip(names, kinds, strict=True):
        for group_name, bounds in PRIORITY_SPLIT.items():
            split = f"{name}-{group_name}"
            if split in present:
                new_names.append(split)
                new_kinds.append(kind)
                levels[split] = bounds
    return labelled, new_names, new_kinds, levels


def priority_levels(priorities: np.ndarray) -> Empirical:
    """The exact histogram of Google priorities (integers 0-11) as an empirical law."""
    counts = np.bincount(np.asarray(priorities, dtype=np.int64), minlength=GOOGLE_PRIORITY_LEVELS)
    present = np.flatnonzero(counts)
    return Empirical(tuple(float(p) for p in present), tuple((counts[present] / counts.sum()).tolist()))
