"""Gaevoy et al.'s queue metrics of a simulated run, and their deviation criterion.

Gaevoy et al. judge a workload model by simulating it and comparing the queueing behaviour with
that of the original workload (Tables 2 and 3 of their paper). Here, per task (a workload job
and its resubmissions) that ran, from Batsim's jobs: ``sojourn`` = last job's finish - submission,
``execution`` = time run summed over its jobs, ``waiting`` = sojourn - execution (in the queue
first, then suspended or queued again after evictions and failures). A task is *queued* when it
waited more than ``threshold`` (1 s); the milliseconds of Batsim's protocol that the others wait
count as 0, as Gaevoy et al. count "zero waiting time for not queued jobs". The observation window
runs from the first submission to the last finish (length ``T``).

- ``mean_execution_s``: mean execution;
- ``mean_running_tasks``: time-average of tasks running, sum of executions / T;
- ``mean_busy_machines``: time-average of machines computing (Batsim's ``nb_computing``);
- ``mean_waiting_s``: mean waiting over all tasks (their "average waiting time");
- ``mean_waiting_queued_s``: mean waiting over queued tasks (their "average waiting time'");
- ``queued_share``: share of queued tasks;
- ``mean_queue_length``: time-average of tasks waiting, sum of waitings / T;
- ``mean_sojourn_s``: mean sojourn.

Their "width" metrics count machines per job; every task here takes one (a share of one), so they
would repeat the lengths and are left out. Tasks that never ran are left out: rejected, killed
while pending, and those still queued when the simulation ended (an overloaded run's waiting is
then understated: its ``pending_at_end`` count, among the run's metrics, says by how many tasks).

Over a measurement window ``[warm-up, horizon]`` (:mod:`.window`), the tasks are those submitted
inside it that ended before the horizon (censored ones left out), ``T`` is the window's length,
``mean_running_tasks`` counts each job's share of its run inside the window and
``mean_busy_machines`` is Batsim's count averaged over the window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.experiments.outputs import RunOutputs, started_jobs, task_times
from batsim_google.experiments.timeline import time_average
from batsim_google.experiments.window import Window, clipped_jobs, submitted_inside
from batsim_google.scheduling.tasks import Outcome

QUEUED_THRESHOLD_S = 1.0
QUEUE_METRICS = (
    "mean_execution_s",
    "mean_running_tasks",
    "mean_busy_machines",
    "mean_waiting_s",
    "mean_waiting_queued_s",
    "queued_share",
    "mean_queue_length",
    "mean_sojourn_s",
)


def queue_metrics(
    outputs: RunOutputs, threshold: float = QUEUED_THRESHOLD_S, window: Window | None = None
) -> dict[str, float | None]:
    """The metrics of the module for the run in ``outputs``, over the ``window`` if any; null
    ("n/a") without the ledger, which says what a task is."""
    if not outputs.has_ledger():
        return dict.fromkeys(QUEUE_METRICS)
    jobs = started_jobs(outputs)
    tasks = task_times(outputs, jobs).filter(pl.col("first_start").is_not_null())
    if window is not None:
        low, high = window.bounds(float(jobs["finish_time"].max() or 0.0))
        tasks = tasks.filter(submitted_inside("submit", low, high) & (pl.col("outcome") != Outcome.CENSORED.value))
    ran = tasks.select(
        "submit",
        "end",
        "execution",
        (pl.col("end") - pl.col("submit")).alias("sojourn"),
        (pl.col("end") - pl.col("submit") - pl.col("execution")).alias("waiting"),
    ).with_columns(pl.when(pl.col("waiting") > threshold).then("waiting").otherwise(0.0).alias("waiting"))
    if ran.height == 0:
        return dict.fromkeys(QUEUE_METRICS)
    if window is None:
        start, end = float(ran["submit"].min()), float(ran["end"].max())
        executed = float(ran["execution"].sum())
    else:
        start, end = low, high
        executed = float(clipped_jobs(jobs, low, high)["execution_time"].sum())
    span = end - start
    states = outputs.machine_states()
    queued = ran.filter(pl.col("waiting") > 0.0)
    return {
        "mean_execution_s": float(ran["execution"].mean()),
        "mean_running_tasks": executed / span if span > 0 else None,
        "mean_busy_machines": time_average(states["time"], states["nb_computing"], start, end) if span > 0 else None,
        "mean_waiting_s": float(ran["waiting"].mean()),
        "mean_waiting_queued_s": float(queued["waiting"].mean()) if queued.height else None,
        "queued_share": queued.height / ran.height,
        "mean_queue_length": float(ran["waiting"].sum()) / span if span > 0 else None,
        "mean_sojourn_s": float(ran["sojourn"].mean()),
    }


def deviation(reference: Mapping[str, float | None], generated: Mapping[str, float | None]) -> tuple[float, list[str]]:
    """Gaevoy et al.'s criterion (their formula 38), Dev = sqrt(mean over metrics of
    ((P_generated - P_reference) / P_reference)^2), over the metrics both give and whose reference
    is not 0; also the metrics left out."""
    errors, left_out = [], []
    for name, ref in reference.items():
        value = generated.get(name)
        if ref is None or value is None or ref == 0 or not (math.isfinite(ref) and math.isfinite(value)):
            left_out.append(name)
            continue
        errors.append(((value - ref) / ref) ** 2)
    if not errors:
        raise InputFileError(
            f"no metric to compare: every one is missing or 0 in the reference ({', '.join(left_out)})"
        )
    return math.sqrt(sum(errors) / len(errors)), left_out
