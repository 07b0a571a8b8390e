"""``validate-model``: a generated cell against the trace's same hours."""

from __future__ import annotations

from pathlib import Path

import click

from batsim_google.cli.common import SEED, WORKERS, NumberRange, chosen_model, fail, fail_usage, report_options
from batsim_google.cli.policy_options import policy_options
from batsim_google.cli.simulation_options import simulation_options, simulation_settings
from batsim_google.model.vocabulary import PRESET_NAMES
from batsim_google.parameters import MAX_TIME_S
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES

DEFAULT_PRESET = "google-2011-cell"


@click.command("validate-model")
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--start", type=NumberRange(min=0, max=MAX_TIME_S), required=True, help="Start of the trace's window (s)."
)
@click.option(
    "--end",
    type=NumberRange(min=0, min_open=True, max=MAX_TIME_S),
    required=True,
    help="End of the trace's window (s).",
)
@click.option(
    "--preset",
    "preset_name",
    type=click.Choice(list(PRESET_NAMES)),
    help=f"The model to generate from [default: {DEFAULT_PRESET}].",
)
@click.option(
    "--model", "model_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="A model file."
)
@click.option(
    "--workload",
    "workload_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Simulate this workload instead of generating one (for the cell of --sample-cell).",
)
@click.option(
    "--sample-cell",
    type=click.IntRange(1, GOOGLE_2011_MACHINES),
    help=f"Simulate a sampled cell of N machines (of the {GOOGLE_2011_MACHINES:,}), at the cell's load per "
    "machine, against the trace's tasks on the same sample; default: the whole cell.",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of the generated window and of --sample-cell's machines.",
)
@report_options("model-validation")
@policy_options
@simulation_options("simulated time")
@click.option("--workers", type=WORKERS, default=1, show_default=True, help="Threads reading the trace.")
def validate_model_command(
    trace_dir,
    start,
    end,
    preset_name,
    model_file,
    workload_file,
    sample_cell,
    seed,
    output,
    json_file,
    timeout,
    workers,
    batsim_binary,
    progress,
    **policy,
) -> None:
    """Generate a warm-started window of END - START s from a model, simulate it with the Google-cell
    scheduler and compare, per priority group and hour, waits, quick starts, evictions, tasks
    submitted and CPU in use with the trace's [START, END) in TRACE_DIR. A generated cell cannot
    replay a given burst: the distributions over the whole window are judged."""
    import json

    from batsim_google.errors import BatsimGoogleError
    from batsim_google.experiments.model_validation import ModelWindow, model_report_lines, validate_model
    from batsim_google.output_files import write_text
    from batsim_google.scheduling.policy_config import PolicyConfig

    if workload_file and (preset_name or model_file):
        fail_usage("give --workload or a model (--preset, --model), not both")
    try:
        source = workload_file or chosen_model(preset_name or (None if model_file else DEFAULT_PRESET), model_file)
        settings = simulation_settings(timeout, batsim_binary, progress, say=click.echo)
        window = ModelWindow(start, end, seed, sample_cell)
        report = validate_model(
            trace_dir,
            window,
            output,
            source,
            PolicyConfig(**policy),
            settings=settings,
            workers=workers,
            say=click.echo,
        )
        for line in model_report_lines(report):
            click.echo(line)
        if json_file:
            write_text(json_file, json.dumps(report, indent=1) + "\n")
            click.echo(f"wrote {json_file}")
    except (BatsimGoogleError, ValueError) as error:
        fail(str(error))
