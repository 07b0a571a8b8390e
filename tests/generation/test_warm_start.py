"""The warm start: the tasks running at time 0 in a model's stationary state."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from batsim_google.errors import ParameterError
from batsim_google.generation.warm_start import class_rates, residual_lives, warm_start
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.laws import Empirical, Exponential, LogNormal, Pareto
from batsim_google.model.presets import PRESETS
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import TaskClass, WorkloadModel
from batsim_google.parameters import MAX_TIME_S


def _google() -> WorkloadModel:
    preset = PRESETS["google"]
    return preset() if callable(preset) else preset


def lognormal_residual_cdf(x, mu, sigma):
    """Closed form: F_e(x) = [x (1 - Phi(z)) + m Phi(z - sigma)] / m, z = (ln x - mu) / sigma."""
    mean = math.exp(mu + sigma**2 / 2)
    z = (np.log(x) - mu) / sigma
    return (x * stats.norm.sf(z) + mean * stats.norm.cdf(z - sigma)) / mean


@pytest.mark.parametrize("sigma", [0.5, 1.5, 2.5])
def test_residual_lives_follow_the_equilibrium_law(sigma):
    law = LogNormal(6.0, sigma)
    drawn = residual_lives(law, 20_000, np.random.default_rng(4))
    assert stats.kstest(drawn, lambda x: lognormal_residual_cdf(x, 6.0, sigma)).pvalue > 0.01
    # the makespans themselves (no length bias) fail the same test
    plain = law.sample(20_000, np.random.default_rng(4))
    assert stats.kstest(plain, lambda x: lognormal_residual_cdf(x, 6.0, sigma)).pvalue < 1e-6


def test_an_exponential_makespan_leaves_an_exponential_residual_life():
    drawn = residual_lives(Exponential(1 / 300), 20_000, np.random.default_rng(2))
    assert stats.kstest(drawn, "expon", args=(0, 300)).pvalue > 0.01


def test_residual_lives_beyond_the_longest_time_are_cut_to_it():
    """The google-2011-cell residents' law (sigma 3.8): some residual lives exceed 2^42 s."""
    law = LogNormal(1.34, 3.835)
    drawn = residual_lives(law, 20_000, np.random.default_rng(5))
    assert drawn.max() == MAX_TIME_S and 0 < np.count_nonzero(drawn == MAX_TIME_S) < 20
    assert stats.kstest(drawn, lambda x: lognormal_residual_cdf(x, 1.34, 3.835)).pvalue > 0.01


def test_a_law_without_a_finite_mean_has_no_stationary_state():
    with pytest.raises(ParameterError, match="without a finite mean"):
        residual_lives(Pareto(1.0, 10.0), 10, np.random.default_rng(0))


def test_warm_tasks_per_class_are_the_arrival_rate_times_the_mean_lifetime():
    model = _google()
    requests = load_request_law()
    scale = 12583 / 512
    expected = [rate * c.makespan_law().mean() for rate, c in zip(class_rates(model, scale), model.classes)]
    assert sum(expected) == pytest.approx(20 / scale * (0.7 * 1700 + 0.3 * 8000))
    counts = np.array(
        [
            np.bincount(warm_start(model, requests, np.random.default_rng(seed), scale).class_index, minlength=2)
            for seed in range(40)
        ]
    )
    for index, mean in enumerate(expected):
        # Poisson: the mean within 4 standard errors, the variance of the counts near the mean
        assert abs(counts[:, index].mean() - mean) < 4 * math.sqrt(mean / len(counts))
        assert 0.5 < counts[:, index].var() / mean < 1.7
    batch = warm_start(model, requests, np.random.default_rng(0), scale)
    assert np.all(batch.subtime == 0) and np.array_equal(batch.id, np.arange(len(batch)))
    assert np.all((batch.priority > 0) & (batch.priority <= 1)) and np.all(batch.cpu >= 0)


def test_a_steady_state_no_cell_could_hold_is_refused_before_it_is_drawn():
    # services of a mean lifetime of 3 years at the Google cell's rate: 400 M tasks running
    model = WorkloadModel(1 / 4.0, (TaskClass("service", "service", 1.0, 1e8, 5.0, 1.0),), name="eternal")
    with pytest.raises(ParameterError, match=r"a warm start of 400,000,000 tasks on 12,583 machines .*'service'"):
        warm_start(model, load_request_law(), np.random.default_rng(0), nb_res=12583)
    assert len(warm_start(model, load_request_law(), np.random.default_rng(0), 1e4, nb_res=12583)) > 2000


def test_a_model_with_widths_is_refused():
    model = WorkloadModel(
        1.0, (TaskClass("t", "task", 1.0, 100.0, 2.0, 1.0, width=Empirical((1.0, 2.0), (0.5, 0.5))),), name="wide"
    )
    with pytest.raises(ParameterError, match="without widths"):
        warm_start(model, load_request_law(), np.random.default_rng(0))


def test_the_tasks_after_a_warm_start_are_those_of_the_same_seed_without_it(tmp_path):
    model, requests = _google(), load_request_law()
    for name, warm in (("cold", False), ("warm", True)):
        write_generated_workload(
            tmp_path / f"{name}.json", model, requests, 3, Generation(tasks=500, nb_res=64, warm=warm)
        )
    cold = json.loads((tmp_path / "cold.json").read_text())
    warm = json.loads((tmp_path / "warm.json").read_text())
    initial = [job for job in warm["jobs"] if job.get("initial") == "running"]
    assert len(initial) > 1000 and all(job["subtime"] == 0 for job in initial)
    after = warm["jobs"][len(initial) :]
    assert [job["id"] for job in warm["jobs"]] == list(range(len(warm["jobs"])))
    fields = ("subtime", "class", "priority", "cpu", "memory")
    assert [[job[f] for f in fields] for job in after] == [[job[f] for f in fields] for job in cold["jobs"]]
    assert warm["meta"]["warm_start"] is True and "warm_start" not in cold["meta"]


@pytest.mark.parametrize("profiled", [False, True])
def test_with_job_level_arrivals_the_class_rates_are_those_the_generator_submits(profiled):
    """Also with sizes by bin (job_models.profiled_job_model): over whole days, the mean size
    weighted by the job rate."""
    from job_models import job_model, profiled_job_model

    from batsim_google.generation.generator import generate

    model, duration = (profiled_job_model(), 172_800.0) if profiled else (job_model(), 200_000.0)
    batches = list(generate(model, load_request_law(), np.random.default_rng(8), duration=duration))
    counts = np.bincount(np.concatenate([b.class_index for b in batches]), minlength=2)
    # jobs of up to 40 tasks: the counts vary by whole jobs, hence a few percent
    assert counts / duration == pytest.approx(class_rates(model), rel=0.05)
