"""Job sizes tilted by bin: the tilt reaches its target mean, and the law itself without a profile."""

from __future__ import annotations

import numpy as np
import pytest
from job_models import JOBS, profiled_job_model

from batsim_google.model.job_sizes import THETA_BOUND, JobSizes, size_factors, tilted_weights
from batsim_google.model.laws import Empirical

SIZES = Empirical((1.0, 3.0, 40.0), (0.6, 0.3, 0.1))


def test_no_tilt_is_the_law_and_a_positive_tilt_moves_weight_to_large_jobs():
    assert np.allclose(tilted_weights(SIZES, 0.0), SIZES.weights)
    tilted = tilted_weights(SIZES, 1.0)
    assert np.allclose(tilted, np.array([0.6, 0.9, 4.0]) / 5.5)  # weight * k, normalized
    assert tilted_weights(SIZES, THETA_BOUND)[-1] == pytest.approx(1.0)


def test_each_bin_reaches_its_mean_and_unreachable_factors_take_the_nearest_tilt():
    model = profiled_job_model()
    sizes = JobSizes.of(model.jobs, model.arrival_profile)
    factors = size_factors(model.arrival_profile, model.jobs.profile)
    assert factors[0] == pytest.approx(1.5) and factors[-1] == pytest.approx(0.5)
    laws = [c.tasks for c in JOBS.classes]
    frequencies = [c.frequency for c in JOBS.classes]
    for weights, factor in zip(sizes.weights, factors, strict=True):
        mean = sum(f * np.dot(law.values, w) for f, law, w in zip(frequencies, laws, weights, strict=True))
        assert mean == pytest.approx(factor * JOBS.mean_tasks(), rel=1e-9)
    far = JobSizes.of(
        model.jobs, type(model.arrival_profile).normalized(86_400.0, [1000.0] + [1.0] * 47)
    )  # 48 times the mean: more than jobs of 40 and 8 tasks can give
    assert np.allclose(far.weights[0][0], tilted_weights(laws[0], THETA_BOUND))


def test_without_a_job_profile_sizes_are_the_class_laws_as_drawn_before():
    sizes = JobSizes.of(JOBS, None)
    job_class = np.repeat([0, 1], 5_000)
    drawn = sizes.draw(job_class, np.zeros(len(job_class)), np.random.default_rng(3))
    expected = Empirical.draw([c.tasks for c in JOBS.classes], job_class, np.random.default_rng(3))
    assert np.array_equal(drawn, expected.astype(np.int64))
