"""The energy of the load, which Batsim does not see.

Every job is a ``delay`` profile: Batsim waits for it, and to SimGrid its host stays idle. So
Batsim's energy (``-E``) bills each host at its idle, sleep, off and switching power only. SimGrid's
model of a computing host (``wattage_per_state`` "idle:epsilon:full" of pstate 0; "idle:full"
means epsilon = idle) draws idle at no load and epsilon + (full - epsilon) x load otherwise, the
load being the share of the host busy. Here the load of a host is the sum of the normalized CPU
requests of the jobs it runs over its ``cpu_capacity``, at most 1 (CPU may be over-committed).
What the load adds to Batsim's figure is, per host, the integral over the run of
(epsilon - idle) while it runs any job (even one asking for no CPU) plus (full - epsilon) x load.

The cap has a direction: CPU requested past a machine's capacity costs no energy, so a scheduler
that over-commits is billed less per CPU-hour it runs than one that does not, a modelling choice
and not the policy's merit. :func:`overcommit` measures how far a run went past it: the
CPU-seconds allocated above the machines' capacities (what the load's energy leaves unbilled) and
the highest load a machine reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.platform.simgrid_xml import PlatformHost, pstate_watts


def computing_watts(host: PlatformHost) -> tuple[float, float, float] | None:
    """(idle, epsilon, full) watts of the host's computing pstate, None without an energy model."""
    watts = pstate_watts(host)
    return None if watts is None else watts[0]


class Overcommit(NamedTuple):
    """How far a run's machines were loaded past their capacity."""

    #: CPU-seconds allocated above the machines' ``cpu_capacity`` (unbilled by the load's energy)
    cpu_s: float
    #: the highest CPU allocated over ``cpu_capacity`` of any machine at any time (0: no job)
    peak_load: float


def load_steps(jobs: pl.DataFrame, capacities: Sequence[float]) -> pl.DataFrame:
    """Per machine, its load between two of its job starts and ends: ``machine``, ``capacity``,
    ``time``, ``level`` (CPU allocated over capacity, not capped), ``running`` (jobs) and
    ``duration`` (seconds until the machine's next step). ``jobs``: as :func:`load_energy` takes.
    The over-commit and the load's energy read the same steps: a week of the whole cell has 12 million."""
    unknown = jobs.filter(~pl.col("machine").is_between(0, len(capacities) - 1))
    if unknown.height:
        raise InputFileError(
            f"a job ran on machine {unknown['machine'][0]}, but the platform has {len(capacities)} compute hosts"
        )
    capacity = pl.DataFrame(
        {"machine": range(len(capacities)), "capacity": [float(c) for c in capacities]},
        schema={"machine": pl.Int64, "capacity": pl.Float64},
    )
    share = jobs.join(capacity, on="machine", how="left").select(
        "machine", "starting_time", "finish_time", (pl.col("cpu") / pl.col("capacity")).alias("load")
    )
    # +1 job and +load at a start, -1 and -load at a finish; between two steps, what runs is constant
    steps = pl.concat(
        [
            share.select("machine", pl.col("starting_time").alias("time"), "load", pl.lit(1).alias("jobs")),
            share.select("machine", pl.col("finish_time").alias("time"), -pl.col("load"), pl.lit(-1).alias("jobs")),
        ]
    ).sort("machine", "time")
    return steps.with_columns(
        pl.col("load").cum_sum().over("machine").clip(lower_bound=0.0).alias("level"),  # clip: float residue
        pl.col("jobs").cum_sum().over("machine").alias("running"),
        (pl.col("time").shift(-1).over("machine") - pl.col("time")).fill_null(0.0).alias("duration"),
    ).join(capacity, on="machine", how="left")


def _capacities(hosts: Sequence[PlatformHost]) -> list[float]:
    return [float(host.properties.get("cpu_capacity", 1.0)) for host in hosts]


def load_energy(jobs: pl.DataFrame, hosts: Sequence[PlatformHost], steps: pl.DataFrame | None = None) -> float | None:
    """Joules the load adds to Batsim's energy. ``jobs``: one row per job that ran, with
    ``machine`` (resource id), ``starting_time``, ``finish_time`` and its task's ``cpu``; ``hosts``:
    the compute hosts in resource order; ``steps``: :func:`load_steps` of the ``jobs``, when
    already built. None when a host has no energy model."""
    watts = [computing_watts(host) for host in hosts]
    if any(w is None for w in watts):
        return None
    power = pl.DataFrame(
        {
            "machine": range(len(hosts)),
            "idle": [w[0] for w in watts],
            "epsilon": [w[1] for w in watts],
            "full": [w[2] for w in watts],
        },
        schema_overrides={"machine": pl.Int64},
    )
    steps = (load_steps(jobs, _capacities(hosts)) if steps is None else steps).join(power, on="machine", how="left")
    capped = pl.col("level").clip(upper_bound=1.0)  # the cap (see the module)
    extra = (
        pl.when(pl.col("running") > 0)
        .then(pl.col("epsilon") - pl.col("idle") + (pl.col("full") - pl.col("epsilon")) * capped)
        .otherwise(0.0)
    )
    return float(steps.select((extra * pl.col("duration")).sum()).item())


def overcommit(jobs: pl.DataFrame, capacities: Sequence[float], steps: pl.DataFrame | None = None) -> Overcommit:
    """How far ``jobs`` (as :func:`load_energy` takes) loaded machines of these ``capacities``
    (resource order) past them (see the module); ``steps``: :func:`load_steps` of them, when
    already built."""
    steps = load_steps(jobs, capacities) if steps is None else steps
    above = ((pl.col("level") - 1.0).clip(lower_bound=0.0) * pl.col("capacity") * pl.col("duration")).sum()
    # a level held for no time (a job ending as another starts) is not a load reached
    peak = pl.col("level").filter(pl.col("duration") > 0).max()
    cpu_s, peak_load = steps.select(above.alias("above"), peak.alias("peak")).row(0)
    return Overcommit(float(cpu_s or 0.0), float(peak_load or 0.0))
