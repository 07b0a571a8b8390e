"""The metrics of one run, computed from Batsim's outputs and the scheduler's accounting.

Definitions (times in seconds; a *task* is a workload job and all its resubmissions):

- ``makespan_s``: the last job's finish time (Batsim's makespan, from time 0);
- ``mean_waiting_s``, ``p95_waiting_s``: over tasks that started, the waiting time of the task's
  workload job (Batsim's ``waiting_time``: submission to first start);
- ``mean_bounded_slowdown``: over tasks that did all their work (completed, or services killed
  by design at the end of their lifetime), ``max(1, (end - submit) / max(work, 10 s))``, where
  ``end`` is the task's last job's finish and ``work`` its makespan (a service's lifetime), so
  evictions and restarts count against it;
- ``utilization``: allocated CPU time over CPU capacity x makespan: the sum over jobs of the task's
  normalized CPU request x the job's execution time, divided by the sum of the machines'
  ``cpu_capacity`` (asleep or failed machines included) x the makespan;
- ``energy_j``: ``batsim_energy_j`` + ``load_energy_j`` (None without -E);
  ``batsim_energy_j``: Batsim's consumed energy at the end of the run (``out_consumed_energy.csv``,
  -E): idle, sleep, off and switching power, as jobs are delays; ``load_energy_j``: what their
  load adds (:mod:`.load_energy`; None when the platform has no energy model);
- ``evictions``: jobs stopped by an eviction; ``resubmissions``: Batsim jobs of the
  ``resubmit`` workload; ``failure_kills``: jobs stopped by a machine failure;
  ``lost_to_failures``: tasks not restarted after a machine failure (restart cap reached);
- the tasks' outcomes, counted: ``completed``, ``killed_by_design`` (services at their
  lifetime), ``killed_by_user``, ``rejected``, ``not_restarted``, ``pending_at_end``;
- suspension (:mod:`.suspension`): ``suspended_tasks``, ``mean_suspension_s`` and
  ``median_suspension_s`` (per task, total time suspended), ``peak_suspended_tasks`` (most tasks
  suspended at once), ``censored_suspensions`` (suspensions still running at the end);
- ``balanced``: whether every task ended exactly once (the scheduler's accounting).

Means over no task are None.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.platform.simgrid_xml import PlatformHost, compute_hosts
from batsim_google.scheduling.tasks import Outcome, StopReason
from batsim_google.experiments.load_energy import load_energy
from batsim_google.experiments.outputs import RESUBMITTED, RunOutputs, started_jobs, task_times
from batsim_google.experiments.suspension import suspended_over_time, suspension_intervals, suspension_per_task
from batsim_google.experiments.timeline import interval_steps

#: Bound of the bounded slowdown, seconds: tasks shorter than this count as this long.
SLOWDOWN_BOUND_S = 10.0
WAITING_QUANTILE = 0.95
#: Outcomes of tasks that did all their work.
WHOLE_WORK = (Outcome.COMPLETED.value, Outcome.KILLED_BY_DESIGN.value)


def cpu_capacity(platform: str | Path) -> float:
    """Sum of the compute hosts' ``cpu_capacity`` (1, the largest machine, when absent)."""
    return _capacity(compute_hosts(platform), platform)


def _capacity(hosts: list[PlatformHost], platform: str | Path) -> float:
    if not hosts:
        raise InputFileError(f"{platform}: no compute host: no CPU capacity")
    return sum(float(host.properties.get("cpu_capacity", 1.0)) for host in hosts)


def _value(value) -> float | None:
    return None if value is None else float(value)


def run_metrics(outputs: RunOutputs, platform: str | Path) -> dict:
    """The metrics of the run in ``outputs`` (see the module) on the ``platform`` it simulated."""
    hosts = compute_hosts(platform)
    capacity = _capacity(hosts, platform)
    all_jobs = outputs.jobs()
    jobs = started_jobs(outputs, all_jobs)
    tasks = task_times(outputs, jobs)
    makespan = float(all_jobs["finish_time"].max() or 0.0)
    waits = tasks["first_wait"].drop_nulls()
    whole = tasks.filter(pl.col("outcome").is_in(WHOLE_WORK))
    slowdown = pl.max_horizontal(
        pl.lit(1.0), (pl.col("end") - pl.col("submit")) / pl.max_horizontal("work", pl.lit(SLOWDOWN_BOUND_S))
    )
    allocated = jobs.join(tasks.select("task_id", "cpu"), on="task_id", how="left").select(
        (pl.col("cpu") * pl.col("execution_time")).sum()
    ).item()
    last_reason = jobs.sort("starting_time").group_by("task_id").agg(pl.col("end_reason").last())
    lost = tasks.filter(pl.col("outcome") == Outcome.NOT_RESTARTED.value).join(last_reason, on="task_id")
    intervals = suspension_intervals(jobs, tasks, makespan)
    suspended = suspension_per_task(intervals)
    outcomes = dict(tasks.group_by("outcome").len().iter_rows())
    batsim_energy = outputs.energy()
    load = load_energy(jobs.join(tasks.select("task_id", "cpu"), on="task_id", how="left"), hosts)
    return {
        "makespan_s": makespan,
        "tasks": tasks.height,
        **{outcome.value: outcomes.get(outcome.value, 0) for outcome in Outcome},
        "mean_waiting_s": _value(waits.mean()),
        "p95_waiting_s": _value(waits.quantile(WAITING_QUANTILE, "linear")),
        "mean_bounded_slowdown": _value(whole.select(slowdown.mean()).item()),
        "utilization": allocated / (capacity * makespan) if makespan > 0 else None,
        "energy_j": None if batsim_energy is None or load is None else batsim_energy + load,
        "batsim_energy_j": batsim_energy,
        "load_energy_j": load,
        "evictions": jobs.filter(pl.col("end_reason") == StopReason.EVICTION.value).height,
        "resubmissions": all_jobs.filter(pl.col("workload_name") == RESUBMITTED).height,
        "failure_kills": jobs.filter(pl.col("end_reason") == StopReason.MACHINE_FAILURE.value).height,
        "lost_to_failures": lost.filter(pl.col("end_reason") == StopReason.MACHINE_FAILURE.value).height,
        "suspended_tasks": len(suspended),
        "mean_suspension_s": _value(suspended.mean()),
        "median_suspension_s": _value(suspended.median()),
        "peak_suspended_tasks": int(suspended_over_time(intervals)["value"].max() or 0),
        "censored_suspensions": int(intervals["censored"].sum()),
        "balanced": bool(outputs.summary()["balanced"]),
    }


def cpu_utilization_over_time(outputs: RunOutputs, capacity: float) -> pl.DataFrame:
    """Allocated CPU over the CPU capacity at each time (``time``, ``value``)."""
    jobs = started_jobs(outputs).join(outputs.tasks().select("task_id", "cpu"), on="task_id", how="left")
    steps = interval_steps(jobs["starting_time"], jobs["finish_time"], jobs["cpu"].to_numpy())
    return steps.with_columns(pl.col("value") / capacity)
