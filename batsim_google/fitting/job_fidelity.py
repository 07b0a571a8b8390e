"""How faithful job-level arrivals are: generated against input, stream and jobs alike.

Two-sample Kolmogorov-Smirnov statistics of the task inter-arrival gaps (simultaneous gaps, under
:data:`~.job_arrivals.SIMULTANEOUS_GAP`, taken as 0 on both sides: the trace's 1-2 us gaps and the
generator's zero gaps are the same instant), of the job inter-arrivals and of the tasks per job;
and the hourly submission rates over the whole hours of the input. The generated rate of an hour
is the mean count over several draws over the input's span: with job sizes this heavy-tailed one
draw's hour varies by about 20 % around it (a single job may bring 2,000 tasks), as the input's own
hours do around theirs, so one draw against the input measures that noise, not the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from batsim_google.fitting.job_arrivals import simultaneous_as_zero
from batsim_google.units import HOUR


@dataclass(frozen=True)
class JobFidelity:
    task_gap_ks: float
    job_gap_ks: float
    tasks_per_job_ks: float
    original_jobs: int
    generated_jobs: int
    #: Tasks submitted per hour over the whole hours the input covers.
    original_hourly: list[float]
    #: Per hour, the mean count over the draws (the model's rate), and one draw's standard deviation.
    generated_hourly: list[float]
    generated_hourly_sd: list[float]
    hourly_draws: int

    @property
    def worst_ks(self) -> float:
        return max(self.task_gap_ks, self.job_gap_ks, self.tasks_per_job_ks)

    @property
    def hourly_spread(self) -> float | None:
        """One draw's standard deviation relative to the mean, over the whole hours (None without one)."""
        total = sum(self.generated_hourly)
        return (
            None
            if not total
            else float(np.sqrt(np.mean(np.square(self.generated_hourly_sd)))) / (total / len(self.generated_hourly))
        )

    def hourly_note(self) -> str:
        """What the generated hourly rates are, for the report and the command's summary."""
        spread = self.hourly_spread
        return f"generated: mean of {self.hourly_draws} draws" + (
            "" if spread is None else f"; one draw's hour varies by {spread:.0%}"
        )

    @property
    def worst_hourly_error(self) -> float | None:
        """The largest relative gap between the hourly rates (None without a whole hour)."""
        if not self.original_hourly:
            return None
        original, generated = np.array(self.original_hourly), np.array(self.generated_hourly)
        seen = original > 0  # an hour without submissions has no relative error
        if not seen.any():
            return None
        return float(np.max(np.abs(generated[seen] - original[seen]) / original[seen]))


def _jobs(subtime: np.ndarray, job: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start times (sorted), task counts and ids of the jobs."""
    order = np.lexsort((subtime, job))
    ids, first, counts = np.unique(job[order], return_index=True, return_counts=True)
    return np.sort(subtime[order][first]), counts, ids


#: Share of its first hour an input must cover for that hour to be compared.
FIRST_HOUR_COVER = 0.95


def _hourly(subtime: np.ndarray, first: int, hours: int) -> list[float]:
    """Submissions in each whole hour ``first`` .. ``first + hours - 1`` (hours from time 0)."""
    index = (subtime // HOUR).astype(np.int64) - first
    return np.bincount(index[index >= 0], minlength=hours)[:hours].astype(float).tolist()


def job_fidelity(
    original_subtime: np.ndarray,
    original_job: np.ndarray,
    generated_subtime: np.ndarray,
    generated_job: np.ndarray,
    hourly_draws: list[np.ndarray],
) -> JobFidelity:
    """Compare the input's tasks (submission times and job ids) with generated ones, and the
    input's hourly counts with those of ``hourly_draws`` (submission times of draws over at least
    the input's whole hours).

    The generated stream's last job may be cut short by the task count: it is left out of the
    tasks per job.
    """
    original_starts, original_counts, _ = _jobs(original_subtime, original_job)
    generated_starts, generated_counts, generated_ids = _jobs(generated_subtime, generated_job)
    complete = generated_counts[generated_ids != generated_ids.max()]
    # the whole hours the input covers (95 % of the first at least): an input that starts later (a
    # later part of the trace) is not compared over the hours before it
    first = int(np.ceil(original_subtime.min() / HOUR - (1 - FIRST_HOUR_COVER)))
    hours = max(int(original_subtime.max() // HOUR) - first, 0)
    drawn = np.array([_hourly(subtime, first, hours) for subtime in hourly_draws]).reshape(len(hourly_draws), hours)
    return JobFidelity(
        float(
            stats.ks_2samp(
                simultaneous_as_zero(np.diff(np.sort(original_subtime))),
                simultaneous_as_zero(np.diff(np.sort(generated_subtime))),
            ).statistic
        ),
        float(
            stats.ks_2samp(
                simultaneous_as_zero(np.diff(original_starts)), simultaneous_as_zero(np.diff(generated_starts))
            ).statistic
        ),
        float(stats.ks_2samp(original_counts, complete).statistic),
        len(original_counts),
        len(generated_counts),
        _hourly(original_subtime, first, hours),
        drawn.mean(axis=0).tolist(),
        drawn.std(axis=0).tolist(),
        len(hourly_draws),
    )
