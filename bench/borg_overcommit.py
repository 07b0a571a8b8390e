"""Derivation: how far past its capacity Borg let a machine's requests go, tier by tier.

Prints the figures behind the scheduler's ``free_tier_overcommit`` (docs/faithful-replay.md,
"The free tier's over-commit"): at instants every ``--every`` s of the trace's task_events parts,
the CPU and memory requested by the tasks running, above the free tier (Google priorities 2-11) and
of the free tier (0-1), against the cell's capacity; then per machine, against the published
capacities given by rank (the machine requesting the most CPU gets the largest CPU: the assignment
with the lowest over-commit the published mix allows; the parts have no machine_events), the
quantiles of each tier's CPU over its machine's, how the free tier fills what the tiers above leave
(by bins of the tiers above), the machines holding free-tier tasks, and the limit: the 99th
percentile of a machine's requested CPU over its capacity, pooled over the instants.

    uv run python -m bench.borg_overcommit [--trace ../shared/data/google-2011] [--every 1800]

With ``--generated N``, it also places a generated warm start (``--preset``, on N machines of the
cell's mix, seed ``--seed``) as the scheduler does at t = 0, with the free tier's over-commit and
without it (within capacity), and prints the same per-machine quantiles: what the rule gives a
generated cell against what Borg held.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

from bench.borg_bursts import events, stays

#: The highest Google priority of the free tier.
FREE_TIER_TOP = 1
QUANTILES = (1, 10, 25, 50, 75, 90, 99)


def running_at(stay: pl.DataFrame, instant: float) -> pl.DataFrame:
    """Per machine, the CPU and memory requested above the free tier and by it at ``instant``."""
    running = stay.filter((pl.col("start") <= instant) & (pl.col("end") > instant) & pl.col("machine").is_not_null())
    free = pl.col("priority") <= FREE_TIER_TOP
    return running.group_by("machine").agg(
        pl.col("cpu").filter(~free).sum().alias("above_cpu"),
        pl.col("memory").filter(~free).sum().alias("above_memory"),
        pl.col("cpu").filter(free).sum().alias("free_cpu"),
        pl.col("memory").filter(free).sum().alias("free_memory"),
        free.sum().alias("free_tasks"),
    )


def capacities_by_rank(requested: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """The capacity each machine gets: the largest to the one requesting the most (ties: first
    seen), which makes the largest ratio of requests to capacity as small as it can be."""
    given = np.empty(requested.size)
    given[np.argsort(-requested, kind="stable")] = np.sort(capacities)[::-1][: requested.size]
    return given


def quantiles(values: np.ndarray) -> str:
    return " ".join(f"{v:6.3f}" for v in np.percentile(values, QUANTILES))


def report_trace(trace: Path, every: float) -> float:
    """Print the trace's figures; returns the limit (99th percentile of requested CPU over capacity)."""
    from batsim_google.platform.cell import google_2011_cell

    cell = google_2011_cell().machines
    cpu_capacity, memory_capacity = cell["cpu"].to_numpy(), cell["memory"].to_numpy()
    stay = stays(events(trace))
    span = float(stay["start"].max())
    print(f"cell: {cpu_capacity.size:,} machines, CPU {cpu_capacity.sum():,.1f}, memory {memory_capacity.sum():,.1f}")
    print(
        "instant (s)   machines  CPU above / free / total of capacity   memory above / free / total   machines with free tier"
    )
    pooled: dict[str, list[np.ndarray]] = {"above": [], "free": [], "total": []}
    by_above: list[tuple[np.ndarray, np.ndarray]] = []
    for instant in np.arange(0.0, span, every):
        machines = running_at(stay, instant)
        above, free = machines["above_cpu"].to_numpy(), machines["free_cpu"].to_numpy()
        above_memory, free_memory = machines["above_memory"].to_numpy(), machines["free_memory"].to_numpy()
        cpu, memory = cpu_capacity.sum(), memory_capacity.sum()
        holding = (machines["free_tasks"] > 0).sum()
        print(
            f"{instant:>11,.0f} {machines.height:>10,}  {above.sum() / cpu:.3f} / {free.sum() / cpu:.3f} / "
            f"{(above + free).sum() / cpu:.3f}                    {above_memory.sum() / memory:.3f} / "
            f"{free_memory.sum() / memory:.3f} / {(above_memory + free_memory).sum() / memory:.3f}"
            f"         {holding:,} ({holding / machines.height:.1%})"
        )
        capacity = capacities_by_rank(above + free, cpu_capacity)
        pooled["above"].append(above / capacity)
        pooled["free"].append(free / capacity)
        pooled["total"].append((above + free) / capacity)
        half = capacity == 0.5
        by_above.append((above[half], free[half]))
    print(f"\nper machine, requested CPU over its capacity (by rank), pooled; percentiles {QUANTILES}:")
    for name, values in pooled.items():
        print(f"  {name:<6}{quantiles(np.concatenate(values))}")
    total = np.concatenate(pooled["total"])
    print(f"  machines past their capacity: {(total > 1).mean():.1%}")
    above, free = (np.concatenate(side) for side in zip(*by_above, strict=True))
    print(
        f"\nthe free tier fills what the tiers above leave (machines of CPU 0.5; correlation of the tiers' CPU "
        f"{np.corrcoef(above, free)[0, 1]:.2f}):"
    )
    print("  tiers above (CPU)   free tier median / 90th    machine's total median / 90th")
    edges = np.quantile(above, np.linspace(0, 1, 6))
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        within = (above >= low) & (above <= high)
        print(
            f"  {low:.3f} - {high:.3f}       {np.median(free[within]):.3f} / {np.quantile(free[within], 0.9):.3f}"
            f"             {np.median(above[within] + free[within]):.3f} / "
            f"{np.quantile(above[within] + free[within], 0.9):.3f}"
        )
    limit = float(np.percentile(total, 99))
    print(f"\nlimit: a machine's requested CPU at most {limit:.3f} times its capacity (99th percentile)")
    return limit


def report_generated(machines: int, preset_name: str, seed: int, limit: float) -> None:
    """Place a generated warm start at t = 0 as the scheduler does, with the free tier's over-commit
    ``limit`` and within capacity (1), and print the per-machine figures of :func:`report_trace`."""
    import json
    import tempfile

    from batsim_google.experiments.model_validation import ModelWindow, write_window_workload
    from batsim_google.model.presets import preset
    from batsim_google.platform.cell import google_2011_cell
    from batsim_google.scheduling.cluster import Cluster
    from batsim_google.scheduling.initial_placement import initial_placements
    from batsim_google.scheduling.policy import FREE_TIER
    from batsim_google.scheduling.tasks import JobRequest, Task

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workload.json"
        write_window_workload(path, preset(preset_name), ModelWindow(0.0, 3600.0, seed, machines))
        jobs = [job for job in json.loads(path.read_text())["jobs"] if job.get("initial") == "running"]
    cell = google_2011_cell(machines).machines
    cpu_capacity, memory_capacity = cell["cpu"].to_numpy(), cell["memory"].to_numpy()
    free = np.array([job["priority"] <= FREE_TIER for job in jobs])
    cpu = np.array([job["cpu"] for job in jobs])
    print(
        f"\ngenerated warm start ({preset_name}, {machines:,} machines, seed {seed}): {len(jobs):,} tasks, CPU above / "
        f"free {cpu[~free].sum() / cpu_capacity.sum():.3f} / {cpu[free].sum() / cpu_capacity.sum():.3f} of capacity"
    )
    print(f"per machine, requested CPU over its capacity; percentiles {QUANTILES}:")
    for ratio in (limit, 1.0):
        cluster = Cluster(cpu_capacity, memory_capacity, free_tier_room=True, free_tier_overcommit=ratio)
        tasks = [
            Task(
                JobRequest(str(job["id"]), 0.0, "task", job["priority"], job["cpu"], job["memory"], 1.0), str(job["id"])
            )
            for job in jobs
        ]
        started = 0
        for task, machine in initial_placements(cluster, tasks, "best-fit", FREE_TIER):
            if machine >= 0:
                request = task.request
                cluster.allocate(machine, request.cpu, request.memory, request.priority <= FREE_TIER)
                started += 1
        above = (cluster.cpu_used - cluster.free_tier_cpu) / cpu_capacity
        held = cluster.free_tier_cpu / cpu_capacity
        print(f"  free tier's over-commit {ratio:g}: {started:,} of {len(jobs):,} tasks started")
        for name, values in (("above", above), ("free", held), ("total", cluster.cpu_used / cpu_capacity)):
            print(f"    {name:<6}{quantiles(values)}")
        print(f"    machines holding free-tier tasks: {(cluster.free_tier_cpu > 0).mean():.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=Path("../shared/data/google-2011"))
    parser.add_argument("--every", type=float, default=1800.0, help="seconds between instants")
    parser.add_argument("--generated", type=int, metavar="N", help="also place a generated warm start on N machines")
    parser.add_argument("--preset", default="google-2011-cell", help="the model of --generated")
    parser.add_argument("--seed", type=int, default=1, help="the seed of --generated")
    args = parser.parse_args()
    limit = report_trace(args.trace, args.every)
    if args.generated:
        report_generated(args.generated, args.preset, args.seed, round(limit, 2))


if __name__ == "__main__":
    main()
