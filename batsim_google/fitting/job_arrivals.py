"""Fitting job-level arrivals (:mod:`batsim_google.model.job_arrivals`) to tasks with a job id.

A job's submission is its own SUBMIT in job_events when the table has it (``job_submit``, taken
when it is not after the job's first task), else its first task's; its class, the class most of
its tasks belong to (the first class in the model's order on a tie). Per job class: its share of the jobs, the exact
histogram of its numbers of tasks, and the shares of its tasks in each class. Gaps shorter than
:data:`SIMULTANEOUS_GAP` are simultaneous: the trace's timestamps have a 1 us resolution and a
job's tasks are taken in 1 or 2 us apart, which is the same instant for any scheduler. Job gaps
are fitted like task gaps (positive gaps and a share of zero ones); when the task-level arrivals
have a profile, the jobs get their own over the same bins (fitted on the job submissions the same
way) and their gaps are fitted in its normalized time: the generator then draws job sizes by bin
so that the task rate follows the task-level profile (:mod:`batsim_google.model.job_sizes`). The
positive gaps within a job get the best law of their own.

What a job's tasks share is measured, not assumed: per attribute (class, priority, scheduling
class, user), the share of the jobs of two tasks or more whose tasks all have the same value; with
job records, the share of the jobs whose tasks all have the job's own user and scheduling class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from batsim_google.fitting.profile import ProfileFit, fit_arrival_profile
from batsim_google.fitting.select import LawFit, best_fit, fit_all
from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.job_arrivals import JobArrivals, JobClass
from batsim_google.model.job_sizes import size_factors
from batsim_google.model.laws import Empirical, Law

#: Gaps shorter than this (seconds) are simultaneous submissions.
SIMULTANEOUS_GAP = 1e-5
#: Fewest positive gaps within jobs that get a law; with fewer, a job's tasks are all simultaneous.
MIN_SPREAD_GAPS = 20
#: Task attributes whose sharing within a job is measured, when the table has them.
SHARED_ATTRIBUTES = ("class", "google_priority", "scheduling_class", "user")
#: Task attributes compared with the job's own record (job_events), when the table has both.
JOB_RECORD_ATTRIBUTES = {"user": "job_user", "scheduling_class": "job_scheduling_class"}


@dataclass(frozen=True)
class JobArrivalFit:
    """The fitted job arrivals, with what the report shows of them."""

    jobs: JobArrivals
    job_count: int
    gaps: int
    zero_gaps: int
    fits: list[LawFit]
    best: LawFit
    spread_gaps: int
    spread_fits: list[LawFit]
    #: Per attribute, the share of the jobs of two tasks or more whose tasks all share it.
    shared: dict[str, float]
    multi_task_jobs: int
    #: Jobs whose start is their own SUBMIT (job_events); per attribute, the share of those jobs
    #: whose tasks all have the job record's value.
    recorded_jobs: int = 0
    as_recorded: dict[str, float] | None = None
    #: The jobs' own rate profile, fitted when the task-level arrivals have one.
    profile: ProfileFit | None = None


def describe_job_profile(fit: JobArrivalFit, task_profile: ArrivalProfile) -> str | None:
    """What the jobs' own profile does to the sizes, over the bins it observed (None without one)."""
    if fit.profile is None or fit.jobs.profile is None:
        return None
    observed = fit.profile.exposure > 0
    factors = size_factors(task_profile, fit.jobs.profile)[observed]
    return (
        f"the jobs' own rate profile, {int(observed.sum())} bins observed: tasks per job by bin from "
        f"{factors.min():.2f} to {factors.max():.2f} times the mean (task rate over job rate)"
    )


def simultaneous_as_zero(gaps: np.ndarray) -> np.ndarray:
    """``gaps`` with the simultaneous ones (shorter than :data:`SIMULTANEOUS_GAP`) set to 0."""
    return np.where(gaps < SIMULTANEOUS_GAP, 0.0, gaps)


def job_table(tasks: pl.DataFrame, class_names: Sequence[str]) -> pl.DataFrame:
    """One row per job: ``job_id``, ``start`` (first submission), ``tasks`` and ``job_class``
    (index of its majority class), sorted by start."""
    rank = {name: index for index, name in enumerate(class_names)}
    majority = (
        tasks.group_by("job_id", "class")
        .len()
        .with_columns(pl.col("class").replace_strict(rank, return_dtype=pl.Int64).alias("rank"))
        .sort("job_id", "len", "rank", descending=[False, True, False])
        .group_by("job_id", maintain_order=True)
        .first()
        .select("job_id", pl.col("rank").alias("job_class"))
    )
    jobs = tasks.group_by("job_id").agg(pl.col("subtime").min().alias("start"), pl.len().alias("tasks"))
    if "job_submit" in tasks.columns:
        own = tasks.group_by("job_id").agg(pl.col("job_submit").first())
        recorded = pl.col("job_submit").is_finite() & (pl.col("job_submit") <= pl.col("start"))
        jobs = (
            jobs.join(own, on="job_id")
            .with_columns(recorded.fill_null(False).alias("recorded"))
            .with_columns(pl.when("recorded").then("job_submit").otherwise("start").alias("start"))
            .drop("job_submit")
        )
    return jobs.join(majority, on="job_id").sort("start", "job_id")


def _job_classes(jobs: pl.DataFrame, tasks: pl.DataFrame, class_names: Sequence[str]) -> tuple[JobClass, ...]:
    task_classes = tasks.join(jobs.select("job_id", "job_class"), on="job_id")
    result = []
    for index in range(len(class_names)):
        members = jobs.filter(pl.col("job_class") == index)
        if members.height == 0:  # no job of this class: never drawn
            mix = tuple(1.0 if i == index else 0.0 for i in range(len(class_names)))
            result.append(JobClass(0.0, Empirical((1.0,), (1.0,)), mix))
            continue
        counts = members.group_by("tasks").len().sort("tasks")
        sizes = Empirical(
            tuple(counts["tasks"].cast(pl.Float64).to_list()), tuple((counts["len"] / members.height).to_list())
        )
        own = task_classes.filter(pl.col("job_class") == index)["class"]
        mix = tuple(float((own == name).sum()) / len(own) for name in class_names)
        result.append(JobClass(members.height / jobs.height, sizes, mix))
    return tuple(result)


def _shared(tasks: pl.DataFrame) -> tuple[dict[str, float], int]:
    present = [name for name in SHARED_ATTRIBUTES if name in tasks.columns]
    per_job = tasks.group_by("job_id").agg(pl.len().alias("tasks"), *[pl.col(n).n_unique() for n in present])
    multi = per_job.filter(pl.col("tasks") > 1)
    if multi.height == 0:
        return {}, 0
    return {name: float((multi[name] == 1).mean()) for name in present}, multi.height


def _as_recorded(tasks: pl.DataFrame, jobs: pl.DataFrame) -> tuple[int, dict[str, float] | None]:
    if "recorded" not in jobs.columns:
        return 0, None
    recorded = jobs.filter("recorded").select("job_id")
    pairs = [(task, job) for task, job in JOB_RECORD_ATTRIBUTES.items() if {task, job} <= set(tasks.columns)]
    agreement = (
        tasks.join(recorded, on="job_id")
        .group_by("job_id")
        .agg(*[(pl.col(task) == pl.col(job)).all().alias(task) for task, job in pairs])
    )
    if agreement.height == 0:
        return 0, {}
    return agreement.height, {task: float(agreement[task].mean()) for task, _ in pairs}


def _within_job_gaps(tasks: pl.DataFrame) -> np.ndarray:
    ordered = tasks.select("job_id", "subtime").sort("job_id", "subtime")
    gaps = ordered.select(pl.col("subtime").diff().over("job_id").alias("gap")).drop_nulls()["gap"].to_numpy()
    return simultaneous_as_zero(gaps)


def fit_job_arrivals(
    tasks: pl.DataFrame,
    class_names: Sequence[str],
    period: float | None,
    fit_gaps: Callable[[np.ndarray], tuple[list[LawFit], LawFit]],
    criterion,
    methods,
) -> JobArrivalFit:
    """Job arrivals of ``tasks`` (columns ``job_id``, ``subtime``, ``class`` of ``class_names``).

    ``period`` is the task-level profile's (None without one); ``fit_gaps`` fits positive gaps the
    way task gaps are (keeping the mean).
    """
    jobs = job_table(tasks, class_names)
    starts = jobs["start"].to_numpy()
    profile = None if period is None else fit_arrival_profile(starts, period)
    clock = starts if profile is None else profile.profile.to_normalized_time(starts)
    gaps = simultaneous_as_zero(np.diff(clock))
    positive = gaps[gaps > 0]
    fits, best = fit_gaps(positive)
    within = _within_job_gaps(tasks)
    spread_sample = within[within > 0]
    spread_fits: list[LawFit] = []
    spread: Law | None = None
    if len(spread_sample) >= MIN_SPREAD_GAPS:
        spread_fits = fit_all(spread_sample, methods)
        spread = best_fit(spread_fits, criterion).law
    zero_spread = 1.0 if spread is None or len(within) == 0 else float(np.mean(within == 0))
    shared, multi = _shared(tasks)
    recorded, as_recorded = _as_recorded(tasks, jobs)
    model = JobArrivals(
        interarrival=best.law,
        classes=_job_classes(jobs, tasks, class_names),
        simultaneous=float(np.mean(gaps == 0)),
        zero_spread=zero_spread,
        spread=spread,
        profile=None if profile is None else profile.profile,
    )
    return JobArrivalFit(
        model,
        jobs.height,
        len(gaps),
        int(len(gaps) - len(positive)),
        fits,
        best,
        len(within),
        spread_fits,
        shared,
        multi,
        recorded,
        as_recorded,
        profile,
    )
