"""The month's rhythm: job arrivals by hour of the week, fitted from the month and generated."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED_DATA

from batsim_google.fitting.month_rhythm import job_submissions, weekly_hourly, weekly_job_profile
from batsim_google.generation.generator import generate
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.units import HOUR, WEEK

MONTH = SHARED_DATA / "google-2011-month"


@pytest.fixture(scope="module")
def month() -> np.ndarray:
    if not (MONTH / "job_events").is_dir():
        pytest.skip(f"the month of job_events is not at {MONTH}")
    account = RowAccount()
    submissions = job_submissions([MONTH], account)
    assert account.balanced and account.read == 2_012_242
    return submissions


def _relative_mae(profile: np.ndarray, reference: np.ndarray) -> float:
    """Mean absolute error of two hourly profiles, each over its own mean (their shapes)."""
    return float(np.mean(np.abs(profile / profile.mean() - reference / reference.mean())))


def test_the_months_submissions(month):
    assert len(month) == 668_089 and month.max() < 29 * 86_400
    profile = weekly_job_profile(month)
    assert profile.covered_bins == 336 and np.mean(profile.profile.rates) == pytest.approx(1.0)
    hourly = weekly_hourly(month)
    assert hourly.mean() == pytest.approx(len(month) / (month.max() - month.min()) * HOUR, rel=0.01)


def test_a_generated_week_follows_the_months_rhythm(month):
    """Hourly job arrivals of a week of the preset against the month's mean week: within 15 % MAE
    (shapes: the preset keeps the parts' job rate, see docs/model-files.md); a flat rate is not."""
    reference = weekly_hourly(month)
    starts, last = [], -1
    for batch in generate(preset("google-2011-cell"), load_request_law(), np.random.default_rng(1), duration=WEEK):
        new = np.concatenate([[batch.job[0] != last], np.diff(batch.job) != 0])
        starts.append(batch.subtime[new])
        last = batch.job[-1]
    hourly = np.bincount((np.concatenate(starts) // HOUR).astype(np.int64), minlength=168)[:168].astype(float)
    assert _relative_mae(hourly, reference) < 0.15
    assert _relative_mae(np.ones(168), reference) > 0.15
