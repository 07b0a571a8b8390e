"""The model paper's parametrization of its laws (Da Costa et al. 2018, Sections 4 and 6).

Inter-arrivals: the Lomax of shape :data:`INTERARRIVAL_SHAPE` and mean ``dynamism``; makespans:
the log-normal of a class's ``mass`` and ``disparity``; priorities: the truncated exponential.
Every law takes array parameters, so the generator draws whole batches of tasks in one call and
tests compare samples against the very same exact distributions.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Shape of the Lomax (Pareto II) inter-arrival law: the paper's ``pareto(4, loc=-1)``, a Lomax(4)
#: of mean 1/3, hence its factor ``3 * dynamism`` (the scale is ``(shape - 1) * dynamism``).
INTERARRIVAL_SHAPE = 4.0


def lognormal_parameters(mass, disparity) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) of the log-normal whose mean is ``mass`` and median ``mass / disparity``.

    The median of a log-normal is exp(mu) and its mean exp(mu + sigma^2 / 2), so
    sigma^2 = 2 ln(mean / median) = 2 ln(disparity).
    """
    mass = np.asarray(mass, dtype=float)
    disparity = np.asarray(disparity, dtype=float)
    return np.log(mass / disparity), np.sqrt(2.0 * np.log(disparity))


def priority_law(rate):
    """Exponential of rate ``rate`` truncated to [0, 1]: the paper's redraw-above-1 loop, exactly."""
    rate = np.asarray(rate, dtype=float)
    return stats.truncexpon(rate, scale=1.0 / rate)


def draw_priorities(rate, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """Priorities in ]0, 1]: the truncated exponential, with an exact 0 (probability 2^-53) lifted
    and scipy's inverse CDF kept from passing 1 by an ulp."""
    values = priority_law(rate).rvs(size=size, random_state=rng)
    return np.clip(values, np.finfo(float).tiny, 1.0)
