"""Priorities: Google's integer levels (0-11), the model's ]0, 1], and the truncated exponential.

Google priority ``p`` maps to ``(p + 1) / 12``: priority 0 becomes 1/12 (never 0) and 11 becomes 1,
and the order is kept; back, a priority in ]p / 12, (p + 1) / 12] is Google's ``p``. Being linear, the mapping sends a mean priority (a k-means centroid) to the
mean of the mapped priorities, which is what a truncated-exponential rate is solved from. The
model draws priorities from the exponential of rate ``lambda`` truncated to ]0, 1] (the paper's
redraw above 1), drawn with scipy's own algorithm written with numpy (the inverse of the CDF: the
same variates, tested); scipy is imported only where a law is made or a rate solved, so that the
scheduler and the generator start without scipy.stats.
"""

from __future__ import annotations

import numpy as np

from batsim_google.errors import ParameterError
from batsim_google.model.laws import Empirical
from batsim_google.model.vocabulary import GOOGLE_PRIORITY_LEVELS

RATE_BRACKET = (1e-3, 1e3)


def priority_law(rate):
    """Exponential of rate ``rate`` truncated to [0, 1]: the paper's redraw-above-1 loop, exactly."""
    from scipy import stats

    rate = np.asarray(rate, dtype=float)
    return stats.truncexpon(rate, scale=1.0 / rate)


def draw_priorities(rate: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One priority in ]0, 1] per rate: the truncated exponential (as ``priority_law(rate).rvs``
    draws it), with an exact 0 (probability 2^-53) lifted and the inverse CDF kept from passing 1
    by an ulp."""
    from scipy import special

    rate = np.asarray(rate, dtype=float)
    values = -special.log1p(rng.uniform(size=rate.shape) * special.expm1(-rate)) * (1.0 / rate)
    return np.clip(values, np.finfo(float).tiny, 1.0)


def unit_priority(google_priority):
    """Google priority 0..11 (scalar or array) -> model priority in ]0, 1]."""
    return (np.asarray(google_priority, dtype=float) + 1.0) / GOOGLE_PRIORITY_LEVELS


#: A model priority within this of a level's bound (x levels) is on the bound: a priority written
#: with 6 decimals (Batsim's, a workload's) keeps the level of the Google priority it came from.
LEVEL_TOLERANCE = 1e-4


def google_priority(unit):
    """Model priority in ]0, 1] (scalar or array) -> Google priority 0..11: the inverse of
    :func:`unit_priority`; a drawn priority gets the ``p`` whose band ]p / 12, (p + 1) / 12] holds
    it (the scheduler's levels, :mod:`batsim_google.scheduling.eviction`). NaN stays NaN."""
    levels = np.ceil(np.asarray(unit, dtype=float) * GOOGLE_PRIORITY_LEVELS - LEVEL_TOLERANCE)
    return np.clip(levels, 1, GOOGLE_PRIORITY_LEVELS) - 1


def rate_for_mean(mean: float) -> float:
    """Rate of the exponential truncated to [0, 1] whose mean is ``mean`` (0 < mean < 1/2).

    The mean decreases from 1/2 (rate -> 0, uniform) to 0 (rate -> infinity), so a positive rate
    exists only below 1/2. The search is bracketed to rates in [1e-3, 1e3], means from 1/1000
    to 0.49992, well beyond any priority mix of the trace.
    """
    low, high = RATE_BRACKET
    if not priority_law(high).mean() <= mean <= priority_law(low).mean():
        raise ParameterError(
            f"mean priority {mean:g} is out of reach: a truncated exponential with a rate in "
            f"[{low:g}, {high:g}] has a mean between 0.001 and 0.4999"
        )
    from scipy import optimize

    return optimize.brentq(lambda rate: priority_law(rate).mean() - mean, low, high, xtol=1e-12)


def rate_for_centroid(google_priority: float) -> float:
    """Rate whose mean model priority equals the mapped mean Google priority of a k-means centroid."""
    return rate_for_mean(float(unit_priority(google_priority)))


def draw_class_priorities(
    rates: np.ndarray, levels: list[Empirical | None], class_index: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One priority in ]0, 1] per entry of ``class_index``: from its class's Google levels
    (``levels[c]``, an empirical law over 0-11) when it has them, else from the truncated
    exponential of rate ``rates[c]``. A model without levels draws exactly as
    :func:`draw_priorities` with the classes' rates."""
    empirical = [i for i, law in enumerate(levels) if law is not None]
    if not empirical:
        return draw_priorities(np.asarray(rates, dtype=float)[class_index], rng)
    priority = np.empty(len(class_index))
    leveled = np.isin(class_index, empirical)
    local = np.zeros(len(levels), dtype=np.intp)
    local[empirical] = np.arange(len(empirical))
    laws = [levels[i] for i in empirical]
    priority[leveled] = unit_priority(Empirical.draw(laws, local[class_index[leveled]], rng))
    others = ~leveled
    if others.any():
        priority[others] = draw_priorities(np.asarray(rates, dtype=float)[class_index[others]], rng)
    return priority
