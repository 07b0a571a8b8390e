"""The machines of a cell: the 2011 Google cell's published configurations, scaled or not.

A cell is a table of machines in resource order (Batsim's machine ids follow it), each with its
platform ID and its CPU and memory capacities normalized to the largest machine, as in the trace.
The default cell needs no trace: it is the machine-configuration table that Reiss et al. published
for the 2011 trace ("Heterogeneity and dynamicity of clouds at scale", SoCC 2012, Table 1).
A cell can also come from a trace's machine_events (:mod:`batsim_google.trace.machines`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from batsim_google.errors import ParameterError
from batsim_google.parameters import MAX_MACHINES
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES, GOOGLE_2011_TYPES

CELL_SCHEMA = {"platform_id": pl.String, "cpu": pl.Float64, "memory": pl.Float64}


@dataclass(frozen=True)
class Cell:
    """Machines in resource order: columns ``platform_id``, ``cpu``, ``memory`` and, for a cell
    read from a trace, the trace's ``machine_id``; ``description`` says where it comes from."""

    machines: pl.DataFrame
    description: str

    def __post_init__(self) -> None:
        missing = [name for name in CELL_SCHEMA if name not in self.machines.columns]
        if missing:
            raise ParameterError(f"a cell needs column(s) {missing}")
        if self.machines.height == 0:
            raise ParameterError("a cell needs at least one machine")
        capacities = self.machines.select(pl.min_horizontal("cpu", "memory").min()).item()
        if not capacities > 0:
            raise ParameterError("machine capacities must be > 0")

    def __len__(self) -> int:
        return self.machines.height


def scaled_counts(counts: np.ndarray, total: int) -> np.ndarray:
    """``counts`` scaled to sum to ``total``, by the largest-remainder (Hamilton) method.

    When ``total`` allows it, every type keeps at least one machine: a type rounded to zero takes
    one from the type that has the most, which moves the fewest machines away from the proportions.
    Ties go to the earlier type, so the result is deterministic.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if total < 0:
        raise ParameterError(f"the machine count must be >= 0 (got {total})")
    quotas = counts * total / counts.sum()
    scaled = np.floor(quotas).astype(np.int64)
    remainders = quotas - scaled
    # Stable sort on the negated remainders: largest first, earlier type first among equals.
    scaled[np.argsort(-remainders, kind="stable")[: total - scaled.sum()]] += 1
    if total >= len(counts):
        for empty in np.flatnonzero(scaled == 0):
            scaled[np.argmax(scaled)] -= 1
            scaled[empty] = 1
    return scaled


def google_2011_cell(machines: int | None = None) -> Cell:
    """The 2011 cell (12,583 machines), or ``machines`` machines (at most
    :data:`~batsim_google.parameters.MAX_MACHINES`) in the same proportions.

    Machines come type by type, in the order of the published table (most common type first).
    """
    counts = np.array([count for count, *_ in GOOGLE_2011_TYPES])
    if machines is None:
        machines = GOOGLE_2011_MACHINES
    elif not 1 <= machines <= MAX_MACHINES:
        raise ParameterError(f"the machine count must be in 1..{MAX_MACHINES} (got {machines})")
    scaled = scaled_counts(counts, machines)
    types = pl.DataFrame(
        [(platform, cpu, memory) for _, platform, cpu, memory in GOOGLE_2011_TYPES],
        schema=CELL_SCHEMA,
        orient="row",
    )
    table = types[np.repeat(np.arange(len(scaled)), scaled)]
    scale = "" if machines == GOOGLE_2011_MACHINES else f", scaled to {machines} machines"
    return Cell(table, f"Google 2011 cell (Reiss et al., SoCC 2012, Table 1){scale}")
