"""``run``: simulate workloads in Batsim with the Google-cell scheduler."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from batsim_google.cli.common import fail, warmup_option
from batsim_google.cli.metrics import summary_lines
from batsim_google.cli.policy_options import policy_options
from batsim_google.cli.scheduler_option import scheduler_options
from batsim_google.cli.simulation_options import STREAM_WORKLOAD_OPTION, simulation_options, simulation_settings
from batsim_google.experiments.measured_run import WINDOW_ENDS
from batsim_google.output_files import locked_folder
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.batsim_binary import LOG_LEVELS
from batsim_google.simulation.runner import FRONTENDS, PYBATSIM_FRONTEND
from batsim_google.units import DAY, HOUR


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
@STREAM_WORKLOAD_OPTION
@click.option(
    "--energy-outputs/--no-energy-outputs",
    default=None,
    help="Batsim's energy plugin (-E) and its outputs (default: on where the platform gives its hosts power figures).",
)
@click.option(
    "--window",
    "measure",
    type=click.Choice(WINDOW_ENDS),
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
    default=PYBATSIM_FRONTEND,
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
    stream_workload,
    frontend,
    scheduler_text,
    scheduler_options,
    scheduler_needs,
    **policy,
) -> None:
    """Simulate workloads with Batsim and the Google-cell scheduler (or --scheduler); exit 1 if accounting fails."""
    from batsim_google.experiments.measured_run import not_restarted_line, simulate
    from batsim_google.experiments.outputs import RunOutputs
    from batsim_google.experiments.run_tables import RunTables
    from batsim_google.simulation.settings import RunInputs

    horizon = policy["horizon"] or None
    scheduler = _scheduler(scheduler_text, scheduler_options, scheduler_needs, frontend, policy)
    settings = simulation_settings(
        timeout,
        batsim_binary,
        progress,
        energy_outputs=energy_outputs,
        batsim_log=batsim_log,
        frontend=frontend,
        stream_workload=stream_workload,
        say=click.echo,
    )
    inputs = RunInputs(platform, workloads, events)
    click.get_current_context().with_resource(locked_folder(output, create=False))  # held to the last figure
    # the metrics' and figures' tables, read once; the workloads' own, once read, are of no more use
    tables = RunTables(RunOutputs(output), workloads, keep_workloads=False)
    result = simulate(
        scheduler, inputs, output, settings, warmup=warmup, horizon=horizon, window=measure, tables=tables
    )
    summary, metrics = result.simulation.summary, result.metrics
    if summary is not None:
        outcomes = ", ".join(f"{count} {name}" for name, count in summary["outcomes"].items() if count)
        click.echo(f"{summary['submitted']} tasks: {outcomes}; {summary['attempts']} attempts")
    click.echo(measured_line(metrics, "horizon" if horizon else measure, result.spanned))
    for line in summary_lines(metrics):
        click.echo(line)
    if figures:
        from batsim_google.experiments.run_figures import write_run_figures  # matplotlib, only for figures

        drawn = write_run_figures(tables.outputs, metrics, platform, workloads, tables)
        click.echo(f"figures: {', '.join(path.name for path in drawn)}")
    lost = not_restarted_line(metrics, scheduler)
    if lost:
        click.echo(lost)
    click.echo(f"outputs in {output} (metrics in {result.metrics_file})")
    if summary is not None and not summary["balanced"]:
        click.echo(f"accounting does not balance: {summary['open']} task(s) never ended", err=True)
        sys.exit(1)


def _scheduler(text: str | None, options_json: str, needs_json: str | None, frontend: str, policy: dict):
    """The built-in scheduler with the policy options, or the one ``--scheduler`` names (then
    only ``--horizon`` of the policy options may be given: every kind is measured up to it)."""
    from batsim_google.errors import ParameterError
    from batsim_google.simulation.schedulers import built_in, scheduler_from_text

    if text is None:
        return built_in(PolicyConfig(**policy))
    changed = [name for name, value in policy.items() if name != "horizon" and value != getattr(PolicyConfig, name)]
    if changed or frontend != PYBATSIM_FRONTEND:
        option = f"--{changed[0].replace('_', '-')}" if changed else "--frontend"
        fail(f"{option} is an option of the built-in scheduler; --scheduler runs another one")
    try:
        return scheduler_from_text(text, options_json, needs_json)
    except ParameterError as error:
        raise click.BadParameter(str(error), param_hint="--scheduler") from error


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
