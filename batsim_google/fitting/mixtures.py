"""Maximum-likelihood fit of hyperexponential and hypergamma laws (Gaevoy et al.'s H(n), HΓ(n)).

Gaevoy et al. maximize the log-likelihood with Hooke-Jeeves and report minutes per fit. Here the
log-likelihood of the mixture and its exact gradient are computed vectorized (log-sum-exp over the
branches) and maximized by L-BFGS over unconstrained parameters: weight logits, log rates and,
for gamma branches, log shapes. Data are divided by their median first so that every parameter
is of order 1 whatever the unit. Mixtures have local optima: the search starts from a split of
the sorted data into groups, one per branch with its moment estimates, in three ways (see
:func:`_starts`), and keeps the best optimum.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from batsim_google.model.laws import HyperExponential, HyperGamma

#: Bounds of the log-parameters (in units of the median): keep exp() finite and shapes sane.
LOG_RATE_BOUND = 40.0
LOG_SHAPE_BOUNDS = (np.log(1e-3), np.log(1e4))
MAX_ITERATIONS = 500


def _unpack(theta: np.ndarray, branches: int, gamma: bool):
    logits = np.append(theta[: branches - 1], 0.0)
    log_rates = theta[branches - 1 : 2 * branches - 1]
    log_shapes = theta[2 * branches - 1 :] if gamma else np.zeros(branches)
    return logits, log_rates, log_shapes


class _Objective:
    """Minus the mean log-likelihood of the mixture on ``y`` and its gradient in ``theta``.

    The branch-by-task arrays are buffers reused from call to call: allocating them afresh at
    every evaluation costs more (page faults) than the arithmetic.
    """

    def __init__(self, y: np.ndarray, branches: int, gamma: bool) -> None:
        self.y, self.log_y = y, np.log(y)
        self.branches, self.gamma = branches, gamma
        self.joint = np.empty((branches, len(y)))
        self.peak = np.empty(len(y))
        self.norm = np.empty(len(y))

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        branches, y, log_y, joint = self.branches, self.y, self.log_y, self.joint
        logits, log_rates, log_shapes = _unpack(theta, branches, self.gamma)
        log_weights = logits - special.logsumexp(logits)
        rates, shapes = np.exp(log_rates), np.exp(log_shapes)
        # ln(weight x density) of each branch for each value:
        # ln w + shape ln(rate) - lnGamma(shape) + (shape - 1) ln y - rate y
        np.multiply(rates[:, None], y[None, :], out=joint)
        np.subtract((log_weights + shapes * log_rates - special.gammaln(shapes))[:, None], joint, out=joint)
        if self.gamma:
            for branch in range(branches):
                joint[branch] += (shapes[branch] - 1.0) * log_y
        np.max(joint, axis=0, out=self.peak)
        np.subtract(joint, self.peak, out=joint)
        np.exp(joint, out=joint)
        np.sum(joint, axis=0, out=self.norm)
        total = self.peak.sum() + np.log(self.norm, out=self.peak).sum()
        responsibility = np.divide(joint, self.norm, out=joint)
        count = len(y)
        share = responsibility.sum(axis=1) / count
        gradient_logits = (share - np.exp(log_weights))[: branches - 1]
        # d/d ln(rate) = shape - rate y ; d/d ln(shape) = shape (ln rate + ln y - digamma(shape))
        gradient_rates = shapes * share - rates * (responsibility @ y) / count
        gradients = [gradient_logits, gradient_rates]
        if self.gamma:
            mean_log_y = (responsibility @ log_y) / count
            gradients.append(shapes * (share * (log_rates - special.digamma(shapes)) + mean_log_y))
        return -total / count, -np.concatenate(gradients)


def _starts(y: np.ndarray, branches: int, gamma: bool) -> list[np.ndarray]:
    """Starting points from three splits of the sorted data into one group per branch: equal
    counts, equal widths in log scale, and halving tails (quantiles 1/2, 3/4, 7/8, ...), each
    group giving its share as weight and its moments as branch parameters."""
    ordered = np.sort(y)
    count = len(ordered)
    log_edges = np.exp(np.linspace(np.log(ordered[0]), np.log(ordered[-1]), branches + 1))[1:-1]
    halving = (1.0 - 0.5 ** np.arange(1, branches)) * count
    splits = (
        np.linspace(0, count, branches + 1)[1:-1].astype(int),
        np.searchsorted(ordered, log_edges),
        halving.astype(int),
    )
    starts = []
    for positions in splits:
        groups = np.split(ordered, positions)
        if any(len(g) < 2 for g in groups):
            continue
        weights = np.array([len(g) / count for g in groups])
        means = np.array([g.mean() for g in groups])
        variances = np.array([max(g.var(), 1e-12 * m * m) for g, m in zip(groups, means)])
        shapes = np.clip(means**2 / variances, *np.exp(LOG_SHAPE_BOUNDS)) if gamma else np.ones(branches)
        rates = shapes / means
        logits = np.log(weights[:-1] / weights[-1])
        parts = [logits, np.log(rates)] + ([np.log(shapes)] if gamma else [])
        starts.append(np.concatenate(parts))
    return starts


def _fit(x: np.ndarray, branches: int, gamma: bool):
    x = np.asarray(x, dtype=float)
    unit = float(np.median(x))
    y = x / unit
    objective = _Objective(y, branches, gamma)
    bounds = [(-50.0, 50.0)] * (branches - 1) + [(-LOG_RATE_BOUND, LOG_RATE_BOUND)] * branches
    if gamma:
        bounds += [LOG_SHAPE_BOUNDS] * branches
    best = None
    for start in _starts(y, branches, gamma):
        result = optimize.minimize(
            objective,
            np.clip(start, *np.array(bounds).T),
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": MAX_ITERATIONS},
        )
        if best is None or result.fun < best.fun:
            best = result
    logits, log_rates, log_shapes = _unpack(best.x, branches, gamma)
    weights = np.exp(logits - special.logsumexp(logits))
    weights = weights / weights.sum()
    order = np.argsort(log_shapes - log_rates)  # branches by increasing mean, shape / rate
    rates = np.exp(log_rates) / unit
    return weights[order], rates[order], np.exp(log_shapes)[order]


def fit_hyperexponential(x: np.ndarray, branches: int) -> HyperExponential:
    """H(n) by maximum likelihood, branches by increasing mean."""
    weights, rates, _ = _fit(x, branches, gamma=False)
    return HyperExponential(tuple(weights.tolist()), tuple(rates.tolist()))


def fit_hypergamma(x: np.ndarray, branches: int) -> HyperGamma:
    """HΓ(n) by maximum likelihood, branches by increasing mean."""
    weights, rates, shapes = _fit(x, branches, gamma=True)
    return HyperGamma(tuple(weights.tolist()), tuple(shapes.tolist()), tuple((1.0 / rates).tolist()))
