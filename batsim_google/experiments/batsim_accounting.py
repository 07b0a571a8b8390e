"""One accounting for every scheduler: the load, the idle machines and the rejections of a run,
from Batsim's own outputs, whatever scheduled it (this package's, a pybatsim one, batsched, any
command).

Every job is a ``delay`` profile, so Batsim's energy does not see the load (:mod:`.load_energy`).
What each machine ran comes from ``out_jobs.csv``: a job's ``allocated_resources`` and its times.
A job's CPU is its task's normalized request: the ``cpu`` field of the workload the run simulated
(a resubmission of this package's scheduler: its task's, from the scheduler's ledger), 1 (a whole
machine per resource: the machine's ``cpu_capacity``) for a job without one. So a scheduler that gives each job whole machines
(batsched) and one that packs jobs on shared machines are billed the same load for the same work;
they differ in the machines they keep on and idle. From those rows:

- ``load_energy_j``: what the load adds to Batsim's energy (:func:`.load_energy.load_energy`),
  the load of a machine capped at its capacity;
- ``allocated_cpu_s``: CPU allocated x time (over-commit included); ``overcommit_cpu_s``: its
  part above the machines' ``cpu_capacity``, which the load's energy does not bill;
  ``peak_machine_load``: the highest CPU allocated over ``cpu_capacity`` of a machine (above 1:
  over-committed) (:func:`.load_energy.overcommit`);
- ``utilization``: CPU allocated over CPU available (sum of jobs' CPU x time over the machines'
  ``cpu_capacity`` x the window's length);
- ``occupancy``: the share of machine-time during which a machine ran at least one job;
- ``idle_energy_j``: the idle power of machines on (at a computing pstate) and running no job,
  over the window. A machine is on except while Batsim has it at one of its ``sleep_pstates``
  (``out_pstate_changes.csv``, written with ``-E``); without that file every machine is on
  throughout. A machine down by a failure keeps its pstate: Batsim bills it so.

Rejections are counted by reason (:func:`rejections`): Batsim's ``REJECTED`` jobs, with the reason
told by this package's scheduler's ledger (the outcome and note of the task the job stands for,
a resubmission's too) where it keeps one, else
what the job asked for that batsched's planners refuse (more resources than the platform's
machines, then no walltime), else "by the scheduler". Those of tasks this package's scheduler
found open at its horizon (``censored``) left nothing undone inside the window; the others are
``jobs_refused`` (:func:`refused`), what a campaign flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.experiments.load_energy import computing_watts, load_energy, load_steps, overcommit
from batsim_google.experiments.outputs import RESUBMITTED, RunOutputs
from batsim_google.experiments.pstate_energy import read_pstate_changes, sleep_table
from batsim_google.experiments.window import clipped_jobs
from batsim_google.fitting.batsim_input import read_workload_file
from batsim_google.platform.simgrid_xml import PlatformHost
from batsim_google.scheduling.ledger_files import TASKS
from batsim_google.simulation.run_inputs import workload_name

PSTATE_CHANGES = "pstate_changes.csv"
#: Batsim's final state of a rejected job.
REJECTED = "REJECTED"
#: Reasons of a rejection told by what the job asked for.
NO_WALLTIME = "no walltime (planning schedulers need one)"
TOO_WIDE = "more resources than the platform's machines"
BY_SCHEDULER = "by the scheduler"
#: The reason of the jobs rejected because they were open at this package's scheduler's horizon
#: (censored, outside the measurement window): not refused.
CENSORED = "censored"
#: What :func:`accounting` returns.
ACCOUNTING_METRICS = (
    "load_energy_j",
    "idle_energy_j",
    "utilization",
    "occupancy",
    "allocated_cpu_s",
    "overcommit_cpu_s",
    "peak_machine_load",
)
WORKLOAD_SCHEMA = {"job": pl.String, "cpu": pl.Float64, "res": pl.Int64, "walltime": pl.Float64}


def workload_jobs(workloads: Sequence[str | Path]) -> pl.DataFrame:
    """Each job of ``workloads`` (Batsim's full id ``w0!17``, in the order of the command line):
    its ``cpu`` (null without one), ``res`` and ``walltime`` (-1: none), streamed."""
    frames = [
        read_workload_file(path).jobs.select(
            pl.concat_str(pl.lit(workload_name(index) + "!"), "id").alias("job"),
            "cpu",
            pl.col("res").fill_null(1.0).cast(pl.Int64, strict=False).alias("res"),
            pl.col("walltime").fill_null(-1.0),
        )
        for index, path in enumerate(workloads)
    ]
    return pl.concat(frames) if frames else pl.DataFrame(schema=WORKLOAD_SCHEMA)


def machine_rows(
    outputs: RunOutputs,
    workloads: Sequence[str | Path] = (),
    jobs: pl.DataFrame | None = None,
    requests: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per job that ran and machine it ran on: ``job``, ``starting_time``,
    ``finish_time``, ``execution_time``, ``machine`` and its ``cpu`` (see the module; null without
    one). ``jobs``: :meth:`.RunOutputs.jobs`, ``requests``: :func:`workload_jobs` of the
    ``workloads``, when already read."""
    jobs = outputs.jobs() if jobs is None else jobs
    ran = jobs.filter(pl.col("starting_time").is_not_null())
    rows = ran.select("job", "starting_time", "finish_time", "execution_time").join(
        _machines(jobs), on="job", how="inner"
    )
    return _with_cpu(outputs, rows, workload_jobs(workloads) if requests is None else requests)


def _machines(jobs: pl.DataFrame) -> pl.DataFrame:
    """``job``, ``machine``: each machine of the jobs' ``allocated_resources`` (Batsim's "0-2 5")."""
    allocated = jobs.select("job", pl.col("allocated_resources").str.strip_chars()).filter(
        pl.col("allocated_resources").is_not_null() & (pl.col("allocated_resources") != "")
    )
    if not allocated.select(pl.col("allocated_resources").str.contains("[ -]").any()).item():
        # a machine each (as this package's scheduler places jobs): no lists of millions of ranges
        return allocated.select("job", pl.col("allocated_resources").cast(pl.Int64).alias("machine"))
    ranges = (
        allocated.with_columns(pl.col("allocated_resources").str.split(" ").alias("part"))
        .explode("part")
        .with_columns(pl.col("part").str.split("-").alias("bounds"))
        .with_columns(
            pl.col("bounds").list.first().cast(pl.Int64).alias("low"),
            pl.col("bounds").list.last().cast(pl.Int64).alias("high"),
        )
    )
    return ranges.select("job", pl.int_ranges("low", pl.col("high") + 1).alias("machine")).explode("machine")


def _with_cpu(outputs: RunOutputs, rows: pl.DataFrame, requests: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with their job's ``cpu``: the ledger's (its task's request) for the jobs it knows,
    else the workloads' ``requests``."""
    columns = rows.columns
    if outputs.has_ledger():
        ledger = (
            outputs.attempts(["job_id", "task_id"])
            .join(outputs.tasks(["task_id", "cpu"]), on="task_id", how="left")
            .select(pl.col("job_id").alias("job"), pl.col("cpu").alias("ledger_cpu"))
        )
        rows = rows.join(ledger, on="job", how="left")
    else:
        rows = rows.with_columns(pl.lit(None, dtype=pl.Float64).alias("ledger_cpu"))
    with_requests = rows.join(requests.select("job", "cpu"), on="job", how="left")
    return with_requests.select(*columns, pl.coalesce("ledger_cpu", "cpu").alias("cpu"))


def _busy_seconds(rows: pl.DataFrame) -> pl.DataFrame:
    """Per ``machine``, the seconds during which it ran at least one of ``rows``' jobs (``busy``)."""
    if rows.height == 0:
        return pl.DataFrame(schema={"machine": pl.Int64, "busy": pl.Float64})
    ordered = rows.sort("machine", "starting_time")
    reach = pl.col("finish_time").cum_max().over("machine")
    merged = ordered.with_columns(reach.shift(1).over("machine").alias("reach_before")).with_columns(
        (pl.col("reach_before").is_null() | (pl.col("starting_time") > pl.col("reach_before")))
        .cum_sum()
        .over("machine")
        .alias("block")
    )
    # in order, so that the sums add the same numbers in the same order in every run (reproducible bits)
    blocks = merged.group_by("machine", "block", maintain_order=True).agg(
        pl.col("starting_time").min(), pl.col("finish_time").max()
    )
    return blocks.group_by("machine", maintain_order=True).agg(
        (pl.col("finish_time") - pl.col("starting_time")).sum().alias("busy")
    )


def on_seconds(outputs: RunOutputs, hosts: Sequence[PlatformHost], low: float, high: float) -> np.ndarray:
    """Per machine (resource order), the seconds of ``[low, high]`` it spent at a computing pstate
    (see the module)."""
    on = np.full(len(hosts), high - low)
    path = outputs.path(PSTATE_CHANGES)
    if not path.is_file():
        return on  # before its first change, a machine is at pstate 0 (on)
    changes = read_pstate_changes(path, len(hosts))
    machine = changes["machine"].to_numpy()
    times = changes["time"].to_numpy()
    last = np.append(machine[1:] != machine[:-1], True)
    ends = np.where(last, np.inf, np.append(times[1:], np.inf))
    asleep = sleep_table(hosts)
    off = (asleep[machine] == changes["pstate"].to_numpy()[:, None]).any(axis=1)
    inside = np.clip(np.minimum(ends, high) - np.maximum(times, low), 0.0, None)
    np.subtract.at(on, machine[off], inside[off])
    return on


def accounting(
    outputs: RunOutputs,
    hosts: Sequence[PlatformHost] | None,
    low: float,
    high: float,
    workloads: Sequence[str | Path] = (),
    jobs: pl.DataFrame | None = None,
    machines: int | None = None,
    rows: pl.DataFrame | None = None,
) -> dict:
    """The metrics of the module over ``[low, high]``; ``hosts``: the platform's compute hosts in
    resource order (None: unknown, then ``machines`` machines of capacity 1, and no energy).
    ``rows``: :func:`machine_rows`, when already built (else built from ``jobs``)."""
    length = high - low
    count = len(hosts) if hosts is not None else (machines or outputs.machines())
    capacities = [float(host.properties.get("cpu_capacity", 1.0)) for host in hosts] if hosts else [1.0] * count
    capacity = sum(capacities)
    whole = pl.DataFrame(
        {"machine": range(len(capacities)), "whole": capacities}, schema={"machine": pl.Int64, "whole": pl.Float64}
    )
    rows = (
        clipped_jobs(machine_rows(outputs, workloads, jobs) if rows is None else rows, low, high)
        .join(whole, on="machine", how="left")
        .with_columns(pl.col("cpu").fill_null(pl.col("whole")).fill_null(1.0))
    )
    allocated = float(rows.select((pl.col("cpu") * pl.col("execution_time")).sum()).item())
    busy = _busy_seconds(rows)
    steps = load_steps(rows, capacities)
    above = overcommit(rows, capacities, steps)
    metrics = {
        "load_energy_j": None,
        "idle_energy_j": None,
        "utilization": allocated / (capacity * length) if capacity and length > 0 else None,
        "occupancy": float(busy["busy"].sum()) / (count * length) if count and length > 0 else None,
        "allocated_cpu_s": allocated,
        "overcommit_cpu_s": above.cpu_s,
        "peak_machine_load": above.peak_load,
    }
    if hosts is None:
        return metrics
    metrics["load_energy_j"] = load_energy(rows, hosts, steps)
    watts = [computing_watts(host) for host in hosts]
    if all(w is not None for w in watts):
        idle = np.array([w[0] for w in watts])
        busy_per_machine = np.zeros(len(hosts))
        busy_per_machine[busy["machine"].to_numpy()] = busy["busy"].to_numpy()
        idle_seconds = np.clip(on_seconds(outputs, hosts, low, high) - busy_per_machine, 0.0, None)
        metrics["idle_energy_j"] = float(idle @ idle_seconds)
    return metrics


def refused(reasons: dict) -> int:
    """The rejections of :func:`rejections` that left work undone inside the measurement window:
    all but those of tasks open at the horizon (this package's scheduler rejects them there)."""
    return sum(count for reason, count in reasons.items() if not reason.startswith(CENSORED))


def rejections(
    outputs: RunOutputs,
    workloads: Sequence[str | Path] = (),
    machines: int | None = None,
    jobs: pl.DataFrame | None = None,
    requests: pl.DataFrame | None = None,
) -> dict:
    """Batsim's rejected jobs by reason (see the module), most frequent first. ``jobs``:
    :meth:`.RunOutputs.jobs`, ``requests``: :func:`workload_jobs` of the ``workloads``, when
    already read."""
    rejected = (outputs.jobs() if jobs is None else jobs).filter(pl.col("final_state") == REJECTED).select("job")
    if rejected.height == 0:
        return {}
    if outputs.has_ledger():
        # a resubmission "resubmit!w0_17#2" stands for task "w0!17" (the scheduler's naming)
        task = (
            pl.when(pl.col("job").str.starts_with(f"{RESUBMITTED}!"))
            .then(
                pl.col("job")
                .str.strip_prefix(f"{RESUBMITTED}!")
                .str.replace(r"#\d+$", "")
                .str.replace("_", "!", literal=True, n=1)
            )
            .otherwise(pl.col("job"))
        )
        rejected = rejected.with_columns(task.alias("task_id"))
        told = (  # of the rejected tasks only: out_tasks.csv holds every task
            pl.scan_csv(outputs.path(TASKS), schema_overrides={"note": pl.String})
            .select("task_id", "outcome", "note")
            .join(rejected.lazy().select("task_id"), on="task_id", how="semi")
            .collect()
        )
        reasons = rejected.join(told, on="task_id", how="left").select(
            pl.when(pl.col("outcome").is_null())
            .then(pl.lit(BY_SCHEDULER))
            .when(pl.col("note").fill_null("") == "")
            .then(pl.col("outcome"))
            .otherwise(pl.concat_str("outcome", pl.lit(": "), "note"))
            .alias("reason")
        )
    else:
        asked = rejected.join(workload_jobs(workloads) if requests is None else requests, on="job", how="left")
        too_wide = pl.lit(False) if machines is None else pl.col("res").fill_null(1) > machines
        reason = (
            pl.when(too_wide)
            .then(pl.lit(TOO_WIDE))
            .when(pl.col("walltime").fill_null(-1) <= 0)
            .then(pl.lit(NO_WALLTIME))
            .otherwise(pl.lit(BY_SCHEDULER))
        )
        reasons = asked.select(reason.alias("reason"))
    counted = reasons.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
    return dict(counted.iter_rows())
