"""Fit a periodic arrival-rate profile to submission times (Gaevoy et al., formulas 36, 37).

The hazard of each bin is its number of arrivals divided by how long the bin was observed,
summed over all the periods the input covers (the first and last ones partly); it is then
normalized by its mean. Bins the input never covers keep the mean rate (1): nothing is known of
them, and the report says how many there are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from batsim_google.errors import InputFileError
from batsim_google.fitting.vocabulary import ProfileChoice
from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.units import DAY, HALF_HOUR, WEEK

PERIODS = {"weekly": WEEK, "daily": DAY}


@dataclass(frozen=True)
class ProfileFit:
    profile: ArrivalProfile
    counts: np.ndarray
    exposure: np.ndarray

    @property
    def covered_bins(self) -> int:
        return int(np.count_nonzero(self.exposure > 0))


def time_in_bins(t: float, period: float, bins: int) -> np.ndarray:
    """Seconds of [0, t] spent in each bin of the period (t may be negative: then minus [t, 0])."""
    width = period / bins
    cycles, phase = divmod(t, period)
    return cycles * width + np.clip(phase - np.arange(bins) * width, 0.0, width)


def fit_arrival_profile(subtimes: np.ndarray, period: float, bin_width: float = HALF_HOUR) -> ProfileFit:
    """Normalized arrival rates per bin of ``period`` from submission times (seconds); the default
    bin is Gaevoy et al.'s, over which the hazard is taken constant."""
    subtimes = np.asarray(subtimes, dtype=float)
    bins = int(round(period / bin_width))
    if bins < 1 or not np.isclose(bins * bin_width, period):
        raise ValueError(f"the period ({period:g} s) must be a whole number of bins of {bin_width:g} s")
    start, end = float(subtimes.min()), float(subtimes.max())
    if not end > start:
        raise InputFileError("an arrival profile needs submissions spread over time")
    exposure = time_in_bins(end, period, bins) - time_in_bins(start, period, bins)
    counts = np.bincount(ArrivalProfile(period, (1.0,) * bins).bin_of(subtimes), minlength=bins).astype(float)
    observed = exposure > 0
    mean_rate = counts[observed].sum() / exposure.sum()
    rates = np.full(bins, mean_rate)
    rates[observed] = counts[observed] / exposure[observed]
    return ProfileFit(ArrivalProfile.normalized(period, rates), counts, exposure)


def profile_period(choice: ProfileChoice, span: float) -> float | None:
    """The period to fit: ``auto`` takes a week if the input spans one, else a day if it spans
    one, else none (a profile is only estimated over periods actually seen)."""
    if choice == "none":
        return None
    if choice != "auto":
        return PERIODS[choice]
    for period in (WEEK, DAY):
        if span >= period:
            return period
    return None
