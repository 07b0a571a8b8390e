"""Commands that write workloads: ``generate``, ``demo`` and ``requests``."""

from __future__ import annotations

from pathlib import Path

import click

from batsim_google.cli.common import (
    SEED,
    WORKLOAD_OUTPUT_OPTION,
    NumberRange,
    cell_workload_options,
    checked_output_file,
    checked_output_folder,
    chosen_model,
    fail,
    fail_usage,
    progress_option,
    show_progress,
    walltime_options,
)
from batsim_google.model.vocabulary import PRESET_NAMES
from batsim_google.parameters import MAX_ARRIVAL_SCALE, MAX_TASKS, MAX_TIME_S
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.units import DAY


@click.command()
@click.option(
    "--preset",
    "preset_name",
    type=click.Choice(list(PRESET_NAMES)),
    help="A model from the paper, or google-2011-cell, fitted from the trace (default: google).",
)
@click.option(
    "--model",
    "model_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A model file (.toml or .json).",
)
@click.option("--tasks", type=click.IntRange(min=0, max=MAX_TASKS), help="Number of tasks to generate.")
@click.option(
    "--duration",
    type=NumberRange(min=0, max=MAX_TIME_S),
    help="Generate the tasks submitted within this many seconds.",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the random generator.")
@cell_workload_options
@click.option(
    "--requests",
    "requests_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CPU/memory request law (JSON from 'batsim-google requests'); default: the trace sample's.",
)
@click.option(
    "--arrival-scale",
    type=NumberRange(min=0, min_open=True, max=MAX_ARRIVAL_SCALE),
    default=1.0,
    show_default=True,
    help=f"Multiply inter-arrival times by this factor; {GOOGLE_2011_MACHINES}/N keeps a whole-cell model's load per machine on N machines.",
)
@click.option(
    "--task-share",
    type=NumberRange(min=0, min_open=True, max=1),
    default=1.0,
    show_default=True,
    help=f"A sampled cell: keep each task of the whole cell's jobs with this probability; N/{GOOGLE_2011_MACHINES} "
    "keeps a whole-cell model's load per machine on N machines with parts of many jobs, not whole ones.",
)
@WORKLOAD_OUTPUT_OPTION
@click.option(
    "--warm-start",
    is_flag=True,
    help="First, the tasks running at time 0 in the model's steady state (flagged 'initial'; "
    "see docs/generating.md); --tasks and --duration count the tasks after them.",
)
@walltime_options("none")
@progress_option()
def generate(
    preset_name,
    model_file,
    tasks,
    duration,
    seed,
    nb_res,
    grain,
    requests_file,
    arrival_scale,
    task_share,
    output,
    warm_start,
    walltime,
    progress,
) -> None:
    """Generate a Google-like workload as a Batsim JSON file."""
    from batsim_google.generation.workload import (
        Generation,
        write_generated_workload,
    )
    from batsim_google.model.request_law import load_request_law

    if (tasks is None) == (duration is None):
        fail_usage("give exactly one of --tasks and --duration")
    checked_output_file(output, model_file, requests_file)
    model = chosen_model(preset_name, model_file)
    requests = load_request_law(requests_file)
    count = write_generated_workload(
        output,
        model,
        requests,
        seed,
        Generation(
            tasks=tasks,
            duration=duration,
            nb_res=nb_res,
            grain=grain,
            arrival_scale=arrival_scale,
            task_share=task_share,
            warm=warm_start,
            walltime=walltime,
        ),
        progress=show_progress(progress),
    )
    click.echo(f"wrote {count} jobs to {output}")


DEMO_MACHINES = 64
DEMO_HORIZON_S = 2 * DAY


@click.command()
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("experiment"),
    show_default=True,
    help="Folder to write.",
)
@click.option("--tasks", type=click.IntRange(min=1, max=MAX_TASKS), default=2000, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
def demo(output: Path, tasks: int, seed: int) -> None:
    """Write a ready-to-simulate experiment folder from the embedded defaults.

    A 64-machine cell in the 2011 cell's proportions (with its energy model), a workload of the
    paper's 'google' model at the whole cell's load per machine (inter-arrivals stretched by
    12,583 / 64), and machine failures over two days from the default failure law; then the
    command that simulates it all.
    """
    import numpy as np

    from batsim_google.generation.workload import (
        Generation,
        cell_load_scale,
        write_generated_workload,
    )
    from batsim_google.model.presets import preset
    from batsim_google.model.request_law import load_request_law
    from batsim_google.output_files import write_text
    from batsim_google.platform.batsim_events import write_availability_events
    from batsim_google.platform.cell import google_2011_cell
    from batsim_google.platform.energy import load_energy_model
    from batsim_google.platform.failures import FailureLaw, draw_failures
    from batsim_google.platform.simgrid_xml import write_platform

    checked_output_folder(output)
    platform, workload, failures = output / "platform.xml", output / "workload.json", output / "failures.jsonl"
    readme = output / "README.txt"
    existing = [path for path in (platform, workload, failures, readme) if path.exists()]
    if existing:
        fail(f"{existing[0]} exists: demo never replaces a file; give -o a new folder")
    output.mkdir(parents=True, exist_ok=True)
    write_platform(platform, google_2011_cell(DEMO_MACHINES), load_energy_model())
    count = write_generated_workload(
        workload,
        preset("google"),
        load_request_law(),
        seed,
        Generation(tasks=tasks, nb_res=DEMO_MACHINES, arrival_scale=cell_load_scale(DEMO_MACHINES)),
    )
    changes = draw_failures(DEMO_MACHINES, FailureLaw(), DEMO_HORIZON_S, np.random.default_rng(seed))
    events = write_availability_events(failures, changes)
    command = (
        f"uv run batsim-google run --platform {platform} --workload {workload} "
        f"--events {failures} -o {output / 'results'}"
    )
    write_text(
        readme,
        "An experiment written by 'batsim-google demo':\n"
        f"- {platform.name}: {DEMO_MACHINES} machines of the Google 2011 cell, with energy model\n"
        f"- {workload.name}: {count} tasks of the paper's 'google' model (seed {seed}), at the whole\n"
        f"  cell's load per machine (inter-arrivals x {cell_load_scale(DEMO_MACHINES):.4g})\n"
        f"- {failures.name}: {events} machine failure/repair events over 2 days\n\n"
        f"Simulate it (Batsim 4.2.1 on PATH):\n  {command}\n",
    )
    click.echo(f"wrote {platform}, {workload} ({count} jobs) and {failures} ({events} events)")
    click.echo(f"simulate with:\n  {command}")


@click.command("requests")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--note", default="", help="Where the trace comes from, kept in the law's provenance.")
@click.option("--strict", is_flag=True, help="Stop at the first bad row instead of skipping it.")
def requests_command(sources, output: Path, note: str, strict: bool) -> None:
    """Derive the CPU/memory request law from task_events (trace folders or part files)."""
    from batsim_google.trace.derive_requests import derive_request_law
    from batsim_google.trace.row_accounting import RowAccount

    checked_output_file(output, *sources)
    account = RowAccount(strict=strict)
    law = derive_request_law(sources, account, note=note)
    law.save(output)
    used = law.provenance["rows_used"]
    for kind in used:
        click.echo(f"{kind}: {used[kind]} (cpu, memory) requests")
    click.echo(f"task_events: {account.summary()}")
    click.echo(f"wrote {output}")
