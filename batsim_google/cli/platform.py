"""Commands about the cell's machines: ``platform`` writes it, ``failures`` its machine events."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from batsim_google.cli.common import MACHINES, SEED, TRACE_PATH, NumberRange, checked_output_file, fail, fail_usage
from batsim_google.parameters import MAX_TIME_S
from batsim_google.platform.failures import LAW_KEYS, FailureLaw, law_value_problem
from batsim_google.platform.google_2011 import TRACE_DAYS
from batsim_google.units import DAY

if TYPE_CHECKING:
    from batsim_google.trace.machines import MachineHistory


def _machine_history(trace: Path, strict: bool) -> MachineHistory:
    from batsim_google.trace.machines import read_machine_history

    history = read_machine_history([trace], strict=strict)
    click.echo(history.accounting())
    if history.capacity_changes:
        click.echo(
            f"{history.capacity_changes} rows (UPDATE, or ADD of a returning machine) change a machine's platform "
            "or capacities; hosts keep those each machine had when it joined"
        )
    return history


@click.command("platform")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="SimGrid platform XML to write.",
)
@click.option(
    "--machines",
    type=MACHINES,
    help="A scaled cell of this many machines, in the 2011 cell's proportions.",
)
@click.option(
    "--machine-events",
    "trace",
    type=TRACE_PATH,
    help="Build the cell from a trace's machine_events (trace folder or part file).",
)
@click.option(
    "--energy",
    "energy_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Energy figures overriding the defaults (.toml or .json).",
)
@click.option("--strict", is_flag=True, help="With --machine-events: stop at the first bad row instead of skipping it.")
def platform_command(
    output: Path, machines: int | None, trace: Path | None, energy_file: Path | None, strict: bool
) -> None:
    """Write a SimGrid/Batsim platform of the Google cell (default: the full 2011 cell)."""
    from batsim_google.platform.cell import google_2011_cell
    from batsim_google.platform.energy import load_energy_model
    from batsim_google.platform.simgrid_xml import write_platform

    if machines and trace:
        fail_usage("give --machines or --machine-events, not both")
    checked_output_file(output, trace, energy_file)
    energy = load_energy_model(energy_file)
    cell = _machine_history(trace, strict).cell if trace else google_2011_cell(machines)
    write_platform(output, cell, energy)
    counts = cell.machines.group_by("platform_id", maintain_order=True).len().iter_rows()
    click.echo(f"wrote {len(cell)} machines + 1 master to {output} (" + ", ".join(f"{p}: {n}" for p, n in counts) + ")")


def _law_value(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A failure-law option checked by the law's own rules, the error naming the option."""
    problem = None if value is None else law_value_problem(LAW_KEYS[param.name], value)
    if problem:
        raise click.BadParameter(problem, ctx, param)
    return value


@click.command("failures")
@click.argument("platform_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Batsim events file (JSON lines) to write.",
)
@click.option(
    "--horizon",
    type=NumberRange(min=0, min_open=True, max=MAX_TIME_S),
    help=f"Only events before this time, seconds [default: {TRACE_DAYS} days with a failure law, none with --machine-events].",
)
@click.option("--seed", type=SEED, help="Seed of the random generator [default: 0].")
@click.option(
    "--mtbf",
    type=NumberRange(),
    callback=_law_value,
    help=f"Mean time between failures of a machine, seconds [default: {FailureLaw.mean_time_between_failures:.0f}].",
)
@click.option(
    "--mtbf-shape",
    type=NumberRange(),
    callback=_law_value,
    help="Weibull shape of the time between failures [default: 1, exponential].",
)
@click.option(
    "--mttr",
    type=NumberRange(),
    callback=_law_value,
    help=f"Mean repair time, seconds [default: {FailureLaw.mean_repair_time:.0f}].",
)
@click.option(
    "--mttr-shape",
    type=NumberRange(),
    callback=_law_value,
    help="Weibull shape of the repair time [default: 1, exponential].",
)
@click.option(
    "--machine-events",
    "trace",
    type=TRACE_PATH,
    help="Take the events from a trace's machine_events instead (PLATFORM built from it).",
)
@click.option("--strict", is_flag=True, help="With --machine-events: stop at the first bad row instead of skipping it.")
def failures_command(platform_file, output, horizon, seed, mtbf, mtbf_shape, mttr, mttr_shape, trace, strict) -> None:
    """Write machine_unavailable/machine_available events for the machines of PLATFORM_FILE."""
    import numpy as np

    from batsim_google.platform.batsim_events import write_availability_events
    from batsim_google.platform.failures import draw_failures
    from batsim_google.platform.simgrid_xml import compute_hosts

    law_options = {"mtbf": mtbf, "mtbf_shape": mtbf_shape, "mttr": mttr, "mttr_shape": mttr_shape}
    given = {LAW_KEYS[key]: value for key, value in law_options.items() if value is not None}
    if trace and (given or seed is not None):
        fail_usage("--machine-events takes the events from the trace: give no failure law or --seed")
    checked_output_file(output, platform_file, trace)
    hosts = compute_hosts(platform_file)
    if not hosts:
        fail(f"{platform_file}: no compute host (a <host> or <cluster> that is neither master nor storage)")
    if trace:
        history = _machine_history(trace, strict)
        machine_ids = [host.properties.get("machine_id") for host in hosts]
        if machine_ids != [str(i) for i in history.cell.machines["machine_id"]]:
            fail(
                f"{platform_file} was not built from the machine_events of {trace} (compare its machine_id properties)"
            )
        changes = history.changes if horizon is None else history.changes.before(horizon)
    else:
        changes = draw_failures(
            len(hosts),
            FailureLaw(**given),
            horizon or TRACE_DAYS * DAY,
            np.random.default_rng(0 if seed is None else seed),
        )
    lines = write_availability_events(output, changes)
    down = int((~changes.available).sum())
    click.echo(
        f"wrote {lines} events to {output}: {down} machine unavailabilities, "
        f"{len(changes) - down} returns, on {len(np.unique(changes.resource))} of the {len(hosts)} machines"
    )
