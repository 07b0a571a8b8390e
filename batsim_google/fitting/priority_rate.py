"""Rate of the truncated-exponential priority law by maximum likelihood.

The exponential truncated to [0, 1] is an exponential family whose sufficient statistic is the
sample mean, so the likelihood is largest at the rate whose mean is the sample mean
(:func:`batsim_google.model.priority.rate_for_mean`). The model's rates are positive, so a mean of 1/2 or
more (priorities not decreasing in density) has its constrained maximum at the lowest rate, a
nearly uniform law; that case is reported, not hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from batsim_google.model.priority import RATE_BRACKET, priority_law, rate_for_mean


@dataclass(frozen=True)
class PriorityFit:
    rate: float
    mean: float
    note: str = ""


def fit_priority_rate(priorities: np.ndarray) -> PriorityFit:
    """Maximum-likelihood rate of priorities in ]0, 1]."""
    mean = float(np.mean(priorities))
    low, high = RATE_BRACKET
    if mean >= priority_law(low).mean():
        return PriorityFit(
            low,
            mean,
            f"mean priority {mean:.4g} >= 1/2 is out of reach of a decreasing "
            f"truncated exponential: lambda = {low:g} (nearly uniform), the boundary of lambda > 0",
        )
    if mean <= priority_law(high).mean():
        return PriorityFit(high, mean, f"mean priority {mean:.4g} below the reach of lambda <= {high:g}")
    return PriorityFit(rate_for_mean(mean), mean)
