"""``validate-replay``: a replay of the trace's window against the trace's own record."""

from __future__ import annotations

from pathlib import Path

import click

from batsim_google.cli.common import SEED, WORKERS, NumberRange, fail, fail_usage, report_options
from batsim_google.cli.parallel_options import DASK_OPTION, jobs_option, resumable
from batsim_google.cli.policy_options import policy_options
from batsim_google.cli.simulation_options import simulation_options, simulation_settings
from batsim_google.parameters import MAX_TIME_S
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES


@click.command("validate-replay")
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--start",
    type=NumberRange(min=0, max=MAX_TIME_S),
    help="Window start (s of the trace); with --windows, the first one's [default: 0].",
)
@click.option(
    "--end",
    type=NumberRange(min=0, min_open=True, max=MAX_TIME_S),
    help="Window end (s of the trace); with --windows, the last one's [default: the trace's last event].",
)
@click.option(
    "--windows",
    "window_length",
    type=NumberRange(min=0, min_open=True, max=MAX_TIME_S),
    metavar="SECONDS",
    help="Replay every whole window of SECONDS from --start to --end, each from its own recorded state, "
    "and tabulate them (resumable).",
)
@click.option(
    "--sample-cell",
    type=click.IntRange(1, GOOGLE_2011_MACHINES),
    help=f"Replay on a sampled cell of N machines (of the {GOOGLE_2011_MACHINES:,}); default: the whole cell.",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of --sample-cell's machines.")
@click.option(
    "--place-again",
    is_flag=True,
    help="Let the scheduler place the tasks running at the start anew (default: on the trace's machines).",
)
@report_options("replay-validation")
@jobs_option("jobs")
@DASK_OPTION
@click.option("--retry-failed", is_flag=True, help="With --windows, replay again the windows that failed before.")
@policy_options
@simulation_options("simulated time (with --windows: the windows)")
@click.option("--workers", type=WORKERS, default=1, show_default=True, help="Threads reading the trace.")
def validate_replay_command(
    trace_dir,
    start,
    end,
    window_length,
    jobs,
    dask_address,
    retry_failed,
    sample_cell,
    seed,
    place_again,
    output,
    json_file,
    timeout,
    workers,
    batsim_binary,
    progress,
    **policy,
) -> None:
    """Replay [START, END) of the trace in TRACE_DIR with its initial state and compare, per priority
    group, waits, quick starts, evictions, CPU in use and bursts with what the trace records; with
    --windows, every window of the span, in parallel."""
    from batsim_google.errors import BatsimGoogleError
    from batsim_google.experiments.replay_sweep import SweepWindows
    from batsim_google.experiments.replay_validation import ReplayWindow
    from batsim_google.scheduling.policy_config import PolicyConfig
    from batsim_google.trace.sampling import MachineSample

    try:
        sample = None if sample_cell is None else MachineSample(sample_cell, seed)
        settings = simulation_settings(timeout, batsim_binary, progress, say=click.echo)
        if window_length is None:
            if jobs is not None or dask_address or retry_failed:
                fail_usage("--jobs, --dask and --retry-failed go with --windows")
            if start is None or end is None:
                fail_usage("give --start and --end (or --windows)")
            window = ReplayWindow(start, end, sample, place_again)
            _one_window(trace_dir, window, output, json_file, PolicyConfig(**policy), settings, workers)
        else:
            with resumable():
                plan = SweepWindows(window_length, start or 0.0, end, sample, place_again, retry_failed)
                _sweep(
                    trace_dir, plan, output, json_file, PolicyConfig(**policy), settings, workers, jobs, dask_address
                )
    except (BatsimGoogleError, ValueError) as error:
        fail(str(error))


def _one_window(trace_dir, window, output, json_file, policy, settings, workers) -> None:
    import json

    from batsim_google.experiments.replay_validation import report_lines, validate_replay
    from batsim_google.output_files import write_text

    report = validate_replay(trace_dir, window, output, policy, settings=settings, workers=workers, say=click.echo)
    for line in report_lines(report):
        click.echo(line)
    if json_file:
        write_text(json_file, json.dumps(report, indent=1) + "\n")
        click.echo(f"wrote {json_file}")


def _sweep(trace_dir, plan, output, json_file, policy, settings, workers, jobs, dask_address) -> None:
    from batsim_google.experiments.replay_sweep import REPORT, sweep_windows
    from batsim_google.output_files import write_text

    result = sweep_windows(
        trace_dir, output, plan, policy, settings=settings, workers=workers, jobs=jobs, dask_address=dask_address
    )
    for window, status, marker in zip(result.windows, result.statuses, result.markers):
        if status == "failed":
            click.echo(f"window [{window.start:g}, {window.end:g}) s failed: {marker['error']}", err=True)
    missed = [row for row in result.rows if row["met"] is False]
    for row in missed:
        p_value = "" if row["p_value"] is None else f", p = {row['p_value']:.2f}"
        click.echo(
            f"missed: [{row['start']:g}, {row['end']:g}) s {row['group']} {row['target']}: "
            f"real {_value(row['real'])}, simulated {_value(row['simulated'])}{p_value}"
        )
    click.echo(result.summary())
    files = result.files
    if json_file:
        write_text(json_file, (output / REPORT).read_text())
        files = [*files, json_file]
    click.echo(f"wrote {', '.join(str(path) for path in files)}")


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
