"""``run``: simulate workloads in Batsim with the Google-cell scheduler."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from batsim_google.cli.common import BATSIM_OPTION, fail, show_progress, warmup_option
from batsim_google.cli.metrics import summary_lines
from batsim_google.cli.policy_options import policy_options
from batsim_google.cli.scheduler_option import parse_scheduler, scheduler_options
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S, FRONTENDS, SimulationError


@click.command()
@click.option(
    "--platform",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="SimGrid platform XML.",
)
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Batsim JSON workload (repeatable).",
)
@click.option(
    "--events",
    "events",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Batsim external events: machine failures, user kills (repeatable).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for Batsim's outputs and the scheduler's accounting.",
)
@policy_options
@scheduler_options
@warmup_option
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Wall-clock limit of the simulation, seconds.",
)
@click.option(
    "--energy-outputs/--no-energy-outputs",
    default=None,
    help="Batsim's energy plugin (-E) and its outputs (default: on where the platform gives its hosts power figures).",
)
@BATSIM_OPTION
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar over simulated time (default: on a terminal)."
)
@click.option(
    "--frontend",
    type=click.Choice(FRONTENDS),
    default="pybatsim",
    show_default=True,
    help="Protocol library between Batsim and the policy (batsim-py: restart 'none', no events; see docs/batsim-py.md).",
)
def run(
    platform,
    workloads,
    events,
    output,
    warmup,
    timeout,
    energy_outputs,
    batsim_binary,
    progress,
    frontend,
    scheduler_text,
    scheduler_options,
    scheduler_needs,
    **policy,
) -> None:
    """Simulate workloads with Batsim and the Google-cell scheduler (or --scheduler); exit 1 if accounting fails."""
    from batsim_google.experiments.metrics import run_metrics, write_metrics
    from batsim_google.experiments.outputs import RunOutputs
    from batsim_google.experiments.window import window_of

    try:
        window = window_of(warmup, policy["horizon"])
    except ValueError as error:
        fail(str(error))
    scheduler = None
    if scheduler_text is not None:
        changed = [name for name, value in policy.items() if value != getattr(PolicyConfig, name)]
        if changed or frontend != "pybatsim":
            option = f"--{changed[0].replace('_', '-')}" if changed else "--frontend"
            fail(f"{option} is an option of the built-in scheduler; --scheduler runs another one")
        scheduler = parse_scheduler(scheduler_text, scheduler_options, scheduler_needs)
    energy_outputs = _before_start(platform, workloads, scheduler, energy_outputs, frontend)
    if scheduler is not None:
        summary = _run_other(
            scheduler, platform, workloads, events, output, timeout, energy_outputs, batsim_binary, progress
        )
    else:
        summary = _run_built_in(
            platform, workloads, events, output, timeout, energy_outputs, batsim_binary, progress, frontend, policy
        )
    try:
        metrics = run_metrics(RunOutputs(output), platform, window, workloads)
    except ValueError as error:
        fail(str(error))
    for line in summary_lines(metrics):
        click.echo(line)
    if metrics["not_restarted"]:
        click.echo(
            f"{metrics['not_restarted']} task(s) stopped and not restarted (--restart {policy['restart']}, "
            f"--max-restarts {policy['max_restarts']}): their work is lost"
        )
    click.echo(f"outputs in {output} (metrics in {write_metrics(output, metrics)})")
    if summary is not None and not summary["balanced"]:
        click.echo(f"accounting does not balance: {summary['open']} task(s) never ended", err=True)
        sys.exit(1)


def _before_start(platform: Path, workloads, scheduler, energy_outputs: bool | None, frontend: str) -> bool:
    """Say whether energy is measured and what the scheduler will reject; refuse what cannot run
    (:mod:`batsim_google.simulation.preflight`). Returns whether Batsim's energy plugin runs."""
    from batsim_google.platform.simgrid_xml import energy_model_gap, read_hosts
    from batsim_google.simulation.preflight import energy_choice, preflight

    kind, target = ("policy", None) if scheduler is None else (scheduler.kind, scheduler.target)
    try:
        hosts = read_hosts(platform)
        gap = energy_model_gap(hosts)
        if frontend == "batsim-py" and gap:  # it always runs Batsim with -E
            fail(
                f"--frontend batsim-py runs Batsim with its energy plugin (-E), and {platform} has no energy model "
                f"({gap}): use --frontend pybatsim"
            )
        energy, line = energy_choice(hosts, energy_outputs, platform)
        limits = preflight(platform, hosts, list(workloads), kind, target)
    except ValueError as error:
        fail(str(error))
    click.echo(line)
    for limit in limits:
        click.echo(f"warning: {limit}", err=True)
    return energy


def _run_other(
    scheduler, platform, workloads, events, output, timeout, energy_outputs, batsim_binary, progress
) -> dict | None:
    """Run a scheduler of another kind; its ledger's summary when it keeps one."""
    from batsim_google.simulation.external import run_scheduler
    from batsim_google.simulation.schedulers import REPORTS_PROGRESS

    if progress and scheduler.kind not in REPORTS_PROGRESS:
        click.echo(
            f"warning: no progress bar: a {scheduler.kind} scheduler does not report its simulated time", err=True
        )

    try:
        summary = run_scheduler(
            scheduler,
            platform,
            list(workloads),
            output,
            events=list(events),
            timeout=timeout,
            batsim=batsim_binary,
            energy=energy_outputs,
            progress=show_progress(progress),
            warn=lambda message: click.echo(f"warning: {message}", err=True),
        ).summary
    except SimulationError as error:
        raise click.ClickException(str(error)) from error
    except ValueError as error:  # a pairing refused, a policy that does not load
        fail(str(error))
    if summary is not None:
        _echo_summary(summary)
    return summary


def _run_built_in(
    platform, workloads, events, output, timeout, energy_outputs, batsim_binary, progress, frontend, policy
) -> dict:
    from batsim_google.simulation.run import run_google_cell

    try:
        summary = run_google_cell(
            platform,
            list(workloads),
            output,
            policy,
            events=list(events),
            timeout=timeout,
            batsim=batsim_binary,
            energy=energy_outputs,
            progress=show_progress(progress),
            frontend=frontend,
            warn=lambda message: click.echo(f"warning: {message}", err=True),
        ).summary
    except ImportError as error:
        fail(f"--frontend {frontend} needs the batsim-py extra (uv sync --extra batsim-py): {error}")
    except SimulationError as error:
        raise click.ClickException(str(error)) from error
    except ValueError as error:  # what the batsim-py front-end cannot run
        fail(str(error))
    _echo_summary(summary)
    return summary


def _echo_summary(summary: dict) -> None:
    outcomes = ", ".join(f"{count} {name}" for name, count in summary["outcomes"].items() if count)
    click.echo(f"{summary['submitted']} tasks: {outcomes}; {summary['attempts']} attempts")
