"""The laws a model can select: model-file syntax, validation, and the generator's draws.

Statistical tests draw >= 100k values through the generator with fixed seeds and compare them with
the exact law, written here independently of :mod:`batsim_google.model.laws` (closed forms or
scipy called directly); each also checks that a slightly wrong law is rejected.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import special, stats

from batsim_google.errors import ParameterError
from batsim_google.generation.generator import generate
from batsim_google.model.laws import (
    Exponential,
    Gamma,
    HyperExponential,
    HyperGamma,
    LogNormal,
    Lomax,
    Pareto,
    law_from_mapping,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import TaskClass, WorkloadModel, load_model, model_from_mapping, save_model

DRAWS = 150_000
ALPHA = 0.001


def _draw(model: WorkloadModel, seed: int, tasks: int = DRAWS) -> dict[str, np.ndarray]:
    batches = list(generate(model, load_request_law(), np.random.default_rng(seed), tasks=tasks))
    return {
        name: np.concatenate([getattr(b, name) for b in batches]) for name in ("subtime", "class_index", "makespan")
    }


def _one_class(law, interarrival=None) -> WorkloadModel:
    return WorkloadModel(
        dynamism=None if interarrival else 1.0,
        classes=(TaskClass("c", "task", 1.0, None, None, 2.0, makespan=law),),
        interarrival=interarrival,
    )


def _hyperexponential_cdf(weights, rates):
    return lambda x: 1.0 - sum(w * np.exp(-r * x) for w, r in zip(weights, rates))


def _hypergamma_cdf(weights, shapes, scales):
    return lambda x: sum(w * special.gammainc(k, x / s) for w, k, s in zip(weights, shapes, scales))


# (law, exact cdf, a wrong cdf that must be rejected)
CASES = {
    "lognormal": (
        LogNormal(5.0, 1.5),
        stats.lognorm(1.5, scale=np.exp(5.0)).cdf,
        stats.lognorm(1.5, scale=np.exp(5.03)).cdf,
    ),
    "pareto": (Pareto(1.5, 10.0), lambda x: 1 - (10.0 / x) ** 1.5, lambda x: 1 - (10.0 / x) ** 1.55),
    "lomax": (Lomax(2.5, 100.0), lambda x: 1 - (1 + x / 100.0) ** -2.5, lambda x: 1 - (1 + x / 100.0) ** -2.6),
    "exponential": (Exponential(0.01), lambda x: 1 - np.exp(-0.01 * x), lambda x: 1 - np.exp(-0.0102 * x)),
    "gamma": (
        Gamma(0.6, 2000.0),
        lambda x: special.gammainc(0.6, x / 2000.0),
        lambda x: special.gammainc(0.62, x / 2000.0),
    ),
    "hyperexponential": (
        HyperExponential((0.7, 0.2, 0.1), (0.1, 0.01, 0.0005)),
        _hyperexponential_cdf((0.7, 0.2, 0.1), (0.1, 0.01, 0.0005)),
        _hyperexponential_cdf((0.68, 0.22, 0.1), (0.1, 0.01, 0.0005)),
    ),
    "hypergamma": (
        HyperGamma((0.3, 0.7), (0.5, 3.0), (10.0, 1000.0)),
        _hypergamma_cdf((0.3, 0.7), (0.5, 3.0), (10.0, 1000.0)),
        _hypergamma_cdf((0.3, 0.7), (0.5, 3.1), (10.0, 1000.0)),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_generator_draws_makespans_from_the_selected_law(name):
    law, exact, wrong = CASES[name]
    makespans = _draw(_one_class(law), seed=11)["makespan"]
    assert stats.kstest(makespans, exact).pvalue > ALPHA
    assert stats.kstest(makespans, wrong).pvalue < 1e-6
    # The law's own distribution function is the exact one.
    grid = np.quantile(makespans, np.linspace(0.01, 0.99, 25))
    np.testing.assert_allclose(law.cdf(grid), exact(grid), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["lomax", "gamma", "hyperexponential", "hypergamma"])
def test_generator_draws_interarrivals_from_the_selected_law(name):
    law, exact, wrong = CASES[name]
    gaps = np.diff(np.concatenate([[0.0], _draw(_one_class(LogNormal(1.0, 1.0), interarrival=law), seed=5)["subtime"]]))
    assert stats.kstest(gaps, exact).pvalue > ALPHA
    assert stats.kstest(gaps, wrong).pvalue < 1e-6


def test_classes_with_different_laws_and_branch_counts_draw_each_their_own():
    two = HyperExponential((0.5, 0.5), (1.0, 0.01))
    three, three_cdf, _ = CASES["hyperexponential"]
    gamma, gamma_cdf, _ = CASES["gamma"]
    model = WorkloadModel(
        dynamism=1.0,
        classes=(
            TaskClass("two", "task", 0.3, None, None, 2.0, makespan=two),
            TaskClass("paper", "task", 0.2, 1700.0, 3.8, 6.0),
            TaskClass("three", "service", 0.3, None, None, 2.0, makespan=three),
            TaskClass("gamma", "task", 0.2, None, None, 2.0, makespan=gamma),
        ),
    )
    tasks = _draw(model, seed=3, tasks=400_000)
    exact = [
        _hyperexponential_cdf((0.5, 0.5), (1.0, 0.01)),
        stats.lognorm(np.sqrt(2 * np.log(3.8)), scale=1700 / 3.8).cdf,
        three_cdf,
        gamma_cdf,
    ]
    for index, cdf in enumerate(exact):
        makespans = tasks["makespan"][tasks["class_index"] == index]
        assert len(makespans) > 70_000
        assert stats.kstest(makespans, cdf).pvalue > ALPHA
    # The 2-branch class never draws its padded third branch: a mean of its own.
    first = tasks["makespan"][tasks["class_index"] == 0]
    assert abs(first.mean() - two.mean()) < 4 * np.sqrt(first.var() / len(first))


def test_law_tables_in_model_files_round_trip(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        'name = "fitted"\n'
        'interarrival = {law = "hyperexponential", weights = [0.9, 0.1], rates = [50.0, 2.0]}\n'
        "arrival_profile = {period = 86400, rates = [1, 3]}\n"
        '[[classes]]\nname = "a"\nfrequency = 0.5\nlambda = 4\n'
        'makespan = {law = "gamma", shape = 0.6, scale = 2000}\n'
        '[[classes]]\nname = "b"\nkind = "service"\nfrequency = 0.5\nmass = 8000\ndisparity = 24\nlambda = 3\n'
    )
    model = load_model(path)
    assert model.dynamism is None and model.interarrival == HyperExponential((0.9, 0.1), (50.0, 2.0))
    assert model.arrival_profile.rates == (0.5, 1.5)  # normalized to mean 1
    assert model.classes[0].makespan == Gamma(0.6, 2000.0) and model.classes[0].mass is None
    assert model.classes[1].makespan is None and model.classes[1].mass == 8000.0
    for name in ("copy.toml", "copy.json"):
        save_model(model, tmp_path / name)
        assert load_model(tmp_path / name) == model
    # The paper's model files are written exactly as before (no new keys).
    assert preset("google").to_mapping() == json.loads(json.dumps(preset("google").to_mapping()))
    assert set(preset("google").to_mapping()) == {"dynamism", "classes"}


@pytest.mark.parametrize(
    ("makespan", "message"),
    [
        ({"law": "weibull", "shape": 1}, r"classes\[0\]\.makespan\.law must be one of lognormal, pareto"),
        ({"law": "gamma", "shape": 1}, r"classes\[0\]\.makespan\.scale is missing"),
        ({"law": "gamma", "shape": -1, "scale": 2}, r"classes\[0\]\.makespan\.shape must be > 0"),
        ({"law": "gamma", "shape": 1, "scale": 2, "rate": 3}, r"unknown key\(s\) in classes\[0\]\.makespan: rate"),
        ({"law": "lognormal", "mu": 1, "sigma": 0}, r"classes\[0\]\.makespan\.sigma must be > 0"),
        (
            {"law": "hyperexponential", "weights": [0.5, 0.6], "rates": [1, 2]},
            r"classes\[0\]\.makespan\.weights must sum to 1",
        ),
        (
            {"law": "hyperexponential", "weights": [0.5, 0.5], "rates": [1]},
            r"classes\[0\]\.makespan\.rates must be a list of 2 numbers",
        ),
        (
            {"law": "hyperexponential", "weights": [0.5, 0.5], "rates": [1, 0]},
            r"classes\[0\]\.makespan\.rates\[1\] must be > 0",
        ),
        (
            {"law": "hypergamma", "weights": [1.5, -0.5], "shapes": [1, 1], "scales": [1, 1]},
            r"classes\[0\]\.makespan\.weights\[0\] must be in \[0, 1\]",
        ),
        (
            {"law": "hypergamma", "weights": [1], "shapes": ["x"], "scales": [1]},
            r"classes\[0\]\.makespan\.shapes\[0\] must be a finite number",
        ),
        ("gamma", r"classes\[0\]\.makespan must be a table"),
    ],
)
def test_invalid_laws_are_named(makespan, message):
    data = {"dynamism": 1.0, "classes": [{"frequency": 1.0, "lambda": 2.0, "makespan": makespan}]}
    with pytest.raises(ParameterError, match=message):
        model_from_mapping(data)


def test_a_class_gives_mass_and_disparity_or_a_law_and_arrivals_dynamism_or_a_law():
    law = {"law": "exponential", "rate": 1.0}
    both = {"dynamism": 1.0, "classes": [{"frequency": 1.0, "lambda": 2.0, "mass": 5, "disparity": 2, "makespan": law}]}
    with pytest.raises(ParameterError, match=r"classes\[0\]: give mass and disparity .* or makespan, not both"):
        model_from_mapping(both)
    neither = {"dynamism": 1.0, "classes": [{"frequency": 1.0, "lambda": 2.0}]}
    with pytest.raises(ParameterError, match=r"classes\[0\]\.mass is missing"):
        model_from_mapping(neither)
    arrivals = {"dynamism": 1.0, "interarrival": law, "classes": [{"frequency": 1.0, "lambda": 2.0, "makespan": law}]}
    with pytest.raises(ParameterError, match="give dynamism .* or interarrival, not both"):
        model_from_mapping(arrivals)
    del arrivals["dynamism"]
    assert model_from_mapping(arrivals).interarrival_law() == Exponential(1.0)
    assert law_from_mapping(law, "x").mean() == 1.0


def test_mixture_moments_and_median():
    law = HyperGamma((0.3, 0.7), (0.5, 3.0), (10.0, 1000.0))
    assert law.mean() == pytest.approx(0.3 * 5.0 + 0.7 * 3000.0)
    assert float(law.cdf(law.median())) == pytest.approx(0.5, abs=1e-9)
    assert law.n_parameters == 5 and HyperExponential((0.2, 0.3, 0.5), (1, 2, 3)).n_parameters == 5


SCIPY_LAWS = {
    LogNormal: {"mu": (-2.0, 9.0), "sigma": (0.1, 3.0)},
    Pareto: {"shape": (0.5, 6.0), "scale": (1e-3, 1e3)},
    Lomax: {"shape": (0.5, 6.0), "scale": (1e-3, 1e3)},
    Exponential: {"rate": (1e-4, 10.0)},
    Gamma: {"shape": (0.05, 20.0), "scale": (1e-3, 1e4)},
}


@pytest.mark.parametrize("law", SCIPY_LAWS, ids=lambda law: law.name)
def test_draws_are_scipys_variates_from_the_same_generator(law):
    """The generator draws without scipy.stats; a seed must still give the values scipy's ``rvs``
    gives, bit for bit, with one parameter set per draw."""
    parameters = {
        name: np.random.default_rng(1).uniform(low, high, 20_000) for name, (low, high) in SCIPY_LAWS[law].items()
    }
    expected = law._scipy(**parameters).rvs(random_state=np.random.default_rng(5))
    assert np.array_equal(law._variates(np.random.default_rng(5), 20_000, **parameters), expected)


def test_mixture_branches_and_priorities_are_scipys_variates_from_the_same_generator():
    from batsim_google.model.priority import draw_priorities, priority_law

    rng = np.random.default_rng(2)
    shapes, scales, rates = rng.uniform(0.1, 9, 20_000), rng.uniform(1e-2, 1e3, 20_000), rng.uniform(1e-3, 50, 20_000)
    for law, parameters in ((HyperGamma, {"shapes": shapes, "scales": scales}), (HyperExponential, {"rates": rates})):
        expected = law._branch(**parameters).rvs(random_state=np.random.default_rng(6))
        assert np.array_equal(law._branch_variates(np.random.default_rng(6), 20_000, **parameters), expected)
    expected = np.clip(priority_law(rates).rvs(random_state=np.random.default_rng(7)), np.finfo(float).tiny, 1.0)
    assert np.array_equal(draw_priorities(rates, np.random.default_rng(7)), expected)
