"""The probability laws of the workload model (Da Costa et al. 2018, Section 4), as scipy laws.

Every law takes array parameters, so the generator draws whole batches of tasks in one call and
tests compare samples against the very same exact distributions.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Shape of the Lomax (Pareto II) inter-arrival law: the paper's ``pareto(4, loc=-1)``.
INTERARRIVAL_SHAPE = 4.0


def interarrival_law(dynamism: float):
    """Lomax with shape 4 scaled so its mean is ``dynamism`` seconds.

    ``pareto(4, loc=-1)`` is a Lomax(4) of mean 1/3, hence the paper's factor ``3 * dynamism``.
    """
    scale = (INTERARRIVAL_SHAPE - 1.0) * np.asarray(dynamism, dtype=float)
    return stats.lomax(INTERARRIVAL_SHAPE, scale=scale)


def lognormal_parameters(mass, disparity) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) of the log-normal whose mean is ``mass`` and median ``mass / disparity``.

    The median of a log-normal is exp(mu) and its mean exp(mu + sigma^2 / 2), so
    sigma^2 = 2 ln(mean / median) = 2 ln(disparity).
    """
    mass = np.asarray(mass, dtype=float)
    disparity = np.asarray(disparity, dtype=float)
    return np.log(mass / disparity), np.sqrt(2.0 * np.log(disparity))


def makespan_law(mass, disparity):
    """Log-normal makespan law of a class of mean ``mass`` and mean/median ``disparity``."""
    mu, sigma = lognormal_parameters(mass, disparity)
    return stats.lognorm(sigma, scale=np.exp(mu))


def priority_law(rate):
    """Exponential of rate ``rate`` truncated to [0, 1]: the paper's redraw-above-1 loop, exactly."""
    rate = np.asarray(rate, dtype=float)
    return stats.truncexpon(rate, scale=1.0 / rate)


def draw_priorities(rate, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """Priorities in ]0, 1]: the truncated exponential, with an exact 0 (probability 2^-53) lifted."""
    values = priority_law(rate).rvs(size=size, random_state=rng)
    return np.maximum(values, np.finfo(float).tiny)
