"""``run``: simulate workloads in Batsim with the Google-cell scheduler."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from batsim_google.cli.common import fail, warmup_option
from batsim_google.cli.metrics import summary_lines
from batsim_google.cli.policy_options import policy_options
from batsim_google.cli.scheduler_option import parse_scheduler, scheduler_options
from batsim_google.cli.simulation_options import simulation_call, simulation_options
from batsim_google.output_files import locked_folder
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.batsim_binary import LOG_LEVELS
from batsim_google.simulation.batsim_binary import batsim_binary as batsim_program
from batsim_google.simulation.runner import FRONTENDS, SimulationError
from batsim_google.units import DAY, HOUR

#: ``--window``: the end of the metrics' window without a horizon.
MEASURED = ("span", "run")


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
@simulation_options("simulated time")
@click.option(
    "--energy-outputs/--no-energy-outputs",
    default=None,
    help="Batsim's energy plugin (-E) and its outputs (default: on where the platform gives its hosts power figures).",
)
@click.option(
    "--window",
    "measure",
    type=click.Choice(MEASURED),
    default="span",
    show_default=True,
    help="Without --horizon, the metrics' window ends at the end of the workload's span (its last submission "
    "plus the mean gap between submissions: the cell under its load, not the drain after) or of the run.",
)
@click.option(
    "--figures/--no-figures",
    default=True,
    show_default=True,
    help="Draw the run's figures (utilization, power, machines, waits over time; suspensions) into the output folder.",
)
@click.option(
    "--batsim-log",
    type=click.Choice(LOG_LEVELS),
    default="warning",
    show_default=True,
    help="Batsim's log level (batsim.log): its warnings only, or everything it says.",
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
    measure,
    figures,
    batsim_binary,
    batsim_log,
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
    from batsim_google.experiments.window import span_window, window_of

    window = window_of(warmup, policy["horizon"])
    scheduler = None
    if scheduler_text is not None:
        changed = [name for name, value in policy.items() if value != getattr(PolicyConfig, name)]
        if changed or frontend != "pybatsim":
            option = f"--{changed[0].replace('_', '-')}" if changed else "--frontend"
            fail(f"{option} is an option of the built-in scheduler; --scheduler runs another one")
        scheduler = parse_scheduler(scheduler_text, scheduler_options, scheduler_needs)
    energy_outputs = _before_start(platform, workloads, scheduler, energy_outputs, frontend)
    click.get_current_context().with_resource(locked_folder(output, create=False))  # held to the last figure
    with contextlib.suppress(SimulationError):  # a missing binary is said once the inputs are checked
        click.echo(batsim_program(batsim_binary).describe())
    call = {
        "events": list(events),
        "energy": energy_outputs,
        "warn": lambda message: click.echo(f"warning: {message}", err=True),
        "batsim_log": batsim_log,
        **simulation_call(timeout, batsim_binary, progress),
    }
    if scheduler is not None:
        summary = _run_other(scheduler, platform, workloads, output, progress, call)
    else:
        summary = _run_built_in(platform, workloads, output, frontend, policy, call)
    outputs = RunOutputs(output)
    span = None if policy["horizon"] or measure == "run" else span_window(outputs.submissions(), warmup)
    metrics = run_metrics(outputs, platform, span or window, workloads)
    click.echo(measured_line(metrics, "horizon" if policy["horizon"] else measure, span is not None))
    for line in summary_lines(metrics):
        click.echo(line)
    if figures:
        from batsim_google.experiments.run_figures import write_run_figures  # matplotlib, only for figures

        drawn = write_run_figures(outputs, metrics, platform)
        click.echo(f"figures: {', '.join(path.name for path in drawn)}")
    if metrics["not_restarted"]:
        click.echo(
            f"{metrics['not_restarted']} task(s) stopped and not restarted (--restart {policy['restart']}, "
            f"--max-restarts {policy['max_restarts']}): their work is lost"
        )
    click.echo(f"outputs in {output} (metrics in {write_metrics(output, metrics)})")
    if summary is not None and not summary["balanced"]:
        click.echo(f"accounting does not balance: {summary['open']} task(s) never ended", err=True)
        sys.exit(1)


def measured_line(metrics: dict, chosen: str, spanned: bool) -> str:
    """What the metrics were measured over (``chosen``: "horizon", or the --window asked for,
    ``spanned`` whether the workload had a span to measure) and how to measure something else."""
    low, high, end = metrics["window_start_s"], metrics["window_end_s"], metrics["makespan_s"]
    over = f"{_time(low)} to {_time(high)}"
    if chosen == "horizon":
        return f"measured from the warm-up to the horizon, {over}: --warmup and --horizon set the window"
    if spanned:
        return (
            f"measured over the workload's span, {over}, of a run that ended at {_time(end)}: "
            "--window run measures to the run's end, --warmup and --horizon set the window"
        )
    why = "" if chosen == "run" else " (no workload span: one submission time, or a warm-up past the span)"
    return f"measured to the run's end{why}, {over}: --warmup and --horizon set the window"


def _time(seconds: float) -> str:
    """Simulated seconds, in hours or days too when that many."""
    for unit, name in ((DAY, "days"), (HOUR, "h")):
        if seconds >= 2 * unit:
            return f"{seconds:.6g} s ({seconds / unit:.3g} {name})"
    return f"{seconds:.6g} s"


def _before_start(platform: Path, workloads, scheduler, energy_outputs: bool | None, frontend: str) -> bool:
    """Say whether energy is measured and what the scheduler will reject; refuse what cannot run
    (:mod:`batsim_google.simulation.preflight`). Returns whether Batsim's energy plugin runs."""
    from batsim_google.platform.simgrid_xml import energy_model_gap, read_hosts
    from batsim_google.simulation.preflight import energy_choice, preflight

    kind, target = ("policy", None) if scheduler is None else (scheduler.kind, scheduler.target)
    hosts = read_hosts(platform)
    gap = energy_model_gap(hosts)
    if frontend == "batsim-py" and gap:  # it always runs Batsim with -E
        fail(
            f"--frontend batsim-py runs Batsim with its energy plugin (-E), and {platform} has no energy model "
            f"({gap}): use --frontend pybatsim"
        )
    energy, line = energy_choice(hosts, energy_outputs, platform)
    limits = preflight(platform, hosts, list(workloads), kind, target)
    click.echo(line)
    for limit in limits:
        click.echo(f"warning: {limit}", err=True)
    return energy


def _run_other(scheduler, platform, workloads, output, progress: bool | None, call: dict) -> dict | None:
    """Run a scheduler of another kind (``call``: the simulation call's keywords); its ledger's
    summary when it keeps one."""
    from batsim_google.simulation.external import run_scheduler
    from batsim_google.simulation.schedulers import REPORTS_PROGRESS

    if progress and scheduler.kind not in REPORTS_PROGRESS:
        click.echo(
            f"warning: no progress bar: a {scheduler.kind} scheduler does not report its simulated time", err=True
        )
    summary = run_scheduler(scheduler, platform, list(workloads), output, **call).summary
    if summary is not None:
        _echo_summary(summary)
    return summary


def _run_built_in(platform, workloads, output, frontend: str, policy: dict, call: dict) -> dict:
    """Run the built-in scheduler (``call``: the simulation call's keywords); its ledger's summary."""
    from batsim_google.simulation.run import run_google_cell

    try:
        summary = run_google_cell(platform, list(workloads), output, policy, frontend=frontend, **call).summary
    except ImportError as error:
        fail(f"--frontend {frontend} needs the batsim-py extra (uv sync --extra batsim-py): {error}")
    _echo_summary(summary)
    return summary


def _echo_summary(summary: dict) -> None:
    outcomes = ", ".join(f"{count} {name}" for name, count in summary["outcomes"].items() if count)
    click.echo(f"{summary['submitted']} tasks: {outcomes}; {summary['attempts']} attempts")
