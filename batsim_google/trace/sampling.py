"""Scaled replays: the trace sampled onto a cell of N machines, at the real cell's load per machine.

The records kept are those of the tasks that ran on a sample of the cell's machines, each machine
kept with probability N / 12,583. Sampling machines, not whole jobs: on the sample parts, whole
jobs kept with that probability carried 1,936 and 10,632 running tasks at a window start where the
real cell scaled down gives 5,041 and 20,163 (N = 512 and 2,048): a few jobs of thousands of tasks
hold most of the load, in or out as a whole. Machines carry it within a few percent (4,933 and
19,659). The price: a job's tasks on other machines are left out, so a job is seen in part.

The choice is a seeded hash of the machine ID, not a draw from a generator: a machine's rows are
spread over chunks and parts, and a hash decides the same for each of them with no state carried
between chunks, in any order, for the same seed. The number of machines kept is binomial around N
(the platform to replay on is ``platform --machines N``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from batsim_google.errors import ParameterError
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def hashed_uniforms(ids: np.ndarray, seed: int) -> np.ndarray:
    """A number in [0, 1) per ID, the same for the same (ID, seed), spread uniformly: the
    splitmix64 finalizer of ``ID + seed x golden ratio``."""
    with np.errstate(over="ignore"):
        x = ids.astype(np.uint64) + np.uint64(seed) * _GOLDEN
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(11)).astype(np.float64) / 2.0**53


@dataclass(frozen=True)
class MachineSample:
    """Keep the records run on machines kept with probability ``machines`` / 12,583."""

    machines: int
    seed: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.machines <= GOOGLE_2011_MACHINES:
            raise ParameterError(f"a sampled cell has 1 to {GOOGLE_2011_MACHINES} machines (got {self.machines})")
        if self.seed < 0:
            raise ParameterError(f"the sampling seed must be >= 0 (got {self.seed})")

    @property
    def fraction(self) -> float:
        return self.machines / GOOGLE_2011_MACHINES

    def kept(self) -> pl.Expr:
        """Records run on a machine kept (never-scheduled ones have none: not kept)."""
        return pl.col("machine_id").map_batches(
            lambda ids: (
                pl.Series(hashed_uniforms(ids.fill_null(0).to_numpy(), self.seed) < self.fraction) & ids.is_not_null()
            ),
            return_dtype=pl.Boolean,
        )
