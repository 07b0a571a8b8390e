"""Non-stationary arrivals: time rescaling by a periodic profile, and its recovery by the fitter."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from batsim_google.errors import ParameterError
from batsim_google.fitting.profile import fit_arrival_profile, profile_period, time_in_bins
from batsim_google.generation.generator import generate
from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.laws import Exponential, LogNormal
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import TaskClass, WorkloadModel, model_from_mapping
from batsim_google.units import DAY, HALF_HOUR, WEEK


def _daily_rates() -> np.ndarray:
    hours = (np.arange(48) + 0.5) / 2
    rates = 1.0 + 0.6 * np.sin(2 * np.pi * hours / 24)
    rates[[6, 7]] = 0.0  # no arrivals at all from 3:00 to 4:00
    return rates


def _subtimes(profile: ArrivalProfile, mean_gap: float, tasks: int, seed: int) -> np.ndarray:
    model = WorkloadModel(
        dynamism=None,
        classes=(TaskClass("c", "task", 1.0, None, None, 2.0, makespan=LogNormal(1.0, 1.0)),),
        interarrival=Exponential(1.0 / mean_gap),
        arrival_profile=profile,
    )
    batches = generate(model, load_request_law(), np.random.default_rng(seed), tasks=tasks)
    return np.concatenate([b.subtime for b in batches])


def test_rescaling_is_inverted_and_keeps_periods():
    profile = ArrivalProfile.normalized(DAY, _daily_rates())
    t = np.random.default_rng(0).uniform(-3 * DAY, 10 * DAY, 10_000)
    bins = (np.mod(t, DAY) // profile.bin_width).astype(int)
    live = np.asarray(profile.rates)[bins] > 0
    np.testing.assert_allclose(profile.to_real_time(profile.to_normalized_time(t))[live], t[live], rtol=0, atol=1e-6)
    # Whole periods of real time are whole periods of normalized time (the mean rate is 1).
    np.testing.assert_allclose(profile.to_normalized_time(np.array([DAY, 5 * DAY])), [DAY, 5 * DAY])
    # A bin of rate 2 runs normalized time twice as fast.
    double = np.flatnonzero(np.isclose(profile.rates, max(profile.rates)))[0] * profile.bin_width
    assert profile.to_normalized_time(double + 10.0) - profile.to_normalized_time(double) == pytest.approx(
        10.0 * max(profile.rates)
    )


@pytest.mark.parametrize(
    ("period", "rates", "days", "tolerance"),
    [
        (DAY, _daily_rates(), 20, 0.06),
        (
            WEEK,
            1.0 + 0.5 * np.sin(np.arange(336) * 2 * np.pi / 336) * np.cos(np.arange(336) * 2 * np.pi / 48),
            28,
            0.16,
        ),
    ],
)
def test_a_stream_generated_with_a_profile_gives_it_back(period, rates, days, tolerance):
    profile = ArrivalProfile.normalized(period, rates)
    mean_gap = days * DAY / 400_000
    subtimes = _subtimes(profile, mean_gap, 400_000, seed=4)
    assert subtimes[-1] == pytest.approx(days * DAY, rel=0.02)
    fitted = fit_arrival_profile(subtimes, period)
    assert fitted.covered_bins == len(rates)
    expected, found = np.asarray(profile.rates), np.asarray(fitted.profile.rates)
    # Relative error per bin within ~5 Poisson standard errors of the bin's count.
    assert np.all(np.abs(found - expected) <= tolerance * np.maximum(expected, 0.2))
    assert np.all(found[expected == 0] == 0)
    # The fitter is not just returning something flat: a stationary stream gives ~1 everywhere.
    flat = fit_arrival_profile(np.cumsum(np.random.default_rng(1).exponential(mean_gap, 400_000)), period)
    assert np.max(np.abs(np.asarray(flat.profile.rates) - 1)) < tolerance
    assert np.max(np.abs(expected - 1)) > 3 * tolerance
    # In normalized time the stream is stationary: exponential gaps of the drawn mean.
    gaps = np.diff(profile.to_normalized_time(subtimes))
    assert stats.kstest(gaps, stats.expon(scale=mean_gap).cdf).pvalue > 0.001


def test_partial_coverage_and_period_choice():
    # Observed 1.5 days: the first 12 hours of the day are seen twice, the others once.
    exposure = time_in_bins(1.5 * DAY, DAY, 48) - time_in_bins(0.0, DAY, 48)
    assert exposure[:24].tolist() == [2 * HALF_HOUR] * 24 and exposure[24:].tolist() == [HALF_HOUR] * 24
    hours_only = fit_arrival_profile(np.linspace(0, 4 * 3600, 1000), DAY)
    assert hours_only.covered_bins == 8 and np.allclose(hours_only.profile.rates, 1.0, rtol=0.01)
    assert profile_period("auto", 4 * 3600) is None
    assert profile_period("auto", 2 * DAY) == DAY and profile_period("auto", 30 * DAY) == WEEK
    assert profile_period("daily", 60.0) == DAY and profile_period("none", 30 * DAY) is None


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({"period": 0, "rates": [1, 2]}, r"arrival_profile\.period must be > 0"),
        ({"period": 10, "rates": [1, -2]}, r"arrival_profile\.rates\[1\] must be >= 0"),
        ({"period": 10, "rates": [0, 0]}, r"arrival_profile\.rates must not all be 0"),
        ({"period": 10, "rates": []}, r"arrival_profile\.rates must be a non-empty list"),
        ({"period": 10, "rate": [1]}, r"unknown key\(s\) in arrival_profile: rate"),
    ],
)
def test_invalid_profiles_are_named(profile, message):
    data = {
        "dynamism": 1.0,
        "arrival_profile": profile,
        "classes": [{"frequency": 1, "mass": 5, "disparity": 2, "lambda": 1}],
    }
    with pytest.raises(ParameterError, match=message):
        model_from_mapping(data)
