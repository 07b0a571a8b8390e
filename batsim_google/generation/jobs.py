"""Drawing jobs, then their tasks (the job-level arrivals of :mod:`batsim_google.model.job_arrivals`).

A batch draws a fixed number of jobs, about :data:`~.generator.BATCH_SIZE` tasks' worth, each law
once per batch: job gaps (stretched by ``arrival_scale`` and mapped through the jobs' own rate
profile, or else the task-level one, like task gaps), job classes, task counts (by the bin each job
is submitted in when the jobs have their own profile, :mod:`~batsim_google.model.job_sizes`), the gaps within each job (a segmented cumulative sum),
the tasks' classes and one priority per job. The batch's tasks are then sorted by submission time
(jobs overlap when their spreads exceed the gap between them). A job's spread is not stretched: it
is how fast one submission is taken in, whatever the load.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.job_arrivals import JobArrivals
from batsim_google.model.job_sizes import JobSizes
from batsim_google.model.laws import draw_categories


@dataclass(frozen=True)
class JobTasks:
    """The tasks of consecutive jobs, in submission order: their job, time, class and priority."""

    job: np.ndarray
    subtime: np.ndarray
    class_index: np.ndarray
    priority: np.ndarray


def jobs_per_batch(jobs: JobArrivals, tasks: int) -> int:
    """How many jobs make about ``tasks`` tasks on average."""
    return max(1, math.ceil(tasks / jobs.mean_tasks()))


def draw_jobs(
    jobs: JobArrivals,
    job_sizes: JobSizes,
    profile: ArrivalProfile | None,
    draw_priorities: Callable[[np.ndarray, np.random.Generator], np.ndarray],
    rng: np.random.Generator,
    *,
    count: int,
    first_job: int,
    start: float,
    arrival_scale: float,
) -> tuple[JobTasks, float]:
    """The tasks of ``count`` jobs numbered from ``first_job``, the job clock starting at ``start``
    (normalized time with a profile: the jobs' own, else the task-level ``profile``); and the
    clock at the last job. ``draw_priorities`` draws one priority per job from its class (a job
    class is its majority task class, same index): a job's tasks share it."""
    gaps = jobs.interarrival.sample(count, rng)
    if jobs.simultaneous:
        gaps[rng.random(count) < jobs.simultaneous] = 0.0
    clock = start + np.cumsum(gaps * arrival_scale)
    clock_profile = jobs.profile or profile
    job_start = clock if clock_profile is None else clock_profile.to_real_time(clock)
    job_class = rng.choice(len(jobs.classes), size=count, p=[c.frequency for c in jobs.classes])
    sizes = job_sizes.draw(job_class, job_start, rng)
    owner = np.repeat(np.arange(count), sizes)
    within = np.zeros(len(owner))
    spread = rng.random(len(owner)) >= jobs.zero_spread
    if jobs.spread is not None and spread.any():
        within[spread] = jobs.spread.sample(int(spread.sum()), rng)
    firsts = np.cumsum(sizes) - sizes
    within[firsts] = 0.0  # a job's first task is its submission
    elapsed = np.cumsum(within)
    subtime = job_start[owner] + (elapsed - elapsed[firsts][owner])
    class_index = draw_categories([c.mix for c in jobs.classes], job_class[owner], rng)
    priority = draw_priorities(job_class, rng)[owner]
    order = np.argsort(subtime, kind="stable")
    tasks = JobTasks(owner[order] + first_job, subtime[order], class_index[order], priority[order])
    return tasks, float(clock[-1])
