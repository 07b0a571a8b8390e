"""Every fitter recovers the law its data were drawn from; scores and selection; priorities."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from batsim_google.fitting.law_fitters import FITTERS, hyperexponential_moments
from batsim_google.fitting.priority_rate import fit_priority_rate
from batsim_google.fitting.select import LawFit, best_fit, fit_all, fit_law
from batsim_google.model.laws import Gamma, HyperExponential, HyperGamma, LogNormal, Lomax, Pareto
from batsim_google.model.priority import draw_priorities

SIZE = 100_000


def _sample(law, seed: int = 2, size: int = SIZE) -> np.ndarray:
    return law.sample(size, np.random.default_rng(seed))


def _close(found, expected, rel):
    np.testing.assert_allclose(np.asarray(found, dtype=float), np.asarray(expected, dtype=float), rtol=rel)


def test_lognormal_ml_recovers_mu_sigma_and_the_sample_mean_and_median():
    sample = _sample(LogNormal(5.0, 1.4))
    law = FITTERS["lognormal-ml"](sample)
    assert law.mu == pytest.approx(5.0, abs=0.02) and law.sigma == pytest.approx(1.4, abs=0.01)
    # mu and sigma are the mean and standard deviation of ln x: the estimate is exact, not iterative.
    assert law.mu == pytest.approx(np.log(sample).mean(), abs=1e-9)
    # The sample's median within 2 %, its mean within 4 % (its standard error is ~0.8 % here).
    assert law.median() == pytest.approx(np.median(sample), rel=0.02)
    assert law.mean() == pytest.approx(sample.mean(), rel=0.04)


def test_lognormal_of_mean_and_median_is_the_papers_mass_and_disparity():
    sample = _sample(LogNormal(np.log(1700 / 3.8), np.sqrt(2 * np.log(3.8))))
    law = FITTERS["lognormal-mean-median"](sample)
    assert law.mean() == pytest.approx(sample.mean(), rel=1e-9)
    assert law.median() == pytest.approx(np.median(sample), rel=1e-9)
    assert law.mean() / law.median() == pytest.approx(3.8, rel=0.05)
    fit = fit_law("lognormal-mean-median", np.array([1.0, 2.0, 2.0, 2.5]))  # mean < median
    assert fit.law is None and "mean" in fit.note and fit.ks == np.inf


@pytest.mark.parametrize(
    ("method", "truth", "rel"),
    [
        ("pareto-ml", Pareto(1.5, 10.0), 0.02),
        ("lomax-ml", Lomax(2.5, 100.0), 0.05),
        ("gamma-moments", Gamma(0.6, 2000.0), 0.04),
        ("gamma-ml", Gamma(0.6, 2000.0), 0.02),
        ("hyperexp2-ml", HyperExponential((0.7, 0.3), (0.1, 0.002)), 0.05),
        ("hyperexp3-ml", HyperExponential((0.6, 0.3, 0.1), (1.0, 0.05, 0.001)), 0.06),
        ("hypergamma2-ml", HyperGamma((0.3, 0.7), (0.5, 3.0), (10.0, 1000.0)), 0.05),
        ("hypergamma3-ml", HyperGamma((0.5, 0.3, 0.2), (2.0, 5.0, 1.5), (1.0, 100.0, 10_000.0)), 0.08),
    ],
)
def test_fitters_recover_the_parameters_of_their_law(method, truth, rel):
    law = FITTERS[method](_sample(truth))
    assert type(law) is type(truth)
    for name, value in truth.to_mapping().items():
        if name != "law":
            _close(getattr(law, name), value, rel)


def test_exponential_and_gamma_ml_solve_their_likelihood_equations():
    sample = _sample(Gamma(0.6, 2000.0))
    assert FITTERS["exponential"](sample).rate == pytest.approx(1 / sample.mean(), rel=1e-12)
    law = FITTERS["gamma-ml"](sample)
    # Gaevoy (14, 15): rate = v / E(x); digamma(v) - ln v = E(ln x) - ln E(x).
    assert law.shape * law.scale == pytest.approx(sample.mean(), rel=1e-6)
    assert special.digamma(law.shape) - np.log(law.shape) == pytest.approx(
        np.log(sample).mean() - np.log(sample.mean()), abs=1e-6
    )
    moments = FITTERS["gamma-moments"](sample)
    assert moments.shape * moments.scale**2 == pytest.approx(sample.var(ddof=1), rel=1e-9)


def test_hyperexponential_by_moments_matches_mean_variance_and_third_moment():
    truth = HyperExponential((0.7, 0.3), (0.1, 0.002))
    sample = _sample(truth, size=400_000)
    law = hyperexponential_moments(sample)
    weights, means = np.array(law.weights), 1 / np.array(law.rates)
    assert weights @ means == pytest.approx(sample.mean(), rel=1e-9)
    assert 2 * weights @ means**2 - (weights @ means) ** 2 == pytest.approx(sample.var(ddof=1), rel=1e-9)
    assert 6 * weights @ means**3 == pytest.approx(np.mean(sample**3), rel=1e-6)
    _close(law.weights, truth.weights, 0.1)
    _close(law.rates, truth.rates, 0.15)
    # Coefficient of variation <= 1 (beta = 0): the exponential of the sample mean.
    light = _sample(Gamma(4.0, 1.0))
    assert hyperexponential_moments(light) == HyperExponential((1.0,), (1 / light.mean(),))
    # Third moment below what two branches allow: raised to that bound (formula 30), law stays valid.
    two_point = np.array([1.0] * 900 + [30.0] * 100)
    clamped = hyperexponential_moments(two_point)
    clamped.check("law")
    assert np.array(clamped.weights) @ (1 / np.array(clamped.rates)) == pytest.approx(two_point.mean())


def test_scores_and_selection():
    sample = _sample(Gamma(0.6, 2000.0), size=20_000)
    fits = {f.method: f for f in fit_all(sample, ["exponential", "gamma-ml", "lognormal-ml"])}
    gamma = fits["gamma-ml"]
    assert gamma.loglik == pytest.approx(stats.gamma(gamma.law.shape, scale=gamma.law.scale).logpdf(sample).sum())
    assert gamma.aic == pytest.approx(4 - 2 * gamma.loglik)
    assert gamma.ks == pytest.approx(
        stats.kstest(sample, stats.gamma(gamma.law.shape, scale=gamma.law.scale).cdf).statistic
    )
    assert best_fit(fits.values(), "aic").method == "gamma-ml"
    assert best_fit(fits.values(), "ks").method == "gamma-ml"
    assert gamma.ks < 0.01 < fits["exponential"].ks and gamma.seconds >= 0
    made_up = [
        LawFit("a", gamma.law, 0.2, -5.0, 14.0, 0.0),
        LawFit("b", gamma.law, 0.1, -9.0, 20.0, 0.0),
        LawFit("c", None, np.inf, -np.inf, np.inf, 0.0, "n/a"),
    ]
    assert best_fit(made_up, "ks").method == "b" and best_fit(made_up, "aic").method == "a"
    with pytest.raises(ValueError, match="unknown fitting method"):
        fit_all(sample, ["weibull"])
    with pytest.raises(ValueError, match="all > 0"):
        fit_all(np.array([1.0, 0.0, 2.0]))


@pytest.mark.parametrize("rate", [0.5, 3.0, 6.0, 20.0])
def test_priority_rate_by_maximum_likelihood(rate):
    priorities = draw_priorities(np.full(SIZE, rate), np.random.default_rng(8))
    fit = fit_priority_rate(priorities)
    # An exponential family: the Fisher information of the rate is n Var(priority).
    standard_error = 1.0 / np.sqrt(SIZE * stats.truncexpon(rate, scale=1 / rate).var())
    assert abs(fit.rate - rate) < 5 * standard_error + 1e-3
    assert not fit.note

    # It is the maximum: a nearby rate has a lower likelihood.
    def loglik(r):
        return stats.truncexpon(r, scale=1 / r).logpdf(priorities).sum()

    assert loglik(fit.rate) > max(loglik(fit.rate * 1.02), loglik(fit.rate / 1.02))


def test_priorities_rising_in_density_get_the_boundary_rate_and_a_note():
    fit = fit_priority_rate(np.array([0.75, 0.8, 0.9, 1.0]))
    assert fit.rate == 1e-3 and "out of reach" in fit.note and fit.mean == pytest.approx(0.8625)


def test_no_method_applies_to_a_sample_of_equal_values():
    fits = fit_all(np.full(50, 7.0))
    assert all(fit.law is None and fit.note == "all values equal 7: no continuous law describes them" for fit in fits)
