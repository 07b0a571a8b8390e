"""Non-stationary arrivals: a periodic arrival-rate profile and the time rescaling it defines.

Gaevoy et al. take the arrival hazard as constant over half-hour bins of the week and normalize it
by its mean (their formula 36); the "normalized time" between two instants is the integral of the
normalized hazard between them (formula 37). In normalized time the stream is stationary: the
inter-arrival law is fitted there, and the generator draws a stationary stream and maps it back to
real time with the inverse of that integral. The rates here are kept normalized (mean 1 over the
period), so a period of real time is a period of normalized time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from batsim_google.errors import ParameterError
from batsim_google.parameters import known_keys, number, numbers, require, table

MEAN_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ArrivalProfile:
    """Relative arrival rates over consecutive equal bins of a ``period`` (seconds), mean 1.

    Time 0 of a generated workload is the start of the first bin.
    """

    period: float
    rates: tuple[float, ...]

    @classmethod
    def normalized(cls, period: float, rates) -> ArrivalProfile:
        """The profile of relative rates ``rates`` (any positive mean), scaled to mean 1."""
        rates = np.asarray(rates, dtype=float)
        mean = rates.mean() if len(rates) else 0.0
        return cls(float(period), tuple((rates / mean).tolist()) if mean > 0 else tuple(rates.tolist()))

    def check(self, where: str) -> None:
        require(f"{where}.period", self.period, math.isfinite(self.period) and self.period > 0.0, "> 0 seconds")
        for index, rate in enumerate(self.rates):
            require(f"{where}.rates[{index}]", rate, math.isfinite(rate) and rate >= 0.0, ">= 0")
        mean = math.fsum(self.rates) / len(self.rates) if self.rates else 0.0
        require(f"{where}.rates", f"mean {mean:.9g}", abs(mean - 1.0) <= MEAN_TOLERANCE, "normalized to mean 1")

    @property
    def bin_width(self) -> float:
        return self.period / len(self.rates)

    def bin_of(self, t) -> np.ndarray:
        """The bin of the period each real instant of ``t`` falls in."""
        phase = np.mod(np.asarray(t, dtype=float), self.period)
        return np.minimum((phase // self.bin_width).astype(np.int64), len(self.rates) - 1)

    def _knots(self) -> tuple[np.ndarray, np.ndarray]:
        """Bin edges in real time and the normalized time elapsed at each, over one period."""
        real = np.arange(len(self.rates) + 1) * self.bin_width
        normalized = np.concatenate([[0.0], np.cumsum(self.rates) * self.bin_width])
        normalized[-1] = self.period  # the mean is 1 up to rounding
        return real, normalized

    def to_normalized_time(self, t) -> np.ndarray:
        """Normalized time of real instants ``t`` (formula 37 from time 0)."""
        real, normalized = self._knots()
        cycles, phase = np.divmod(np.asarray(t, dtype=float), self.period)
        return cycles * self.period + np.interp(phase, real, normalized)

    def to_real_time(self, tau) -> np.ndarray:
        """Real instants of normalized times ``tau``: the inverse of :meth:`to_normalized_time`.

        Bins of rate 0 take no normalized time, so no instant maps into them.
        """
        real, normalized = self._knots()
        cycles, phase = np.divmod(np.asarray(tau, dtype=float), self.period)
        return cycles * self.period + np.interp(phase, normalized, real)

    def to_mapping(self) -> dict[str, Any]:
        return {"period": self.period, "rates": list(self.rates)}

    @classmethod
    def from_mapping(cls, raw: Any, where: str) -> ArrivalProfile:
        raw: Mapping[str, Any] = table(raw, where)
        known_keys(raw, {"period", "rates"}, where)
        period = number(raw, "period", f"{where}.")
        rates = numbers(raw, "rates", f"{where}.")
        for index, rate in enumerate(rates):
            require(f"{where}.rates[{index}]", rate, rate >= 0.0, ">= 0")
        if not sum(rates) > 0.0:
            raise ParameterError(f"{where}.rates must not all be 0")
        profile = cls.normalized(period, rates)
        profile.check(where)
        return profile
