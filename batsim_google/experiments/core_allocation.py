"""Batsim's jobs with one resource per *core*, for tools that take a job's resources as its own.

evalys (and any reader of ``out_jobs.csv``) takes a job's ``allocated_resources`` as machines it
holds alone. Here tasks share machines: every task on a machine is allocated that machine, so
evalys's Gantt chart stacks them on one row and its utilization counts each as a whole machine
(hundreds of machines busy on a cell of 128). This export splits each machine into ``cores``
virtual cores per unit of ``cpu_capacity`` (``round(capacity x cores)`` cores for a machine) and
gives each job ``floor(cpu request x cores)`` of its machine's cores, free while it runs (lowest
ids first, not necessarily contiguous): a view in which a resource is busy once at a time, so
evalys's utilization is the cell's CPU utilization and its Gantt chart shows each machine as a
band of cores.

Left out: jobs asking for less than one core (their CPU request under 1 / ``cores``; counted), and
on a machine whose CPU is over-committed, a job that starts while others hold every core (counted).
A job that finds some of its cores held gets those free, and is counted as short of cores. Only this package's runs carry the CPU requests (the ledger).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.experiments.outputs import JOBS, RunOutputs, started_jobs
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.simulation.run_platform import check_run_platform


@dataclass(frozen=True)
class CoreAllocation:
    """The jobs, one row per job that got a core (Batsim's columns, ``allocated_resources`` in
    cores), and what was left out."""

    jobs: pl.DataFrame
    cores: int
    too_small: int
    no_core_free: int
    short_of_cores: int


def interval_text(ids: np.ndarray) -> str:
    """Sorted ids as Batsim's interval set text, e.g. ``0-3 7 9-10``."""
    if ids.size == 0:
        return ""
    breaks = np.flatnonzero(np.diff(ids) != 1)
    starts = np.concatenate([[ids[0]], ids[breaks + 1]])
    ends = np.concatenate([ids[breaks], [ids[-1]]])
    return " ".join(str(a) if a == b else f"{a}-{b}" for a, b in zip(starts.tolist(), ends.tolist()))


def core_allocation(outputs: RunOutputs, platform: str | Path, cores: int) -> CoreAllocation:
    """Allocate cores to the run's jobs (see the module)."""
    if not outputs.has_ledger():
        raise InputFileError(f"{outputs.directory}: no scheduler accounting here: the tasks' CPU requests are unknown")
    hosts = compute_hosts(platform)
    check_run_platform(Path(outputs.directory), Path(platform), hosts)
    machine_cores = np.array([round(float(h.properties.get("cpu_capacity", 1.0)) * cores) for h in hosts])
    first_core = np.concatenate([[0], np.cumsum(machine_cores)[:-1]])
    jobs = started_jobs(outputs).join(outputs.tasks().select("task_id", "cpu"), on="task_id", how="left")
    if jobs.height and int(jobs["machine"].max()) >= len(hosts):
        raise InputFileError(
            f"{platform}: {len(hosts)} compute hosts, but a job ran on machine {jobs['machine'].max()}"
        )
    wanted = np.floor(jobs["cpu"].fill_null(0.0).to_numpy() * cores + 1e-9).astype(np.int64)
    allocated = [""] * jobs.height
    got = np.zeros(jobs.height, dtype=np.int64)
    short = none = 0
    for machine in np.unique(jobs["machine"].to_numpy()):
        rows = np.flatnonzero((jobs["machine"].to_numpy() == machine) & (wanted > 0))
        free = np.ones(machine_cores[machine], dtype=bool)
        held: dict[int, np.ndarray] = {}
        starts, finishes = jobs["starting_time"].to_numpy()[rows], jobs["finish_time"].to_numpy()[rows]
        # ends before starts at one time: a core freed at t can be taken at t
        events = sorted([(f, 0, r) for f, r in zip(finishes, rows)] + [(s, 1, r) for s, r in zip(starts, rows)])
        for _, is_start, row in events:
            if not is_start:
                free[held.pop(row)] = True
                continue
            ids = np.flatnonzero(free)[: wanted[row]]
            none += ids.size == 0
            short += 0 < ids.size < wanted[row]
            free[ids] = False
            held[row] = ids
            got[row] = ids.size
            allocated[row] = interval_text(ids + first_core[machine])
    batsim = pl.read_csv(outputs.path(JOBS), infer_schema_length=0).with_columns(
        pl.concat_str("workload_name", pl.lit("!"), "job_id").alias("job")
    )
    cores_of = pl.DataFrame({"job": jobs["job"], "allocated": allocated, "count": got}).filter(
        pl.col("allocated") != ""
    )
    export = batsim.join(cores_of, on="job", how="inner", maintain_order="left").with_columns(
        pl.col("allocated").alias("allocated_resources"),
        pl.col("count").cast(pl.String).alias("requested_number_of_resources"),
    )
    return CoreAllocation(
        export.drop("job", "allocated", "count"),
        int(machine_cores.sum()),
        int((wanted == 0).sum()),
        int(none),
        int(short),
    )
