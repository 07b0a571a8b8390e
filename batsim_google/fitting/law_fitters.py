"""Estimators of every law the model can select, each from a sample of positive values.

The model paper fits log-normal and Pareto laws to makespans (Section 4.3) and uses the log-normal
of the sample's mean and median in its generator (Section 6); Gaevoy et al. compare the
exponential, gamma by moments and by maximum likelihood, the 2-branch hyperexponential by moments
(their closed form) and hyperexponentials and hypergamma by maximum likelihood; a 3-branch
hypergamma is added. scipy gives the
closed-form or one-dimensional maximum-likelihood fits of the simple laws (``fit`` with the
location fixed at 0); mixtures are in :mod:`.mixtures`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from batsim_google.errors import BatsimGoogleError
from batsim_google.fitting.mixtures import fit_hyperexponential, fit_hypergamma
from batsim_google.fitting.vocabulary import FITTER_NAMES
from batsim_google.model.laws import Exponential, Gamma, HyperExponential, Law, LogNormal, Lomax, Pareto

#: Lowest weight of the faster branch over its bound beta^2 / (1 + beta^2) (Gaevoy formula 26):
#: at the bound that branch has mean 0, a point mass no density can describe.
BRANCH_MARGIN = 1e-9


class FitFailure(BatsimGoogleError):
    """The law cannot describe this sample (e.g. a log-normal of mean <= median); an internal signal
    that :func:`.select.fit_law` turns into a fit without a law, never raised to the caller."""


def lognormal_ml(x: np.ndarray) -> LogNormal:
    """mu and sigma: the mean and standard deviation of ln x."""
    sigma, _, scale = stats.lognorm.fit(x, floc=0)
    return LogNormal(float(np.log(scale)), float(sigma))


def lognormal_mean_median(x: np.ndarray) -> LogNormal:
    """The paper's generator law: the log-normal with the sample's mean (mass) and median (mass /
    disparity), mu = ln median and sigma = sqrt(2 ln(mean / median))."""
    mean, median = float(np.mean(x)), float(np.median(x))
    if not mean > median:
        raise FitFailure(f"mean {mean:g} <= median {median:g}: no log-normal has this mean and median")
    return LogNormal(math.log(median), math.sqrt(2.0 * math.log(mean / median)))


def pareto_ml(x: np.ndarray) -> Pareto:
    """Pareto (type I): scale = the smallest value, shape = n / sum(ln(x / scale))."""
    shape, _, scale = stats.pareto.fit(x, floc=0)
    return Pareto(float(shape), float(scale))


def lomax_ml(x: np.ndarray) -> Lomax:
    """Lomax (Pareto type II, the paper's inter-arrival law) by maximum likelihood."""
    shape, _, scale = stats.lomax.fit(x, floc=0)
    return Lomax(float(shape), float(scale))


def exponential(x: np.ndarray) -> Exponential:
    """Rate = 1 / mean: moments and maximum likelihood agree (Gaevoy formula 7)."""
    return Exponential(1.0 / float(np.mean(x)))


def _mean_and_variance(x: np.ndarray) -> tuple[float, float]:
    """Sample mean and unbiased variance (Gaevoy formulas 1, 2)."""
    return float(np.mean(x)), float(np.var(x, ddof=1))


def gamma_moments(x: np.ndarray) -> Gamma:
    """Rate = mean / variance, shape = rate * mean (Gaevoy formulas 12, 13)."""
    mean, variance = _mean_and_variance(x)
    rate = mean / variance
    return Gamma(rate * mean, 1.0 / rate)


def gamma_ml(x: np.ndarray) -> Gamma:
    """Shape from digamma(v) - ln v = E(ln x) - ln E(x), rate = v / E(x) (Gaevoy formulas 14, 15)."""
    shape, _, scale = stats.gamma.fit(x, floc=0)
    return Gamma(float(shape), float(scale))


def hyperexponential_moments(x: np.ndarray) -> HyperExponential:
    """Gaevoy et al.'s closed form (formulas 21-30): mean and variance matched exactly, the third
    moment as closely as a 2-branch hyperexponential allows.

    A coefficient of variation <= 1 gives beta = 0: the exponential (one branch).
    """
    mean, variance = _mean_and_variance(x)
    cv2 = variance / mean**2
    if cv2 <= 1.0:
        return HyperExponential((1.0,), (1.0 / mean,))
    beta = math.sqrt((cv2 - 1.0) / 2.0)
    third = max(float(np.mean(np.asarray(x, dtype=float) ** 3)), 6.0 * mean**3 * (1.0 + beta**2) ** 2)
    gamma = third / (6.0 * mean**3 * beta**3) - (1.0 + 3.0 * beta**2) / beta**3
    bound = beta**2 / (1.0 + beta**2)
    a = max(0.5 * (1.0 + gamma / math.sqrt(gamma**2 + 4.0)), bound + BRANCH_MARGIN * (1.0 - bound))
    rate_1 = 1.0 / (mean * (1.0 - math.sqrt((1.0 - a) / a) * beta))
    rate_2 = 1.0 / (mean * (1.0 + math.sqrt(a / (1.0 - a)) * beta))
    return HyperExponential((a, 1.0 - a), (rate_1, rate_2))


#: Every method, by its name in :data:`FITTER_NAMES`.
FITTERS: dict[str, Callable[[np.ndarray], Law]] = dict(
    zip(
        FITTER_NAMES,
        (
            lognormal_ml,
            lognormal_mean_median,
            pareto_ml,
            lomax_ml,
            exponential,
            gamma_moments,
            gamma_ml,
            hyperexponential_moments,
            lambda x: fit_hyperexponential(x, 2),
            lambda x: fit_hyperexponential(x, 3),
            lambda x: fit_hypergamma(x, 2),
            lambda x: fit_hypergamma(x, 3),
        ),
        strict=True,
    )
)
