"""A small model with job-level arrivals, shared by the model, generation and fitting tests."""

from __future__ import annotations

import dataclasses

from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.job_arrivals import JobArrivals, JobClass
from batsim_google.model.laws import Empirical, Exponential, Gamma
from batsim_google.model.presets import preset
from batsim_google.model.workload_model import WorkloadModel
from batsim_google.units import DAY

#: Job gaps of mean 4 s, jobs of 1, 3 or 40 tasks (task-mostly) or 1 or 8 (service-mostly).
JOBS = JobArrivals(
    interarrival=Gamma(0.5, 8.0),
    classes=(
        JobClass(0.7, Empirical((1.0, 3.0, 40.0), (0.6, 0.3, 0.1)), (0.9, 0.1)),
        JobClass(0.3, Empirical((1.0, 8.0), (0.5, 0.5)), (0.2, 0.8)),
    ),
    simultaneous=0.05,
    zero_spread=0.8,
    spread=Exponential(1e3),
)


def job_model(jobs: JobArrivals = JOBS) -> WorkloadModel:
    """The ``google`` preset with ``jobs``."""
    return dataclasses.replace(preset("google"), jobs=jobs)


#: Per half day, twice the tasks per hour in the first half (task rates 1.5 then 0.5, mean 1).
HALVES = ArrivalProfile.normalized(DAY, [1.5] * 24 + [0.5] * 24)


def profiled_job_model(jobs: JobArrivals = JOBS) -> WorkloadModel:
    """``job_model(jobs)`` with the task rates of :data:`HALVES` and a flat job rate: a job of the
    first half has 1.5 times the mean tasks, one of the second half 0.5 times."""
    flat = ArrivalProfile.normalized(DAY, [1.0] * 48)
    return dataclasses.replace(preset("google"), jobs=dataclasses.replace(jobs, profile=flat), arrival_profile=HALVES)
