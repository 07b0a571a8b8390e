"""``validate-replay``: a replay of the trace's window against the trace's own record."""

from __future__ import annotations

from pathlib import Path

import click

from batsim_google.cli.common import SEED, WORKERS, NumberRange, fail
from batsim_google.cli.policy_options import policy_options
from batsim_google.cli.simulation_options import simulation_call, simulation_options
from batsim_google.parameters import MAX_TIME_S
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES


@click.command("validate-replay")
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--start", type=NumberRange(min=0, max=MAX_TIME_S), required=True, help="Window start (s of the trace).")
@click.option(
    "--end", type=NumberRange(min=0, min_open=True, max=MAX_TIME_S), required=True, help="Window end (s of the trace)."
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
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("replay-validation"),
    show_default=True,
    help="Folder for the workload, the run, the report and the figures.",
)
@click.option(
    "--json", "json_file", type=click.Path(dir_okay=False, path_type=Path), help="Also write the report here."
)
@policy_options
@simulation_options("simulated time")
@click.option("--workers", type=WORKERS, default=1, show_default=True, help="Threads reading the trace.")
def validate_replay_command(
    trace_dir,
    start,
    end,
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
    group, waits, quick starts, evictions and CPU in use with what the trace records."""
    import json

    from batsim_google.errors import BatsimGoogleError
    from batsim_google.experiments.replay_validation import report_lines, validate_replay
    from batsim_google.output_files import write_text

    try:
        report = validate_replay(
            trace_dir,
            start,
            end,
            output,
            policy,
            sample_cell=sample_cell,
            seed=seed,
            place_again=place_again,
            workers=workers,
            say=click.echo,
            **simulation_call(timeout, batsim_binary, progress),
        )
    except (BatsimGoogleError, ValueError) as error:
        fail(str(error))
    for line in report_lines(report):
        click.echo(line)
    if json_file:
        write_text(json_file, json.dumps(report, indent=1) + "\n")
        click.echo(f"wrote {json_file}")
