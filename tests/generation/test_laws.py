"""Statistical tests of the generated workload against the exact laws of the model paper.

Fixed seeds, >= 100k draws. Tolerances are a few standard errors computed from the laws
themselves, so a law with the wrong parameters fails them (each test also checks that).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from batsim_google.generation.generator import generate
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import TaskClass, WorkloadModel

DRAWS = 200_000
ALPHA = 0.001


def _tasks(model: WorkloadModel, seed: int = 1, tasks: int = DRAWS) -> dict[str, np.ndarray]:
    batches = list(generate(model, load_request_law(), np.random.default_rng(seed), tasks=tasks))
    return {
        name: np.concatenate([getattr(b, name) for b in batches])
        for name in ("subtime", "class_index", "makespan", "priority", "cpu", "memory")
    }


@pytest.fixture(scope="module")
def google_sample():
    return preset("google"), _tasks(preset("google"))


def paper_lognormal(mass: float, disparity: float):
    """The paper's listing: mu = ln(mass/disparity), sigma = sqrt(2 (ln mass - mu))."""
    mu = np.log(mass / disparity)
    return stats.lognorm(np.sqrt(2 * (np.log(mass) - mu)), scale=np.exp(mu))


def test_interarrivals_follow_the_papers_scaled_pareto(google_sample):
    model, tasks = google_sample
    gaps = np.diff(np.concatenate([[0.0], tasks["subtime"]]))
    # The paper draws pareto.rvs(4, loc=-1) * 3 * dynamism.
    exact = stats.pareto(4, loc=-3 * model.dynamism, scale=3 * model.dynamism)
    assert stats.kstest(gaps, exact.cdf).pvalue > ALPHA
    wrong = stats.pareto(4, loc=-model.dynamism, scale=model.dynamism)  # no factor 3
    assert stats.kstest(gaps, wrong.cdf).pvalue < 1e-9
    standard_error = exact.std() / np.sqrt(len(gaps))
    assert abs(gaps.mean() - model.dynamism) < 4 * standard_error
    assert abs(exact.mean() - model.dynamism) < 1e-12


def test_classes_come_with_their_frequencies(google_sample):
    model, tasks = google_sample
    for index, task_class in enumerate(model.classes):
        share = np.mean(tasks["class_index"] == index)
        p = task_class.frequency
        assert abs(share - p) < 4 * np.sqrt(p * (1 - p) / DRAWS)


@pytest.mark.parametrize("index", [0, 1])
def test_makespans_are_lognormal_with_mass_and_disparity(google_sample, index):
    model, tasks = google_sample
    task_class = model.classes[index]
    makespans = tasks["makespan"][tasks["class_index"] == index]
    assert len(makespans) > 50_000
    exact = paper_lognormal(task_class.mass, task_class.disparity)
    assert stats.kstest(makespans, exact.cdf).pvalue > ALPHA
    # mean = mass within 4 standard errors of the law; median = mass / disparity within 2 %.
    assert abs(makespans.mean() - task_class.mass) < 4 * exact.std() / np.sqrt(len(makespans))
    assert np.median(makespans) == pytest.approx(task_class.mass / task_class.disparity, rel=0.02)
    # A law with sigma^2 = ln(disparity) instead of 2 ln(disparity) is rejected.
    wrong = stats.lognorm(np.sqrt(np.log(task_class.disparity)), scale=exact.median())
    assert stats.kstest(makespans, wrong.cdf).pvalue < 1e-9


@pytest.mark.parametrize("index", [0, 1])
def test_priorities_are_truncated_exponentials_in_unit_interval(google_sample, index):
    model, tasks = google_sample
    rate = model.classes[index].priority_rate
    priorities = tasks["priority"][tasks["class_index"] == index]
    assert np.all(priorities > 0) and np.all(priorities <= 1)

    def truncated_cdf(rate):  # exponential of this rate conditioned on <= 1
        return lambda x: (1 - np.exp(-rate * x)) / (1 - np.exp(-rate))

    assert stats.kstest(priorities, truncated_cdf(rate)).pvalue > ALPHA
    assert stats.kstest(priorities, truncated_cdf(1.1 * rate)).pvalue < 1e-9


def test_any_number_of_classes():
    classes = tuple(
        TaskClass(f"c{i}", "task", 0.25, mass, 2.0 + i, 1.0 + i)
        for i, mass in enumerate([10.0, 100.0, 1000.0, 10000.0])
    )
    model = WorkloadModel(dynamism=2.0, classes=classes)
    tasks = _tasks(model, seed=7, tasks=120_000)
    for index, task_class in enumerate(classes):
        makespans = tasks["makespan"][tasks["class_index"] == index]
        exact = paper_lognormal(task_class.mass, task_class.disparity)
        assert stats.kstest(makespans, exact.cdf).pvalue > ALPHA
    assert np.diff(tasks["subtime"]).mean() == pytest.approx(2.0, rel=0.02)


def test_requests_follow_the_law_of_their_kind(google_sample):
    model, tasks = google_sample
    law = load_request_law()
    for index, task_class in enumerate(model.classes):
        members = tasks["class_index"] == index
        empirical = law.for_kind(task_class.kind)
        expected_mean = np.average(empirical.cpu, weights=empirical.count)
        spread = np.sqrt(np.average((empirical.cpu - expected_mean) ** 2, weights=empirical.count))
        drawn = tasks["cpu"][members]
        assert abs(drawn.mean() - expected_mean) < 4 * spread / np.sqrt(len(drawn))
        observed = set(zip(empirical.cpu.tolist(), empirical.memory.tolist()))
        assert set(zip(drawn[:1000].tolist(), tasks["memory"][members][:1000].tolist())) <= observed
