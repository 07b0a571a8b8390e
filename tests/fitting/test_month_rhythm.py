"""The month's rhythm: job arrivals by hour of the week, fitted from the month and generated."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED_DATA

from batsim_google.fitting.month_rhythm import job_submissions, mean_rate, weekly_hourly, weekly_job_profile
from batsim_google.generation.generator import generate
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.units import HOUR, WEEK

MONTH = SHARED_DATA / "google-2011-month"
#: The span of the task_events parts 00000-00002 the preset is fitted on (s).
PARTS_SPAN = 15_031.0


@pytest.fixture(scope="module")
def month() -> np.ndarray:
    if not (MONTH / "job_events").is_dir():
        pytest.skip(f"the month of job_events is not at {MONTH}")
    account = RowAccount()
    submissions = job_submissions([MONTH], account)
    assert account.balanced and account.read == 2_012_242
    return submissions


def _mae(profile: np.ndarray, reference: np.ndarray) -> float:
    """Mean absolute error of an hourly profile against the reference's, over the reference's mean."""
    return float(np.mean(np.abs(profile - reference)) / reference.mean())


def test_the_months_submissions(month):
    assert len(month) == 668_089 and month.max() < 29 * 86_400
    profile = weekly_job_profile(month)
    assert profile.covered_bins == 336 and np.mean(profile.profile.rates) == pytest.approx(1.0)
    hourly = weekly_hourly(month)
    assert hourly.mean() == pytest.approx(len(month) / (month.max() - month.min()) * HOUR, rel=0.01)
    assert mean_rate(profile) * HOUR == pytest.approx(hourly.mean(), rel=1e-3)


def test_the_presets_job_rate_is_the_months(month):
    """The level: the preset's mean job rate is the month's, not the parts' quiet 4 hours'."""
    jobs = preset("google-2011-cell").jobs
    per_hour = HOUR / (jobs.interarrival.mean() * (1.0 - jobs.simultaneous))
    assert per_hour == pytest.approx(weekly_hourly(month).mean(), rel=0.01)
    in_the_parts = np.count_nonzero(month < PARTS_SPAN) / PARTS_SPAN * HOUR
    assert in_the_parts < 0.8 * per_hour


def test_a_generated_week_follows_the_months_rhythm(month):
    """Hourly job arrivals of a week of the preset against the month's mean week, in numbers of
    jobs: within 15 % MAE; the same week at the parts' level, or a flat rate at the month's, is not."""
    reference = weekly_hourly(month)
    starts, last = [], -1
    for batch in generate(preset("google-2011-cell"), load_request_law(), np.random.default_rng(1), duration=WEEK):
        new = np.concatenate([[batch.job[0] != last], np.diff(batch.job) != 0])
        starts.append(batch.subtime[new])
        last = batch.job[-1]
    hourly = np.bincount((np.concatenate(starts) // HOUR).astype(np.int64), minlength=168)[:168].astype(float)
    assert _mae(hourly, reference) < 0.15
    parts_level = np.count_nonzero(month < PARTS_SPAN) / PARTS_SPAN * HOUR / reference.mean()
    assert _mae(hourly * parts_level, reference) > 0.15
    assert _mae(np.full(168, reference.mean()), reference) > 0.15
