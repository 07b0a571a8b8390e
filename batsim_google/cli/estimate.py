"""``estimate``: a run's wall time and Batsim's peak memory, predicted from its inputs before launching."""

from __future__ import annotations

from pathlib import Path

import click

from batsim_google.cli.simulation_options import STREAM_WORKLOAD_OPTION

MB = 1 << 20


@click.command("estimate")
@click.argument("platform", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("workloads", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--horizon",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="run's --horizon: the jobs running then end together at it.",
)
@STREAM_WORKLOAD_OPTION
def estimate_command(
    platform: Path, workloads: tuple[Path, ...], horizon: float | None, stream_workload: bool | None
) -> None:
    """Predict the wall time and peak memory of `run` on PLATFORM with WORKLOADS (docs/benchmarks.md)."""
    from batsim_google.platform.simgrid_xml import check_master, check_simgrid_accepts, read_hosts
    from batsim_google.simulation.cost_model import (
        COEFFICIENTS,
        MEASURED_BURST,
        MEASURED_ON,
        cell_capacity,
        estimate,
        read_contention,
        read_workload_cost,
        too_large_to_load,
    )

    cost = read_workload_cost(*workloads, horizon=horizon)
    hosts = read_hosts(platform)
    check_simgrid_accepts(platform, smpi=False)  # a platform `run` refuses has no run to predict;
    check_master(platform, hosts)  # in run's order (delay jobs only: no SMPI)
    machines = sum(host.computes for host in hosts)
    contention = read_contention(*workloads, capacity=cell_capacity(hosts), horizon=horizon)
    # as run decides: asked, or where the workload loaded whole would not fit
    too_large = {kind: too_large_to_load(cost, machines, kind) for kind in COEFFICIENTS}
    streamed = {
        kind: too_large[kind] is not None if stream_workload is None else stream_workload for kind in COEFFICIENTS
    }
    predicted = {kind: estimate(cost, machines, kind, contention, streamed[kind]) for kind in COEFFICIENTS}
    click.echo(
        f"{machines} machines, {cost.jobs} jobs submitted until {cost.horizon:.0f} s: {cost.steps} steps, "
        f"{cost.job_steps:.4g} job-steps, at most {cost.peak_running} jobs at once, largest burst {cost.largest_burst}"
    )
    click.echo(
        f"contention on the cell's capacity: {contention.restarts:.0f} restarts, a queue of up to {contention.peak_queue} "
        f"tasks, {contention.queued_task_steps:.4g} queued task-steps over {contention.steps:.0f} steps played"
    )
    for kind, figures in predicted.items():
        chosen = too_large[kind] if stream_workload is None else None
        click.echo(
            f"predicted with the {kind} Batsim: {figures.wall_seconds:.0f} s of wall time, "
            f"Batsim's peak memory {figures.peak_bytes / MB:.0f} MB"
            + (", the workload streamed" if streamed[kind] else "")
            + (f" (loaded whole, it would take over half the {chosen[1] / MB:.0f} MB available)" if chosen else "")
        )
    click.echo(
        f"(coefficients measured on {MEASURED_ON}; the contention played on the cell's summed capacity, "
        "without packing; see docs/benchmarks.md)"
    )
    if cost.largest_burst > MEASURED_BURST:
        click.echo(
            f"warning: {cost.largest_burst} jobs submitted at one instant: bursts of more than {MEASURED_BURST} "
            "cost the stock Batsim more than predicted (docs/benchmarks.md); its wall time is a lower bound",
            err=True,
        )
