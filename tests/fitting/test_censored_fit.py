"""Censored lifetime fits on a synthetic cell whose law and window are known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from batsim_google.fitting.censored import (
    CensoredSample,
    best_censored,
    fit_all_censored,
    fit_censored,
    fit_lognormal_of_mean,
    kaplan_meier,
    scipy_right_censored_fit,
)
from batsim_google.fitting.law_fitters import lognormal_ml

MU, SIGMA = np.log(2000.0), 1.6  # median 2,000 s, mean 7,190 s: a heavy tail a 4-hour window cuts
WINDOW = 4 * 3600.0


def window_sample(rate: float, seed: int, law=None) -> CensoredSample:
    """What a window [0, WINDOW] sees of a stationary M/G/infinity cell with lognormal(MU, SIGMA)
    lifetimes: tasks that started long before (residents, residual life only), tasks submitted in
    the window, ended or still running at its end."""
    rng = np.random.default_rng(seed)
    law = law or stats.lognorm(SIGMA, scale=np.exp(MU))
    history = 200 * law.mean()  # long enough for the cell to be stationary at 0
    starts = rng.uniform(-history, WINDOW, rng.poisson(rate * (history + WINDOW)))
    ends = starts + law.rvs(size=len(starts), random_state=rng)
    alive = ends > 0
    starts, ends = starts[alive], ends[alive]
    resident = starts < 0
    origin = np.where(resident, 0.0, starts)
    ended = ends <= WINDOW
    times = np.minimum(ends, WINDOW) - origin
    return CensoredSample.of(times, ended, resident)


@pytest.fixture(scope="module")
def sample() -> CensoredSample:
    return window_sample(rate=1.0, seed=7)


def test_the_window_cuts_the_tail(sample):
    assert sample.resident.sum() > 5000  # about rate x mean
    assert (~sample.ended).sum() > 0.3 * len(sample)


def test_censored_lognormal_recovers_the_law_the_naive_fit_misses(sample):
    fitted = fit_censored(sample, "lognormal").law
    assert fitted.mu == pytest.approx(MU, abs=0.08)
    assert fitted.sigma == pytest.approx(SIGMA, rel=0.05)
    assert fitted.mean() == pytest.approx(np.exp(MU + SIGMA**2 / 2), rel=0.15)
    naive = lognormal_ml(sample.naive)
    assert abs(naive.mu - MU) > 0.3 or abs(naive.sigma / SIGMA - 1) > 0.2  # the same tolerances fail
    assert naive.mean() < 0.5 * np.exp(MU + SIGMA**2 / 2)


def test_residents_alone_give_the_law(sample):
    """Only the residual lives of the tasks present at 0: the equilibrium likelihood."""
    residents = CensoredSample.of(
        sample.times[sample.resident], sample.ended[sample.resident], np.ones(int(sample.resident.sum()), bool)
    )
    fitted = fit_censored(residents, "lognormal").law
    assert fitted.mu == pytest.approx(MU, abs=0.25)
    assert fitted.sigma == pytest.approx(SIGMA, rel=0.1)


def test_without_residents_scipy_censored_data_agrees(sample):
    own = ~sample.resident
    right = CensoredSample.of(sample.times[own], sample.ended[own])
    ours, theirs = fit_censored(right, "lognormal").law, scipy_right_censored_fit(right)
    assert ours.mu == pytest.approx(theirs.mu, abs=2e-3)
    assert ours.sigma == pytest.approx(theirs.sigma, abs=2e-3)


def test_the_right_family_wins_by_aic(sample):
    fits = fit_all_censored(sample)
    assert best_censored(fits).family == "lognormal"
    by_name = {fit.family: fit for fit in fits}
    assert by_name["lognormal"].ks < 0.02
    assert by_name["exponential"].ks > 0.1


def test_gamma_is_recovered_too():
    law = stats.gamma(0.6, scale=5000.0)
    sample = window_sample(rate=0.5, seed=3, law=law)
    fitted = fit_censored(sample, "gamma").law
    assert fitted.shape == pytest.approx(0.6, rel=0.08)
    assert fitted.scale == pytest.approx(5000.0, rel=0.12)


def test_kaplan_meier_matches_the_law_where_it_sees():
    rng = np.random.default_rng(1)
    lifetimes = rng.exponential(100.0, 20000)
    censor = rng.uniform(0, 300, 20000)
    times, survival = kaplan_meier(np.minimum(lifetimes, censor), lifetimes <= censor)
    inside = times < 200
    assert np.max(np.abs(survival[inside] - np.exp(-times[inside] / 100.0))) < 0.02


def test_a_lognormal_of_a_given_mean(sample):
    """Given the true mean, sigma comes back by censored likelihood; a wrong mean costs likelihood."""
    true_mean = float(np.exp(MU + SIGMA**2 / 2))
    own = ~sample.resident
    right = CensoredSample.of(sample.times[own], sample.ended[own])
    fitted = fit_lognormal_of_mean(right, true_mean)
    assert fitted.law.mean() == pytest.approx(true_mean, rel=1e-9)
    assert fitted.law.sigma == pytest.approx(SIGMA, rel=0.05)
    free = fit_censored(right, "lognormal")
    assert fitted.loglik <= free.loglik + 1e-6 and fitted.loglik > free.loglik - 2.0
    assert fit_lognormal_of_mean(right, true_mean / 3).loglik < free.loglik - 20.0
