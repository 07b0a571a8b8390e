"""The metrics of one run: from Batsim's own outputs for any scheduler, and from this package's
scheduler accounting (the *ledger*: ``out_tasks.csv``, ``out_attempts.csv``,
``out_accounting.json``) where it exists.

From Batsim's files alone (``out_jobs.csv``, ``out_schedule.csv`` or ``out_machine_states.csv``,
``out_consumed_energy.csv``), for any Batsim 4.2.1 output folder (times in seconds):

- ``makespan_s``: the last job's finish time (Batsim's makespan, from time 0);
- ``jobs``, ``jobs_completed``, ``jobs_killed``, ``jobs_rejected``: Batsim's jobs, those that
  ended ``COMPLETED_SUCCESSFULLY``, those that ran and ended otherwise (killed, walltime reached,
  failed: Batsim's ``nb_jobs_killed``), and those rejected;
- ``mean_waiting_s``, ``p95_waiting_s``: Batsim's ``waiting_time`` (submission to start) of the
  jobs of the user's workloads that started (this scheduler's resubmissions left out, so it is
  each task's first wait);
- ``mean_bounded_slowdown``: over *tasks* that did all their work, ``max(1, (end - submit) /
  max(work, SLOWDOWN_BOUND_S))``. With the ledger, a task is a workload job and its resubmissions,
  ``end`` its last job's finish and ``work`` its makespan (a service's lifetime): tasks that
  completed or services killed by design at the end of their lifetime, so evictions and restarts
  count against it. Without, a task is a Batsim job that ended ``COMPLETED_SUCCESSFULLY`` and
  ``work`` its execution time;
- ``utilization``, ``occupancy``, ``load_energy_j``, ``idle_energy_j``, ``allocated_cpu_s``,
  ``overcommit_cpu_s``, ``peak_machine_load``: one accounting for every scheduler kind, from Batsim's ``out_jobs.csv`` (each job's machines and times) and the CPU
  requests of the workloads the run simulated (:mod:`.batsim_accounting`): CPU allocated over the
  machines' ``cpu_capacity`` (asleep or failed machines included) x the window; the share of
  machine-time running a job; what the load adds to Batsim's energy (:mod:`.load_energy`; null
  without the platform or its energy model); the idle power of the machines on and running no job;
  the CPU-seconds allocated, those of them above the machines' capacities (over-commit, which the
  load's energy does not bill: it caps a machine's load at 1) and the highest load a machine
  reached. A job without a CPU request takes its machines whole. Without the platform, machines of
  capacity 1 (Batsim's count); for this package's scheduler, whose requests are fractions of the
  largest machine, the utilization and the over-commit are then null;
- ``energy_per_cpu_hour_j``: ``energy_j`` per CPU-hour of work: ``delivered_cpu_s`` with the
  ledger, else ``allocated_cpu_s`` (every Batsim job's run counts as work). Read it with
  ``overcommit_cpu_s``: a scheduler that over-commits runs CPU-hours that cost no energy;
- ``rejected_by_reason``: Batsim's rejected jobs counted by reason (:func:`.batsim_accounting.rejections`);
  ``jobs_refused``: those of them that left work undone inside the window (not the tasks this
  package's scheduler rejects at its horizon);
- ``google_jobs``, ``google_jobs_completed``, ``mean_job_response_s``, ``p95_job_response_s``:
  the jobs of tasks (:mod:`.job_groups`), given the workloads the run simulated;
- ``energy_j``: ``batsim_energy_j`` + ``load_energy_j`` where that is known, else Batsim's alone
  (null without -E); ``batsim_energy_j``: Batsim's consumed energy at the end of the run
  (``out_consumed_energy.csv``, -E): with this scheduler's delay jobs, idle, sleep, off and
  switching power only; from ``out_pstate_changes.csv`` and the platform when Batsim ran with
  ``--disable-energy-tracing`` (:mod:`.pstate_energy`, the same figure without Batsim's sweep).

From the ledger (null, "n/a", without it, never 0):

- ``delivered_cpu_s``: the work done, sum over tasks that did all their work of CPU request x work
  (restarted work counted once);
- ``evictions``: jobs stopped by an eviction; ``resubmissions``: Batsim jobs of the
  ``resubmit`` workload (restarts); ``failure_kills``: jobs stopped by a machine failure;
  ``lost_to_failures``: tasks not restarted after a machine failure (restart cap reached);
- the tasks' outcomes, counted: ``completed``, ``killed_by_design`` (services at their
  lifetime), ``killed_by_user``, ``rejected``, ``not_restarted`` (abandoned at the restart cap,
  after evictions or failures), ``pending_at_end``;
- suspension (:mod:`.suspension`): ``suspended_tasks``, ``mean_suspension_s`` and
  ``median_suspension_s`` (per task, total time suspended), ``peak_suspended_tasks`` (most tasks
  suspended at once), ``censored_suspensions`` (suspensions still running at the end);
- ``balanced``: whether every task ended exactly once (the scheduler's accounting).

Means over no task are null.

Over a measurement window ``[warm-up, horizon]`` (:mod:`.window`; ``window_start_s``,
``window_end_s``, without one 0 and the makespan): ``utilization``, ``occupancy``,
``load_energy_j`` and ``idle_energy_j`` count each job's share inside the window, over the window's length; ``batsim_energy_j`` is Batsim's energy
consumed inside it; waiting times and slowdowns are those of the jobs and tasks submitted inside
it; ``delivered_cpu_s`` is then the CPU-seconds run inside it by the jobs whose work was kept
(completed, ended at their lifetime, or running at the horizon: restarted work, even resumed, is
not counted). The tasks' outcomes (``censored``: still open at the horizon), evictions and
suspensions are the whole run's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.experiments.batsim_accounting import accounting, machine_rows, refused, rejections
from batsim_google.experiments.job_groups import JOB_METRICS, job_metrics
from batsim_google.experiments.outputs import (
    JOBS,
    RESUBMITTED,
    SUCCEEDED,
    RunOutputs,
    started_jobs,
)
from batsim_google.experiments.run_tables import RunTables
from batsim_google.experiments.suspension import suspended_over_time, suspension_per_task
from batsim_google.experiments.timeline import interval_steps
from batsim_google.experiments.window import Window, clipped_jobs, energy_between, submitted_inside
from batsim_google.output_files import write_text
from batsim_google.platform.simgrid_xml import PlatformHost, compute_hosts
from batsim_google.scheduling.tasks import Outcome, StopReason
from batsim_google.simulation.run import METRICS_FILE
from batsim_google.simulation.run_platform import check_run_platform
from batsim_google.units import HOUR

#: Bound of the bounded slowdown, seconds: tasks shorter than this count as this long (as is customary).
SLOWDOWN_BOUND_S = 10.0
WAITING_QUANTILE = 0.95
#: How the jobs whose work was kept ended (the scheduler's attempt end reasons).
KEPT_WORK = ("success", "walltime", StopReason.HORIZON.value)
#: Batsim's final state of a rejected job.
REJECTED = "REJECTED"
#: The metrics only the scheduler's ledger gives, null for other schedulers.
LEDGER_METRICS = (
    "tasks",
    *(outcome.value for outcome in Outcome),
    "delivered_cpu_s",
    "evictions",
    "resubmissions",
    "failure_kills",
    "lost_to_failures",
    "suspended_tasks",
    "mean_suspension_s",
    "median_suspension_s",
    "peak_suspended_tasks",
    "censored_suspensions",
    "balanced",
)


def cpu_capacity(platform: str | Path) -> float:
    """Sum of the compute hosts' ``cpu_capacity`` (1, the largest machine, when absent)."""
    return _capacity(compute_hosts(platform), platform)


def _capacity(hosts: list[PlatformHost], platform: str | Path) -> float:
    if not hosts:
        raise InputFileError(f"{platform}: no compute host: no CPU capacity")
    return sum(float(host.properties.get("cpu_capacity", 1.0)) for host in hosts)


def _value(value) -> float | None:
    return None if value is None else float(value)


def run_metrics(
    outputs: RunOutputs,
    platform: str | Path | None = None,
    window: Window | None = None,
    workloads: Sequence[str | Path] = (),
    tables: RunTables | None = None,
) -> dict:
    """The metrics of the run in ``outputs`` (see the module), on the ``platform`` it simulated
    when known, over the ``window`` (None: the whole run); the jobs of tasks from the
    ``workloads`` it simulated, in Batsim's order, when given. ``tables``: the run's
    (:class:`.run_tables.RunTables` of these ``outputs`` and ``workloads``) when its figures read
    them too: those only the metrics read are dropped once read."""
    if not outputs.has_batsim_outputs():
        raise InputFileError(f"{outputs.directory}: no Batsim outputs in this folder (no {outputs.path(JOBS).name})")
    tables = RunTables(outputs, workloads) if tables is None else tables
    hosts = None if platform is None else compute_hosts(platform)
    tables.read_workloads()
    makespan = tables.makespan
    low, high = (0.0, makespan) if window is None else window.bounds(makespan)
    ran, succeeded = pl.col("starting_time").is_not_null(), pl.col("final_state") == SUCCEEDED
    jobs = tables.jobs.select(
        pl.len().alias("jobs"),
        (ran & succeeded).sum().alias("jobs_completed"),
        (ran & ~succeeded).sum().alias("jobs_killed"),
        (pl.col("final_state") == REJECTED).sum().alias("jobs_rejected"),
        (pl.col("workload_name") == RESUBMITTED).sum().alias("resubmissions"),
    ).row(0, named=True)
    resubmissions = jobs.pop("resubmissions")
    waits = tables.waits if window is None else tables.waits.filter(submitted_inside("submission_time", low, high))
    if hosts is not None:
        _capacity(hosts, platform)  # a platform without compute hosts is refused
        check_run_platform(Path(outputs.directory), Path(platform), hosts)
    machines = len(hosts) if hosts is not None else outputs.machines()
    reasons = rejections(outputs, workloads, machines, tables.jobs, tables.requests)
    tables.drop_jobs()  # 1 GB for a week of the whole cell
    shared = accounting(outputs, hosts, low, high, machines=machines, rows=tables.machine_rows)
    if outputs.has_ledger():
        ledger = _ledger_metrics(tables, makespan, None if window is None else (low, high), resubmissions)
        if hosts is None:  # CPU requests are fractions of the largest machine: capacity unknown
            shared.update(utilization=None, overcommit_cpu_s=None, peak_machine_load=None)
    else:
        ledger = dict.fromkeys(LEDGER_METRICS)
    tasks = tables.task_ends
    tables.drop("started", "tasks")  # the figures read the narrow tables built from them
    if window is None:
        batsim_energy = outputs.energy(hosts, makespan)
    else:
        records = outputs.energy_records(hosts, makespan)
        batsim_energy = None if records is None else energy_between(records, low, high)
    load = shared["load_energy_j"]
    energy = None if batsim_energy is None else batsim_energy + (load or 0.0)
    jobs_of_tasks = (
        job_metrics(tasks, tables.groups, None if window is None else (low, high))
        if tables.groups.height
        else dict.fromkeys(JOB_METRICS)
    )
    tables.drop("groups")
    work = ledger["delivered_cpu_s"] if outputs.has_ledger() else shared["allocated_cpu_s"]
    return {
        "makespan_s": makespan,
        **jobs,
        "rejected_by_reason": reasons,
        "jobs_refused": refused(reasons),
        "mean_waiting_s": _value(waits["waiting_time"].mean()),
        "p95_waiting_s": _value(waits["waiting_time"].quantile(WAITING_QUANTILE, "linear")),
        "mean_bounded_slowdown": _value(bounded_slowdowns(tasks, makespan, window).mean()),
        **jobs_of_tasks,
        "utilization": shared["utilization"],
        "occupancy": shared["occupancy"],
        "energy_j": energy,
        "batsim_energy_j": batsim_energy,
        "load_energy_j": load,
        "idle_energy_j": shared["idle_energy_j"],
        "allocated_cpu_s": shared["allocated_cpu_s"],
        "overcommit_cpu_s": shared["overcommit_cpu_s"],
        "peak_machine_load": shared["peak_machine_load"],
        "energy_per_cpu_hour_j": energy / (work / HOUR) if energy is not None and work else None,
        **ledger,
        "window_start_s": low,
        "window_end_s": high,
    }


def _ledger_metrics(tables: RunTables, makespan: float, bounds: tuple[float, float] | None, resubmissions: int) -> dict:
    """The ledger's metrics (delivered work inside the window's ``bounds``, if any), the
    ``resubmissions`` counted in Batsim's jobs."""
    intervals = tables.intervals  # first: it sorts every job, the largest of these steps
    jobs, tasks = tables.started, tables.tasks
    # only the columns used, not copies of every job's: a week of the whole cell has 6 million jobs
    runs = jobs.select("task_id", "starting_time", "finish_time", "end_reason")
    suspended = suspension_per_task(intervals)
    outcomes = dict(tasks.group_by("outcome").len().iter_rows())
    stops = jobs.select(
        (pl.col("end_reason") == StopReason.EVICTION.value).sum().alias("evictions"),
        (pl.col("end_reason") == StopReason.MACHINE_FAILURE.value).sum().alias("failure_kills"),
    ).row(0, named=True)
    metrics = {
        "tasks": tasks.height,
        **{outcome.value: outcomes.get(outcome.value, 0) for outcome in Outcome},
        # the whole run is the window from 0 to its end: a task cut by the horizon delivered its work so far
        "delivered_cpu_s": _delivered_cpu_s(runs, tasks, *(bounds or (0.0, makespan))),
        "evictions": stops["evictions"],
        "resubmissions": resubmissions,
        "failure_kills": stops["failure_kills"],
        "lost_to_failures": _lost_to_failures(runs, tasks),
        "suspended_tasks": len(suspended),
        "mean_suspension_s": _value(suspended.mean()),
        "median_suspension_s": _value(suspended.median()),
        "peak_suspended_tasks": int(suspended_over_time(intervals)["value"].max() or 0),
        "censored_suspensions": int(intervals["censored"].sum()),
        "balanced": bool(tables.outputs.summary()["balanced"]),
    }
    return metrics


def _delivered_cpu_s(runs: pl.DataFrame, tasks: pl.DataFrame, low: float, high: float) -> float:
    """CPU-seconds run inside ``[low, high]`` by the jobs whose work was kept (see the module)."""
    with_cpu = clipped_jobs(runs.join(tasks.select("task_id", "cpu"), on="task_id", how="left"), low, high)
    kept = with_cpu.filter(pl.col("end_reason").is_in(KEPT_WORK))
    return float(kept.select((pl.col("cpu") * pl.col("execution_time")).sum()).item())


def _lost_to_failures(runs: pl.DataFrame, tasks: pl.DataFrame) -> int:
    """Tasks not restarted whose last job a machine failure stopped."""
    abandoned = tasks.filter(pl.col("outcome") == Outcome.NOT_RESTARTED.value).select("task_id")
    last = runs.join(abandoned, on="task_id", how="semi").sort("starting_time").group_by("task_id")
    return last.agg(pl.col("end_reason").last()).filter(pl.col("end_reason") == StopReason.MACHINE_FAILURE.value).height


def bounded_slowdowns(tasks: pl.DataFrame, makespan: float, window: Window | None = None) -> pl.Series:
    """Bounded slowdown of every task that did all its work (``tasks``: :func:`.outputs.task_ends`
    of a run that ended at ``makespan``), of those submitted inside the ``window`` if any."""
    whole = tasks.filter("whole")
    if window is not None:
        whole = whole.filter(submitted_inside("submit", *window.bounds(makespan)))
    slowdown = pl.max_horizontal(
        pl.lit(1.0), (pl.col("end") - pl.col("submit")) / pl.max_horizontal("work", pl.lit(SLOWDOWN_BOUND_S))
    )
    return whole.select(slowdown.alias("bounded_slowdown")).to_series()


def write_metrics(directory: Path, metrics: dict, path: Path | None = None) -> Path:
    """Write ``metrics`` as JSON (nulls for what is not known) to ``path``, by default
    ``metrics.json`` in the run's ``directory``."""
    path = Path(directory) / METRICS_FILE if path is None else Path(path)
    write_text(path, json.dumps(metrics, indent=1) + "\n")
    return path


def cpu_utilization_over_time(outputs: RunOutputs, capacity: float) -> pl.DataFrame:
    """Allocated CPU over the CPU capacity at each time (``time``, ``value``)."""
    jobs = started_jobs(outputs).join(outputs.tasks().select("task_id", "cpu"), on="task_id", how="left")
    steps = interval_steps(jobs["starting_time"], jobs["finish_time"], jobs["cpu"].to_numpy())
    return steps.with_columns(pl.col("value") / capacity)


def allocated_cpu_over_time(
    outputs: RunOutputs,
    hosts: Sequence[PlatformHost],
    workloads: Sequence[str | Path] = (),
    rows: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """CPU allocated over the machines' capacity at each time (``time``, ``value``), as the
    ``utilization`` metric counts it for any scheduler (:mod:`.batsim_accounting`: each job's CPU
    request on each of its machines, the machine whole without one): its time average over the
    window is that metric. ``rows``: :func:`.batsim_accounting.machine_rows`, when already built."""
    capacities = [float(host.properties.get("cpu_capacity", 1.0)) for host in hosts]
    whole = pl.DataFrame(
        {"machine": range(len(capacities)), "whole": capacities}, schema={"machine": pl.Int64, "whole": pl.Float64}
    )
    rows = (
        (machine_rows(outputs, workloads) if rows is None else rows)
        .join(whole, on="machine", how="left")
        .with_columns(pl.col("cpu").fill_null(pl.col("whole")).fill_null(1.0))
    )
    steps = interval_steps(rows["starting_time"], rows["finish_time"], rows["cpu"].to_numpy())
    return steps.with_columns(pl.col("value") / sum(capacities))


def machine_utilization_over_time(outputs: RunOutputs, machines: int) -> pl.DataFrame:
    """Machines allocated over all machines at each time (``time``, ``value``): the utilization of
    a run without the ledger, whose jobs take whole machines."""
    jobs = outputs.jobs().filter(pl.col("starting_time").is_not_null())
    steps = interval_steps(
        jobs["starting_time"], jobs["finish_time"], jobs["requested_number_of_resources"].cast(pl.Float64).to_numpy()
    )
    return steps.with_columns(pl.col("value") / machines)
