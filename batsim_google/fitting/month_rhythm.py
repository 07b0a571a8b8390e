"""The month's rhythm: job arrivals by half-hour of the week, from a long job_events input.

The trace's month of job_events (500 parts, about 29 days) is read part by part and only the times
of the SUBMIT rows are kept (4 million rows of the month hold some 670,000 submissions: 5 MB
of times), then the weekly profile is fitted as any arrival profile (:mod:`.profile`: half-hour
bins, counts over the time each bin was observed, mean 1). A job resubmitted counts each time: a
scheduler sees it arrive again.

:func:`weekly_hourly` gives the profile the rhythm test compares with: the mean number of
submissions in each hour of the week over the weeks the input covers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.fitting.profile import ProfileFit, fit_arrival_profile, time_in_bins
from batsim_google.trace.reader import read_batches
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent, seconds
from batsim_google.units import HOUR, WEEK


def job_submissions(sources: Iterable[str | Path], account: RowAccount) -> np.ndarray:
    """Times (s from the window start, finite, sorted) of every job SUBMIT row in ``sources``."""
    times = []
    for _, batch in read_batches(sources, "job_events", account=account):
        submits = pl.from_arrow(batch).filter(pl.col("event_type") == int(TaskEvent.SUBMIT))
        account.used += submits.height
        account.skip("not a SUBMIT row", batch.num_rows - submits.height)
        stamped = seconds(submits["time"].to_numpy())
        times.append(stamped[np.isfinite(stamped)])
    return np.sort(np.concatenate(times)) if times else np.empty(0)


def weekly_job_profile(submissions: np.ndarray) -> ProfileFit:
    """The weekly profile of job arrivals (half-hour bins, mean 1)."""
    return fit_arrival_profile(submissions, WEEK)


def weekly_hourly(submissions: np.ndarray) -> np.ndarray:
    """Mean submissions in each of the week's 168 hours, over the time each hour was observed."""
    hours = int(WEEK // HOUR)
    exposure = time_in_bins(float(submissions.max()), WEEK, hours) - time_in_bins(float(submissions.min()), WEEK, hours)
    counts = np.bincount((np.mod(submissions, WEEK) // HOUR).astype(np.int64), minlength=hours)[:hours]
    return counts / np.maximum(exposure, 1e-9) * HOUR


def mean_rate(fit: ProfileFit) -> float:
    """Arrivals per second at the profile's mean: the mean of the observed bins' rates (count over
    the time the bin was observed), the level the normalized profile multiplies."""
    observed = fit.exposure > 0
    return float(np.mean(fit.counts[observed] / fit.exposure[observed]))
