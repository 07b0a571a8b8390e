"""The names the ``fit`` command's options are declared with, importable without numpy or scipy.

The command line declares its choices with them at start-up; the fitting modules use the same names.
"""

from __future__ import annotations

from typing import Literal

#: Every fitting method, by the name reports and ``--laws`` use, in the order they are reported
#: (:data:`batsim_google.fitting.law_fitters.FITTERS`). The last, beyond Gaevoy et al.'s set:
#: three gamma branches follow the lumpier makespans of the trace.
FITTER_NAMES = (
    "lognormal-ml",
    "lognormal-mean-median",
    "pareto-ml",
    "lomax-ml",
    "exponential",
    "gamma-moments",
    "gamma-ml",
    "hyperexp2-moments",
    "hyperexp2-ml",
    "hyperexp3-ml",
    "hypergamma2-ml",
    "hypergamma3-ml",
)
#: How tasks are put into classes: Finish-ended tasks / Kill-ended services, or k-means clusters.
Classification = Literal["apriori", "kmeans"]
CLASSIFICATIONS: tuple[Classification, ...] = ("apriori", "kmeans")
#: The arrival-rate profile fitted: chosen from the input's span, weekly, daily, or none.
ProfileChoice = Literal["auto", "weekly", "daily", "none"]
PROFILE_CHOICES: tuple[ProfileChoice, ...] = ("auto", "weekly", "daily", "none")
#: How the best law is chosen: smallest KS statistic or smallest AIC.
Criterion = Literal["ks", "aic"]
CRITERIA: tuple[Criterion, ...] = ("ks", "aic")
