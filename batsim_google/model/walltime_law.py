"""The law of users' walltime over-estimates: the walltime a user asks for, as a factor of the
job's actual run time.

Batch schedulers that plan (batsched's backfilling and ``energy_bf`` family) need each job's
walltime, and users over-estimate it, by a lot and very unevenly. The law is fitted on a real log's
requested against actual run times (:mod:`batsim_google.fitting.walltime_fit`): with probability
``at_run_time`` the factor is 1 (the estimate was the run time, or below it), otherwise it is
``1 + X`` with ``X`` drawn from ``excess``, capped at ``max_factor`` (the largest factor seen in
the data). It ships as ``data/walltimes.json`` with its provenance.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.model.laws import Law, law_from_mapping
from batsim_google.output_files import write_text
from batsim_google.parameters import load_json_law

DEFAULT_LAW = "walltimes.json"


@dataclass(frozen=True)
class WalltimeLaw:
    """Factor = 1 with probability ``at_run_time``, else ``1 + excess``, at most ``max_factor``."""

    excess: Law
    at_run_time: float
    max_factor: float
    provenance: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not 0 <= self.at_run_time < 1:
            raise ParameterError(f"at_run_time must be in [0, 1) (got {self.at_run_time})")
        if not (math.isfinite(self.max_factor) and self.max_factor > 1):
            raise ParameterError(f"max_factor must be a finite number > 1 (got {self.max_factor})")

    def factors(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` factors (walltime / run time), each >= 1."""
        excess = self.excess.sample(size, rng)
        factor = np.minimum(1.0 + excess, self.max_factor)
        return np.where(rng.random(size) < self.at_run_time, 1.0, factor)

    def cdf(self, factor: np.ndarray) -> np.ndarray:
        """P(F <= factor)."""
        factor = np.asarray(factor, dtype=float)
        below_cap = self.at_run_time + (1 - self.at_run_time) * self.excess.cdf(np.maximum(factor - 1.0, 0.0))
        return np.where(factor < 1.0, 0.0, np.where(factor >= self.max_factor, 1.0, below_cap))

    def to_mapping(self) -> dict[str, Any]:
        return {
            "provenance": dict(self.provenance),
            "excess": self.excess.to_mapping(),
            "at_run_time": self.at_run_time,
            "max_factor": self.max_factor,
        }

    def save(self, path: str | Path) -> None:
        write_text(path, json.dumps(self.to_mapping(), indent=1) + "\n")


def walltime_law_from_mapping(data: Mapping[str, Any], source: str) -> WalltimeLaw:
    try:
        return WalltimeLaw(
            excess=law_from_mapping(data["excess"], f"{source}: excess"),
            at_run_time=float(data["at_run_time"]),
            max_factor=float(data["max_factor"]),
            provenance=data.get("provenance", {}),
        )
    except (KeyError, TypeError) as error:
        raise InputFileError(f"{source}: not a walltime law (missing or bad {error})") from error


def load_walltime_law(path: str | Path | None = None) -> WalltimeLaw:
    """The law in ``path``, or the one shipped with the package."""
    return load_json_law(path, DEFAULT_LAW, walltime_law_from_mapping)
