"""Each job's walltime: how long its user says it may run.

Modes (``--walltime MODE`` of ``generate``, ``trace convert`` and ``swf convert``):

- ``none``: no walltime (Batsim's -1). Batsched's planning schedulers (``easy_bf``, the
  ``energy_bf`` family...) *reject* every job without one;
- ``exact``: the job's own duration;
- a factor (``1.5``): the duration times the factor;
- ``user-estimate``: the duration times a factor drawn from the law of users' over-estimates
  fitted on a real log (:mod:`batsim_google.model.walltime_law`);
- ``requested``: the log's requested time (SWF logs; the default of ``swf convert``); a job
  whose requested time is unknown has none.

Batsim kills a job at its walltime, and it does so when the job's delay *equals* its walltime too.
So, unless ``kills`` (``--walltime-kills``) is asked for, a walltime never shortens a job: it is
at least the job's duration plus :data:`MARGIN_S` (``exact`` is thus the duration plus that
margin). With ``kills``, a walltime below the duration (a factor below 1, a requested time below
the log's run time) stops the job there (``COMPLETED_WALLTIME_REACHED``), as in the log's system.

What planners see: batsched plans each job as lasting its walltime (reservations, and for the
``energy_bf`` family when machines may sleep), so ``exact`` gives them perfect knowledge, and
``user-estimate`` the pessimism of real users. Services keep their lifetime as walltime in every
mode (Batsim stops them there, by design).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from batsim_google.errors import ParameterError
from batsim_google.generation.job_times import NO_WALLTIME

#: What a walltime that must not shorten a job adds to its duration, seconds.
MARGIN_S = 1e-3
#: The named modes; any other mode is a positive factor.
MODES = ("none", "exact", "user-estimate", "requested")
#: The range of a factor: a walltime a thousand times its job's duration is no estimate, and one a
#: hundredth of it (with ``kills``) ends the job at once; beyond, walltimes past 2^42 s or rounded
#: to 0 in the written workload would be refused by Batsim.
FACTOR_RANGE = (0.01, 1000.0)
#: Mode of the workloads written without one being chosen.
DEFAULT_MODE = "none"
#: A fixed stream of the seed for the draws of ``user-estimate``: the jobs drawn from a seed
#: stay the same whatever the walltime mode.
WALLTIME_STREAM = 0x57A11
#: ``user-estimate`` draws its factors in blocks of this many, whatever the batches written, so a
#: job's factor depends on its rank only: a shorter workload of a seed is a prefix of a longer one.
FACTOR_BLOCK = 65_536


@dataclass(frozen=True)
class WalltimeMode:
    """A mode of the module; ``factor`` for a factor mode (``name`` ``"factor"``)."""

    name: str = DEFAULT_MODE
    factor: float | None = None
    kills: bool = False

    def __post_init__(self) -> None:
        if self.name not in (*MODES, "factor"):
            raise ParameterError(f"walltime mode must be one of {', '.join(MODES)} or a factor (got {self.name!r})")
        if (self.name == "factor") != (self.factor is not None):
            raise ParameterError("a factor walltime mode needs its factor, and only it")
        low, high = FACTOR_RANGE
        if self.factor is not None and not low <= self.factor <= high:
            raise ParameterError(f"--walltime factor must be a number in [{low:g}, {high:g}] (got {self.factor:g})")

    @property
    def label(self) -> str:
        return f"{self.factor:g}" if self.factor is not None else self.name

    def to_mapping(self) -> dict[str, Any]:
        """What the workload records of the mode that made it (its top-level ``walltime``)."""
        record: dict[str, Any] = {"mode": self.label, "kills": self.kills}
        if self.name == "user-estimate":
            from batsim_google.model.walltime_law import load_walltime_law

            law = load_walltime_law()
            record["law"] = {key: value for key, value in law.to_mapping().items() if key != "provenance"}
            record["law_source"] = law.provenance.get("source")
        return record

    def walltimes(self, duration: np.ndarray, requested: np.ndarray | None, factors: FactorStream) -> np.ndarray:
        """The walltime of jobs lasting ``duration`` (as written), given the log's ``requested``
        times (NaN: unknown) for ``requested``; ``factors``, the next jobs', for ``user-estimate``."""
        duration = np.asarray(duration, dtype=float)
        if self.name == "none":
            return np.full(len(duration), NO_WALLTIME)
        if self.name == "exact":
            wanted = duration.copy()
        elif self.name == "factor":
            wanted = duration * self.factor
        elif self.name == "user-estimate":
            wanted = duration * factors.take(len(duration))
        else:
            if requested is None:
                raise ParameterError("--walltime requested needs the log's requested times (SWF logs only)")
            wanted = np.asarray(requested, dtype=float)
        unknown = ~np.isfinite(wanted) | (wanted <= 0)
        kept = wanted if self.kills else np.maximum(wanted, duration + MARGIN_S)
        return np.where(unknown, NO_WALLTIME, kept)


def parse_walltime_mode(text: str, kills: bool = False) -> WalltimeMode:
    """``none``, ``exact``, ``user-estimate``, ``requested`` or a factor (``1.5``)."""
    if text in MODES:
        return WalltimeMode(text, kills=kills)
    try:
        factor = float(text)
    except ValueError:
        raise ParameterError(
            f"--walltime must be one of {', '.join(MODES)} or a factor in [{FACTOR_RANGE[0]:g}, {FACTOR_RANGE[1]:g}] "
            f"(got {text!r})"
        ) from None
    return WalltimeMode("factor", factor, kills)


class FactorStream:
    """The factors of ``user-estimate``, job after job, drawn from ``rng`` in whole blocks."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._left = np.empty(0)

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` jobs' factors."""
        from batsim_google.model.walltime_law import load_walltime_law

        while len(self._left) < count:
            self._left = np.concatenate([self._left, load_walltime_law().factors(FACTOR_BLOCK, self._rng)])
        taken, self._left = self._left[:count], self._left[count:]
        return taken


def walltime_rng(seed: int) -> np.random.Generator:
    """The generator of ``user-estimate``'s draws for ``seed``, apart from the jobs' own."""
    return np.random.default_rng([WALLTIME_STREAM, seed])


#: Workloads without walltimes (the default).
NO_WALLTIMES = WalltimeMode()
