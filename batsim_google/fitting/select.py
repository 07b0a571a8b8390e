"""Fit every law to a sample, score each fit, and select the best by a stated criterion.

Scores: the Kolmogorov-Smirnov statistic (the largest gap between the empirical and the fitted
distribution functions, the model paper's criterion), the log-likelihood and the AIC
(2 parameters - 2 log-likelihood, which charges mixtures for their extra parameters), and the
fitting time. ``ks`` (default) selects the smallest KS statistic: it is what the model paper
compares and what the fidelity check measures on generated data; ``aic`` the smallest AIC.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np
from scipy import stats

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.fitting.law_fitters import FITTERS, FitFailure
from batsim_google.fitting.vocabulary import Criterion
from batsim_google.model.laws import Law


@dataclass(frozen=True)
class LawFit:
    """One method's result on one sample; ``law`` is None when the method does not apply."""

    method: str
    law: Law | None
    ks: float
    loglik: float
    aic: float
    seconds: float
    note: str = ""

    def score(self, criterion: Criterion) -> float:
        return {"ks": self.ks, "aic": self.aic}[criterion]

    def to_mapping(self) -> dict:
        """As JSON values: scores of a method that does not apply are null."""

        def finite(value: float) -> float | None:
            return value if np.isfinite(value) else None

        return {
            "method": self.method,
            "law": None if self.law is None else self.law.to_mapping(),
            "ks": finite(self.ks),
            "loglik": finite(self.loglik),
            "aic": finite(self.aic),
            "seconds": self.seconds,
            **({"note": self.note} if self.note else {}),
        }


def fit_law(method: str, sample: np.ndarray) -> LawFit:
    """Fit with ``method`` (a key of :data:`FITTERS`) and score the result on the same sample.

    A sample of equal values (e.g. the run times of one repeated job) has no continuous law: no
    method applies, rather than each failing its own way.
    """
    start = time.perf_counter()
    try:
        if np.ptp(sample) == 0:
            raise FitFailure(f"all values equal {sample[0]:g}: no continuous law describes them")
        law = FITTERS[method](sample)
        if not all(np.all(np.isfinite(getattr(law, f.name))) for f in fields(law)):
            raise FitFailure(f"parameters not finite: {law}")
    except FitFailure as failure:
        return LawFit(method, None, np.inf, -np.inf, np.inf, time.perf_counter() - start, str(failure))
    return scored(method, law, sample, time.perf_counter() - start)


def scored(method: str, law: Law, sample: np.ndarray, seconds: float = 0.0, note: str = "") -> LawFit:
    """``law`` with its KS statistic, log-likelihood and AIC on ``sample``."""
    loglik = float(np.sum(law.logpdf(sample)))
    ks = float(stats.kstest(sample, law.cdf).statistic)
    return LawFit(method, law, ks, loglik, 2.0 * law.n_parameters - 2.0 * loglik, seconds, note)


def fit_all(sample: np.ndarray, methods: Iterable[str] | None = None) -> list[LawFit]:
    """Every method (default: all of :data:`FITTERS`) on ``sample``, a 1-D array of values > 0."""
    sample = np.asarray(sample, dtype=float)
    if sample.ndim != 1 or len(sample) < 2 or not np.all(np.isfinite(sample) & (sample > 0)):
        raise ValueError("a sample to fit must hold at least 2 finite values, all > 0")
    methods = list(FITTERS if methods is None else methods)
    unknown = [method for method in methods if method not in FITTERS]
    if unknown:
        raise ParameterError(f"unknown fitting method(s) {unknown}; choose among {', '.join(FITTERS)}")
    return [fit_law(method, sample) for method in methods]


def best_fit(fits: Iterable[LawFit], criterion: Criterion = "ks") -> LawFit:
    """The applicable fit with the lowest score (the first listed on a tie)."""
    usable = [fit for fit in fits if fit.law is not None and np.isfinite(fit.score(criterion))]
    if not usable:
        raise InputFileError("no law could be fitted")
    return min(usable, key=lambda fit: fit.score(criterion))
