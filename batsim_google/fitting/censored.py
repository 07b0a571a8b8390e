"""Lifetimes fitted with right censoring and left truncation: the tasks a window cuts.

A trace window [0, T] sees three kinds of lifetime:

- a task submitted in the window that ends in it: its lifetime ``x`` is observed (density f(x));
- a task submitted in the window at s and still running at T: only ``x > T - s`` is known (right
  censoring, survival S(T - s));
- a task already running at 0 (*resident*): it is left-truncated, and the trace does not say since
  when it runs (its start is before the window, time 0 in the trace), so its age is unknown. Only
  its *residual* life r (0 to its end) is seen, itself censored at T when it outlives the window.

Without the age, the conditional likelihood of left truncation (f(x) / S(a)) cannot be written. The
residents are taken instead as what a stationary cell holds at any instant: in an M/G/infinity
system (the model's own warm-start assumption, :mod:`batsim_google.generation.warm_start`) the
residual life of a task present at 0 has the equilibrium density S(r) / E[X], and survival
``integral_r^inf S(u) du / E[X]``. That is the likelihood used for residents (a resident that ends
at r contributes S(r) / E[X], one that outlives the window the equilibrium survival at T); it
determines the whole law (S = E[X] times the equilibrium density), and it is the law the warm start
draws residual lives from, so fit and warm start agree.

Fitting only the lifetimes that end in the window (the *naive* fit) keeps the short ones: the
long-lived services, the bulk of a cell's load, are missing. The families with closed-form partial
means (the integral above) are fitted by maximum likelihood (scipy.optimize on log-parameters,
started from the naive fit): log-normal, gamma, exponential, Lomax. Without residents the
likelihood is scipy's right-censored one (``scipy.stats.CensoredData``); the tests check the two
agree. The fit is judged against the Kaplan-Meier estimate of the non-resident lifetimes
(:func:`kaplan_meier`): the KS distance over the times it covers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from batsim_google.errors import InputFileError
from batsim_google.model.laws import Exponential, Gamma, Law, LogNormal, Lomax


@dataclass(frozen=True)
class CensoredSample:
    """Lifetimes (s, > 0) as a window saw them.

    ``ended``: the lifetime (or residual) ends in the window; otherwise it is a lower bound.
    ``resident``: the task was running at the window's start and ``times`` is its residual life.
    """

    times: np.ndarray
    ended: np.ndarray
    resident: np.ndarray

    @classmethod
    def of(cls, times, ended=None, resident=None) -> CensoredSample:
        times = np.asarray(times, dtype=float)
        size = len(times)
        ended = np.ones(size, dtype=bool) if ended is None else np.asarray(ended, dtype=bool)
        resident = np.zeros(size, dtype=bool) if resident is None else np.asarray(resident, dtype=bool)
        if not (len(ended) == len(resident) == size):
            raise InputFileError("censored sample: times, ended and resident differ in length")
        if size and not (np.all(np.isfinite(times)) and times.min() > 0):
            raise InputFileError("censored sample: lifetimes must be finite and > 0")
        return cls(times, ended, resident)

    def __len__(self) -> int:
        return len(self.times)

    @property
    def naive(self) -> np.ndarray:
        """The lifetimes a fit ignoring the window keeps: submitted in it and ended in it."""
        return self.times[self.ended & ~self.resident]


@dataclass(frozen=True)
class _Family:
    """A law family on log-parameters: its law, log-density, log-survival and log partial mean
    log integral_c^inf S(u) du (log E[X] at c = 0)."""

    name: str
    law: Callable[[np.ndarray], Law]
    start: Callable[[np.ndarray], np.ndarray]
    logpdf: Callable[[np.ndarray, np.ndarray], np.ndarray]
    logsf: Callable[[np.ndarray, np.ndarray], np.ndarray]
    log_tail_integral: Callable[[np.ndarray, np.ndarray], np.ndarray]


def _log_difference(log_a: np.ndarray, log_b: np.ndarray) -> np.ndarray:
    """log(exp(log_a) - exp(log_b)) for log_a >= log_b; -inf where they are equal (no precision)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return log_a + np.log(-np.expm1(np.minimum(log_b - log_a, 0.0)))


def _lognormal_tail(theta, c):
    mu, sigma = theta[0], math.exp(theta[1])
    with np.errstate(divide="ignore"):
        log_c = np.log(c)
    log_mean_part = mu + sigma**2 / 2.0 + special.log_ndtr((mu + sigma**2 - log_c) / sigma)
    log_c_part = log_c + special.log_ndtr((mu - log_c) / sigma)
    return _log_difference(log_mean_part, log_c_part)


def _gamma_tail(theta, c):
    shape, scale = math.exp(theta[0]), math.exp(theta[1])
    with np.errstate(divide="ignore"):
        log_mean_part = math.log(shape * scale) + np.log(special.gammaincc(shape + 1.0, c / scale))
        log_c_part = np.log(c) + np.log(special.gammaincc(shape, c / scale))
    return _log_difference(log_mean_part, log_c_part)


def _lomax_tail(theta, c):
    shape, scale = math.exp(theta[0]), math.exp(theta[1])
    if shape <= 1.0:  # no finite mean: residents cannot be stationary
        return np.full(np.shape(c), np.inf)
    return math.log(scale / (shape - 1.0)) + (1.0 - shape) * np.log1p(c / scale)


def _log_start(x: np.ndarray) -> np.ndarray:
    logs = np.log(x)
    return np.array([logs.mean(), math.log(max(logs.std(), 1e-3))])


def _lognormal_logpdf(t, x):
    sigma, log_x = math.exp(t[1]), np.log(x)
    return -log_x - t[1] - 0.5 * math.log(2.0 * math.pi) - 0.5 * ((log_x - t[0]) / sigma) ** 2


def _gamma_logpdf(t, x):
    shape, scale = math.exp(t[0]), math.exp(t[1])
    return (shape - 1.0) * np.log(x) - x / scale - special.gammaln(shape) - shape * t[1]


def _gamma_logsf(t, x):
    with np.errstate(divide="ignore"):
        return np.log(special.gammaincc(math.exp(t[0]), x / math.exp(t[1])))


def _lomax_logpdf(t, x):
    shape, scale = math.exp(t[0]), math.exp(t[1])
    return t[0] - t[1] - (shape + 1.0) * np.log1p(x / scale)


FAMILIES: dict[str, _Family] = {
    family.name: family
    for family in (
        _Family(
            "lognormal",
            lambda t: LogNormal(float(t[0]), math.exp(t[1])),
            _log_start,
            _lognormal_logpdf,
            lambda t, x: special.log_ndtr((t[0] - np.log(x)) / math.exp(t[1])),
            _lognormal_tail,
        ),
        _Family(
            "gamma",
            lambda t: Gamma(math.exp(t[0]), math.exp(t[1])),
            lambda x: np.log(np.array([1.0, x.mean()])),
            _gamma_logpdf,
            _gamma_logsf,
            _gamma_tail,
        ),
        _Family(
            "exponential",
            lambda t: Exponential(math.exp(-t[0])),
            lambda x: np.log(np.array([x.mean()])),
            lambda t, x: -t[0] - x / math.exp(t[0]),
            lambda t, x: -x / math.exp(t[0]),
            lambda t, c: t[0] - c / math.exp(t[0]),
        ),
        _Family(
            "lomax",
            lambda t: Lomax(math.exp(t[0]), math.exp(t[1])),
            lambda x: np.log(np.array([2.0, x.mean()])),
            _lomax_logpdf,
            lambda t, x: -math.exp(t[0]) * np.log1p(x / math.exp(t[1])),
            _lomax_tail,
        ),
    )
}


def log_likelihood(family: _Family, theta: np.ndarray, sample: CensoredSample) -> float:
    """The window's log-likelihood: density or survival for tasks submitted in it, equilibrium
    density or survival for residents."""
    x, ended, resident = sample.times, sample.ended, sample.resident
    total = float(np.sum(family.logpdf(theta, x[ended & ~resident])))
    total += float(np.sum(family.logsf(theta, x[~ended & ~resident])))
    if resident.any():
        log_mean = float(family.log_tail_integral(theta, np.zeros(1))[0])
        total += float(np.sum(family.logsf(theta, x[ended & resident])))
        censored = x[~ended & resident]
        if len(censored):
            # residents outlive the window at (nearly) one time: integrate once per distinct time
            values, counts = np.unique(censored, return_counts=True)
            total += float(np.sum(counts * family.log_tail_integral(theta, values)))
        total -= log_mean * int(resident.sum())
    return total if math.isfinite(total) else -math.inf


@dataclass(frozen=True)
class CensoredFit:
    """One family's maximum-likelihood law, its log-likelihood and AIC, and its KS distance to
    the Kaplan-Meier estimate of the non-resident lifetimes."""

    family: str
    law: Law | None
    loglik: float
    aic: float
    ks: float
    note: str = ""


def _start_sample(sample: CensoredSample) -> np.ndarray:
    """What starting values are taken from: the naive lifetimes, or all times when too few end."""
    naive = sample.naive
    return naive if len(naive) >= 2 and naive.max() > naive.min() else sample.times


def fit_censored(sample: CensoredSample, family_name: str) -> CensoredFit:
    """Maximum likelihood of ``family_name`` (a key of :data:`FAMILIES`) on the window's sample."""
    family = FAMILIES[family_name]
    if len(sample) < 2:
        raise InputFileError("censored fit: fewer than 2 lifetimes")

    def negative(theta: np.ndarray) -> float:
        try:
            value = log_likelihood(family, theta, sample)
        except OverflowError:  # a simplex step far out (a small sample's flat likelihood)
            return 1e300
        return -value if math.isfinite(value) else 1e300

    start = family.start(_start_sample(sample))
    # a short simplex finds the basin from the naive start (robust to infinite likelihoods);
    # quasi-Newton polishes
    coarse = optimize.minimize(negative, start, method="Nelder-Mead", options=dict(maxiter=60 * len(start)))
    result = optimize.minimize(negative, coarse.x, method="L-BFGS-B", options=dict(ftol=1e-13, gtol=1e-8))
    result = result if result.fun <= coarse.fun else coarse
    loglik = -float(result.fun)
    if not math.isfinite(loglik) or loglik <= -1e299:
        return CensoredFit(family_name, None, -math.inf, math.inf, math.inf, "no finite likelihood")
    law = family.law(result.x)
    return CensoredFit(family_name, law, loglik, 2.0 * len(start) - 2.0 * loglik, ks_to_kaplan_meier(law, sample))


def fit_lognormal_of_mean(sample: CensoredSample, mean: float) -> CensoredFit:
    """The log-normal of mean ``mean`` of largest censored likelihood: sigma by maximum likelihood,
    mu = ln(mean) - sigma^2 / 2. For a mean the window hardly determines (most of it in the tail
    beyond the window) but another measurement gives, e.g. Little's law."""
    family = FAMILIES["lognormal"]

    def theta(log_sigma: float) -> np.ndarray:
        return np.array([math.log(mean) - math.exp(2.0 * log_sigma) / 2.0, log_sigma])

    def negative(log_sigma: float) -> float:
        value = log_likelihood(family, theta(log_sigma), sample)
        return -value if math.isfinite(value) else 1e300

    result = optimize.minimize_scalar(negative, bounds=(math.log(0.05), math.log(10.0)), method="bounded")
    law = family.law(theta(float(result.x)))
    loglik = -float(result.fun)
    return CensoredFit(
        "lognormal", law, loglik, 2.0 - 2.0 * loglik, ks_to_kaplan_meier(law, sample), f"mean {mean:.6g} s"
    )


def fit_all_censored(sample: CensoredSample) -> list[CensoredFit]:
    return [fit_censored(sample, name) for name in FAMILIES]


def best_censored(fits: list[CensoredFit]) -> CensoredFit:
    """The smallest AIC: the KS distance to Kaplan-Meier covers only the window's times."""
    return min(fits, key=lambda fit: fit.aic)


def kaplan_meier(times: np.ndarray, ended: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Kaplan-Meier survival estimate of right-censored lifetimes: (distinct end times, S just
    after each)."""
    order = np.argsort(times, kind="stable")
    times, ended = times[order], ended[order]
    distinct, first, counts = np.unique(times, return_index=True, return_counts=True)
    deaths = np.add.reduceat(ended.astype(np.int64), first)
    at_risk = len(times) - first
    keep = deaths > 0
    survival = np.cumprod(1.0 - deaths[keep] / at_risk[keep])
    return distinct[keep], survival


def ks_to_kaplan_meier(law: Law, sample: CensoredSample) -> float:
    """Largest gap between the law's CDF and 1 - Kaplan-Meier of the non-resident lifetimes, over
    the times where Kaplan-Meier is defined (nan without any)."""
    own = ~sample.resident
    times, survival = kaplan_meier(sample.times[own], sample.ended[own])
    if not len(times):
        return math.nan
    cdf = law.cdf(times)
    before = np.concatenate([[1.0], survival[:-1]])
    return float(max(np.max(np.abs(cdf - (1.0 - survival))), np.max(np.abs(cdf - (1.0 - before)))))


def scipy_right_censored_fit(sample: CensoredSample) -> LogNormal:
    """scipy's own log-normal fit of right-censored lifetimes (no residents): a cross-check."""
    own = ~sample.resident
    data = stats.CensoredData.right_censored(sample.times[own], ~sample.ended[own])
    sigma, _, scale = stats.lognorm.fit(data, floc=0)
    return LogNormal(float(np.log(scale)), float(sigma))
