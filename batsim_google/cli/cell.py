"""Commands about the cell: ``platform``, ``failures``, and ``run``, which simulates it in Batsim."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import numpy as np

from ..batsim_events import write_availability_events
from ..cell import google_2011_cell
from ..energy import load_energy_model
from ..failures import DAY, TRACE_DAYS, FailureLaw, draw_failures
from ..platform import compute_hosts, write_platform
from ..runner import SimulationError
from ..scheduling.placement import PLACEMENTS
from ..scheduling.policy import ENERGY_POLICIES, RESTARTS
from ..simulate import FRONTENDS, run_google_cell
from ..trace.machines import MachineHistory, read_machine_history
from .common import BATSIM_OPTION, TRACE_PATH, fail, show_progress


@click.command()
@click.option("--platform", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True, help="SimGrid platform XML.")
@click.option("--workload", "workloads", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Batsim JSON workload (repeatable).")
@click.option("--events", "events", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Batsim external events: machine failures, user kills (repeatable).")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for Batsim's outputs and the scheduler's accounting.")
@click.option("--placement", type=click.Choice(list(PLACEMENTS)), default="best-fit", show_default=True)
@click.option("--overcommit", type=click.FloatRange(min=1.0), default=1.0, show_default=True, help="CPU over-commit ratio (memory never is).")
@click.option("--preemption/--no-preemption", default=True, show_default=True, help="Evict lower priorities for a task that fits nowhere.")
@click.option("--priority-levels", type=click.IntRange(min=0), default=12, show_default=True, help="Evict only tasks of a lower level of ]0,1] cut in this many bands (Google's 12); 0: any lower priority.")
@click.option("--restart", type=click.Choice(list(RESTARTS)), default="immediate", show_default=True, help="What evicted tasks do.")
@click.option("--restart-delay", type=click.FloatRange(min=0), default=0.0, show_default=True, help="Seconds suspended before a 'delayed' restart.")
@click.option("--max-restarts", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--resume/--from-scratch", default=False, show_default=True, help="Restart with the work left, or all of it.")
@click.option("--energy", type=click.Choice(list(ENERGY_POLICIES)), default="always-on", show_default=True)
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True, help="Seconds idle before a machine sleeps (idle-sleep).")
@click.option("--wake-before-evicting/--evict-before-waking", default=False, show_default=True, help="idle-sleep: a task that fits nowhere awake waits for a sleeping machine to wake rather than evict.")
@click.option("--timeout", type=click.FloatRange(min=1), default=3600.0, show_default=True, help="Wall-clock limit of the simulation, seconds.")
@click.option("--energy-outputs/--no-energy-outputs", default=True, show_default=True, help="Batsim's energy plugin (-E) and its outputs; needs a platform with an energy model.")
@BATSIM_OPTION
@click.option("--progress/--no-progress", default=None, help="Progress bar over simulated time (default: on a terminal).")
@click.option("--frontend", type=click.Choice(FRONTENDS), default="pybatsim", show_default=True, help="Protocol library between Batsim and the policy (batsim-py: restart 'none', no events; see README).")
def run(platform, workloads, events, output, placement, overcommit, preemption, priority_levels, restart, restart_delay, max_restarts, resume, energy, idle_timeout, wake_before_evicting, timeout, energy_outputs, batsim_binary, progress, frontend) -> None:
    """Simulate workloads with Batsim and the Google-cell scheduler; exit 1 if accounting fails."""
    policy = {
        "placement": placement, "cpu_overcommit": overcommit, "preemption": preemption, "priority_levels": priority_levels,
        "restart": restart, "restart_delay": restart_delay, "max_restarts": max_restarts,
        "resume": resume, "energy": energy, "idle_timeout": idle_timeout, "wake_before_evicting": wake_before_evicting,
    }
    try:
        summary = run_google_cell(
            platform, list(workloads), output, policy, events=list(events), timeout=timeout,
            batsim=batsim_binary, energy=energy_outputs, progress=show_progress(progress),
            frontend=frontend,
        ).summary
    except ImportError as error:
        fail(f"--frontend {frontend} needs the batsim-py extra (uv sync --extra batsim-py): {error}")
    except SimulationError as error:
        raise click.ClickException(str(error)) from error
    except ValueError as error:  # what the batsim-py front-end cannot run
        fail(str(error))
    outcomes = ", ".join(f"{count} {name}" for name, count in summary["outcomes"].items() if count)
    click.echo(f"{summary['submitted']} tasks: {outcomes}; {summary['attempts']} attempts")
    click.echo(f"outputs in {output}")
    if not summary["balanced"]:
        click.echo(f"accounting does not balance: {summary['open']} task(s) never ended", err=True)
        sys.exit(1)


def _machine_history(trace: Path, strict: bool) -> MachineHistory:
    try:
        history = read_machine_history([trace], strict=strict)
    except ValueError as error:
        fail(str(error))
    click.echo(history.accounting())
    if history.capacity_changes:
        click.echo(
            f"{history.capacity_changes} rows (UPDATE, or ADD of a returning machine) change a machine's platform "
            "or capacities; hosts keep those each machine had when it joined"
        )
    return history


@click.command("platform")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="SimGrid platform XML to write.")
@click.option("--machines", type=click.IntRange(min=1), help="A scaled cell of this many machines, in the 2011 cell's proportions.")
@click.option("--machine-events", "trace", type=TRACE_PATH, help="Build the cell from a trace's machine_events (trace folder or part file).")
@click.option("--energy", "energy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Energy figures overriding the defaults (.toml or .json).")
@click.option("--strict", is_flag=True, help="With --machine-events: stop at the first bad row instead of skipping it.")
def platform_command(output: Path, machines: int | None, trace: Path | None, energy_file: Path | None, strict: bool) -> None:
    """Write a SimGrid/Batsim platform of the Google cell (default: the full 2011 cell)."""
    if machines and trace:
        fail("give --machines or --machine-events, not both")
    try:
        energy = load_energy_model(energy_file)
        cell = _machine_history(trace, strict).cell if trace else google_2011_cell(machines)
    except ValueError as error:
        fail(str(error))
    write_platform(output, cell, energy)
    counts = cell.machines.group_by("platform_id", maintain_order=True).len().iter_rows()
    click.echo(f"wrote {len(cell)} machines + 1 master to {output} (" + ", ".join(f"{p}: {n}" for p, n in counts) + ")")


@click.command("failures")
@click.argument("platform_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Batsim events file (JSON lines) to write.")
@click.option("--horizon", type=click.FloatRange(min=0, min_open=True), help=f"Only events before this time, seconds [default: {TRACE_DAYS} days with a failure law, none with --machine-events].")
@click.option("--seed", type=click.IntRange(min=0), help="Seed of the random generator [default: 0].")
@click.option("--mtbf", type=click.FloatRange(min=0, min_open=True), help=f"Mean time between failures of a machine, seconds [default: {FailureLaw.mean_time_between_failures:.0f}].")
@click.option("--mtbf-shape", type=click.FloatRange(min=0, min_open=True), help="Weibull shape of the time between failures [default: 1, exponential].")
@click.option("--mttr", type=click.FloatRange(min=0, min_open=True), help=f"Mean repair time, seconds [default: {FailureLaw.mean_repair_time:.0f}].")
@click.option("--mttr-shape", type=click.FloatRange(min=0, min_open=True), help="Weibull shape of the repair time [default: 1, exponential].")
@click.option("--machine-events", "trace", type=TRACE_PATH, help="Take the events from a trace's machine_events instead (PLATFORM built from it).")
@click.option("--strict", is_flag=True, help="With --machine-events: stop at the first bad row instead of skipping it.")
def failures_command(platform_file, output, horizon, seed, mtbf, mtbf_shape, mttr, mttr_shape, trace, strict) -> None:
    """Write machine_unavailable/machine_available events for the machines of PLATFORM_FILE."""
    law_options = {
        "mean_time_between_failures": mtbf, "time_between_failures_shape": mtbf_shape,
        "mean_repair_time": mttr, "repair_time_shape": mttr_shape,
    }
    given = {name: value for name, value in law_options.items() if value is not None}
    try:
        hosts = compute_hosts(platform_file)
    except ValueError as error:
        fail(str(error))
    if trace:
        if given or seed is not None:
            fail("--machine-events takes the events from the trace: give no failure law or --seed")
        history = _machine_history(trace, strict)
        machine_ids = [host.properties.get("machine_id") for host in hosts]
        if machine_ids != [str(i) for i in history.cell.machines["machine_id"]]:
            fail(f"{platform_file} was not built from the machine_events of {trace} (compare its machine_id properties)")
        changes = history.changes if horizon is None else history.changes.before(horizon)
    else:
        changes = draw_failures(
            len(hosts), FailureLaw(**given), horizon or TRACE_DAYS * DAY, np.random.default_rng(0 if seed is None else seed)
        )
    lines = write_availability_events(output, changes)
    down = int((~changes.available).sum())
    click.echo(
        f"wrote {lines} events to {output}: {down} machine unavailabilities, "
        f"{len(changes) - down} returns, on {len(np.unique(changes.resource))} of the {len(hosts)} machines"
    )
