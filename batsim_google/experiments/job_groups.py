"""Jobs of tasks in a run's metrics: how long the cell took to serve each job as a whole.

A Google job is many tasks submitted together; its user waits for the last of them. The generator
(with job-level arrivals) and ``trace convert`` give every Batsim job the ``google_job`` it belongs
to; Batsim does not copy extra fields into its outputs, so they are read back from the workloads
the run simulated, streamed, in the order of its command line (``w0``, ``w1``, ...: one workload's
``google_job`` 7 is not another's). A job's *response time* runs from its first task's submission
to its last task's end, for the jobs all of whose tasks did all their work; tasks without a
``google_job`` (the warm start's) belong to no job.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.experiments.window import submitted_inside
from batsim_google.fitting.batsim_input import read_workload_file
from batsim_google.simulation.run_inputs import workload_name

JOB_FIELD = "google_job"
RESPONSE_QUANTILE = 0.95
#: What :func:`job_metrics` returns; null when the workloads carry no ``google_job``.
JOB_METRICS = ("google_jobs", "google_jobs_completed", "mean_job_response_s", "p95_job_response_s")
SCHEMA = {"task": pl.String, "group": pl.String}


def workload_groups(workloads: Sequence[str | Path]) -> pl.DataFrame:
    """``task`` (a Batsim job's full id, ``w0!17``) and ``group`` (``w0!`` + its ``google_job``)
    of every job of ``workloads`` that carries a ``google_job``."""
    frames = []
    for index, path in enumerate(workloads):
        prefix = pl.lit(workload_name(index) + "!")
        jobs = read_workload_file(path).jobs.filter(pl.col(JOB_FIELD).is_not_null())
        if jobs["id"].null_count():
            raise InputFileError(f"{path}: a job with a {JOB_FIELD} has no id")
        job = pl.col(JOB_FIELD)
        label = pl.when(job == job.floor()).then(job.cast(pl.Int64).cast(pl.String)).otherwise(job.cast(pl.String))
        frames.append(
            jobs.select(pl.concat_str(prefix, "id").alias("task"), pl.concat_str(prefix, label).alias("group"))
        )
    return pl.concat(frames) if frames else pl.DataFrame(schema=SCHEMA)


def job_metrics(tasks: pl.DataFrame, groups: pl.DataFrame, window: tuple[float, float] | None = None) -> dict:
    """The jobs (of :func:`workload_groups`) submitted in the ``window`` ``[low, high)`` (their
    first task; None: all), those all of whose tasks did all their work, and the mean and 95th
    percentile of those jobs' response times. ``tasks``: one row per task, ``task``, ``submit``,
    ``end`` and ``whole`` (it did all its work)."""
    # in order, so that the mean adds the same numbers in the same order in every process (reproducible bits)
    jobs = (
        tasks.join(groups, on="task", how="inner", maintain_order="left")
        .group_by("group", maintain_order=True)
        .agg(pl.col("submit").min(), pl.col("end").max(), pl.col("whole").all())
    )
    if window is not None:
        jobs = jobs.filter(submitted_inside("submit", *window))
    completed = jobs.filter("whole")
    response = completed["end"] - completed["submit"]
    return {
        "google_jobs": jobs.height,
        "google_jobs_completed": completed.height,
        "mean_job_response_s": response.mean(),
        "p95_job_response_s": response.quantile(RESPONSE_QUANTILE, "linear"),
    }
