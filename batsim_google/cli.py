"""Command line: ``batsim-google SUBCOMMAND``.

Errors in user input (bad parameters, unreadable files) end with a one-line message naming the
parameter or file and exit status 2, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .model import ModelError, WorkloadModel, load_model
from .presets import PRESETS, preset
from .requests import derive_request_law, load_request_law
from .scheduling.placement import PLACEMENTS
from .scheduling.policy import ENERGY_POLICIES, RESTARTS
from .runner import SimulationError
from .simulate import FRONTENDS, run_google_cell
from .workload import GOOGLE_CELL_MACHINES, write_generated_workload


def _fail(message: str) -> None:
    raise click.UsageError(message)


def _model(preset_name: str | None, model_file: Path | None) -> WorkloadModel:
    if preset_name and model_file:
        _fail("give --preset or --model, not both")
    try:
        return load_model(model_file) if model_file else preset(preset_name or "google")
    except (ModelError, ValueError) as error:
        _fail(str(error))


@click.group()
@click.version_option(__version__)
def main() -> None:
    """Google-like workloads, platforms and scheduling for Batsim/SimGrid."""


@main.command()
@click.option("--preset", "preset_name", type=click.Choice(list(PRESETS)), help="A model from the paper (default: google).")
@click.option("--model", "model_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="A model file (.toml or .json).")
@click.option("--tasks", type=click.IntRange(min=0), help="Number of tasks to generate.")
@click.option("--duration", type=click.FloatRange(min=0), help="Generate the tasks submitted within this many seconds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random generator.")
@click.option("--nb-res", type=click.IntRange(min=1), default=GOOGLE_CELL_MACHINES, show_default=True, help="Machines of the target platform (the workload's nb_res).")
@click.option("--grain", type=click.FloatRange(min=0, min_open=True), help="Round makespans to multiples of GRAIN seconds so jobs share profiles.")
@click.option("--requests", "requests_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="CPU/memory request law (JSON from 'batsim-google requests'); default: the trace sample's.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Batsim JSON workload to write.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal).")
def generate(preset_name, model_file, tasks, duration, seed, nb_res, grain, requests_file, output, progress) -> None:
    """Generate a Google-like workload as a Batsim JSON file."""
    if (tasks is None) == (duration is None):
        _fail("give exactly one of --tasks and --duration")
    model = _model(preset_name, model_file)
    try:
        requests = load_request_law(requests_file)
        count = write_generated_workload(
            output, model, requests, seed, tasks=tasks, duration=duration, nb_res=nb_res,
            grain=grain, progress=sys.stderr.isatty() if progress is None else progress,
        )
    except ValueError as error:
        _fail(str(error))
    click.echo(f"wrote {count} jobs to {output}")


@main.command()
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=Path("experiment"), show_default=True, help="Folder to write.")
@click.option("--tasks", type=click.IntRange(min=1), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def demo(output: Path, tasks: int, seed: int) -> None:
    """Write a ready-to-simulate experiment folder from the embedded defaults."""
    output.mkdir(parents=True, exist_ok=True)
    workload = output / "workload.json"
    count = write_generated_workload(workload, preset("google"), load_request_law(), seed, tasks=tasks)
    click.echo(f"wrote {count} jobs of the 'google' model to {workload}")


@main.command("requests")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--note", default="", help="Where the trace comes from, kept in the law's provenance.")
def requests_command(sources, output: Path, note: str) -> None:
    """Derive the CPU/memory request law from task_events (trace folders or part files)."""
    try:
        law = derive_request_law(sources, note=note)
    except ValueError as error:
        _fail(str(error))
    law.save(output)
    used = law.provenance["rows_used"]
    skipped = law.provenance["rows_skipped_missing_request"]
    for kind in used:
        click.echo(f"{kind}: {used[kind] + skipped[kind]} terminal rows = {used[kind]} used + {skipped[kind]} skipped (missing request)")
    click.echo(f"wrote {output}")


@main.command()
@click.option("--platform", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True, help="SimGrid platform XML.")
@click.option("--workload", "workloads", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Batsim JSON workload (repeatable).")
@click.option("--events", "events", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Batsim external events: machine failures, user kills (repeatable).")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for Batsim's outputs and the scheduler's accounting.")
@click.option("--placement", type=click.Choice(list(PLACEMENTS)), default="best-fit", show_default=True)
@click.option("--overcommit", type=click.FloatRange(min=1.0), default=1.0, show_default=True, help="CPU over-commit ratio (memory never is).")
@click.option("--preemption/--no-preemption", default=True, show_default=True, help="Evict lower priorities for a task that fits nowhere.")
@click.option("--restart", type=click.Choice(list(RESTARTS)), default="immediate", show_default=True, help="What evicted tasks do.")
@click.option("--restart-delay", type=click.FloatRange(min=0), default=0.0, show_default=True, help="Seconds suspended before a 'delayed' restart.")
@click.option("--max-restarts", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--resume/--from-scratch", default=False, show_default=True, help="Restart with the work left, or all of it.")
@click.option("--energy", type=click.Choice(list(ENERGY_POLICIES)), default="always-on", show_default=True)
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True, help="Seconds idle before a machine sleeps (idle-sleep).")
@click.option("--timeout", type=click.FloatRange(min=1), default=3600.0, show_default=True, help="Wall-clock limit of the simulation, seconds.")
@click.option("--batsim", "batsim_binary", default="batsim", show_default=True, help="The Batsim executable.")
@click.option("--progress/--no-progress", default=None, help="Progress bar over simulated time (default: on a terminal).")
@click.option("--frontend", type=click.Choice(FRONTENDS), default="pybatsim", show_default=True, help="Protocol library between Batsim and the policy (batsim-py: restart 'none', no events; see README).")
def run(platform, workloads, events, output, placement, overcommit, preemption, restart, restart_delay, max_restarts, resume, energy, idle_timeout, timeout, batsim_binary, progress, frontend) -> None:
    """Simulate workloads with Batsim and the Google-cell scheduler; exit 1 if accounting fails."""
    policy = {
        "placement": placement, "cpu_overcommit": overcommit, "preemption": preemption,
        "restart": restart, "restart_delay": restart_delay, "max_restarts": max_restarts,
        "resume": resume, "energy": energy, "idle_timeout": idle_timeout,
    }
    try:
        summary = run_google_cell(
            platform, list(workloads), output, policy, events=list(events), timeout=timeout,
            batsim=batsim_binary, progress=sys.stderr.isatty() if progress is None else progress,
            frontend=frontend,
        )
    except ImportError as error:
        _fail(f"--frontend {frontend} needs the batsim-py extra (uv sync --extra batsim-py): {error}")
    except SimulationError as error:
        raise click.ClickException(str(error)) from error
    except ValueError as error:  # what the batsim-py front-end cannot run
        _fail(str(error))
    outcomes = ", ".join(f"{count} {name}" for name, count in summary["outcomes"].items() if count)
    click.echo(f"{summary['submitted']} tasks: {outcomes}; {summary['attempts']} attempts")
    click.echo(f"outputs in {output}")
    if not summary["balanced"]:
        click.echo(f"accounting does not balance: {summary['open']} task(s) never ended", err=True)
        sys.exit(1)
