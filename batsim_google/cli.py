"""Command line: ``batsim-google SUBCOMMAND``.

Errors in user input (bad parameters, unreadable files) end with a one-line message naming the
parameter or file and exit status 2, never a traceback.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np
import polars as pl

from . import __version__
from .batsim_events import write_availability_events
from .cell import google_2011_cell
from .energy import load_energy_model
from .failures import DAY, TRACE_DAYS, FailureLaw, draw_failures
from .fitting.batsim_input import BatsimInputError, read_batsim_workload
from .fitting.fidelity import fidelity_report
from .fitting.laws import FITTERS
from .fitting.model_fit import CLASSIFICATIONS, fit_model
from .fitting.profile import PROFILE_CHOICES
from .fitting.report import describe, write_report
from .fitting.select import CRITERIA
from .fitting.swf_input import SWF_PRIORITY, swf_task_table
from .fitting.trace_input import trace_task_table
from .model import ModelError, WorkloadModel, load_model, save_model
from .platform import compute_hosts, write_platform
from .presets import PRESETS, preset
from .requests import derive_request_law, load_request_law
from .runner import SimulationError
from .scheduling.placement import PLACEMENTS
from .scheduling.policy import ENERGY_POLICIES, RESTARTS
from .simulate import FRONTENDS, run_google_cell
from .swf import header_processors, read_swf
from .swf import read_header as read_swf_header
from .trace.accounting import RowAccount, TraceError
from .trace.convert import END_EVENTS, Selection, convert_trace, write_records
from .trace.lifecycle import DEFAULT_GRACE, rebuild
from .trace.machines import MachineHistory, read_machine_history
from .trace.plots import draw_figures
from .trace.schema import PRIORITY_GROUPS
from .trace.stats import DEFAULT_BIN_WIDTH, TraceStats, render_csv, render_json, render_text
from .widths import GROUPINGS
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


DEMO_MACHINES = 64
DEMO_HORIZON_S = 2 * DAY


@main.command()
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=Path("experiment"), show_default=True, help="Folder to write.")
@click.option("--tasks", type=click.IntRange(min=1), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def demo(output: Path, tasks: int, seed: int) -> None:
    """Write a ready-to-simulate experiment folder from the embedded defaults.

    A 64-machine cell in the 2011 cell's proportions (with its energy model), a workload of the
    paper's 'google' model sized for it, and machine failures over two days from the default
    failure law; then the command that simulates it all.
    """
    output.mkdir(parents=True, exist_ok=True)
    platform, workload, failures = output / "platform.xml", output / "workload.json", output / "failures.jsonl"
    write_platform(platform, google_2011_cell(DEMO_MACHINES), load_energy_model())
    count = write_generated_workload(workload, preset("google"), load_request_law(), seed, tasks=tasks, nb_res=DEMO_MACHINES)
    changes = draw_failures(DEMO_MACHINES, FailureLaw(), DEMO_HORIZON_S, np.random.default_rng(seed))
    events = write_availability_events(failures, changes)
    command = (
        f"uv run batsim-google run --platform {platform} --workload {workload} "
        f"--events {failures} -o {output / 'results'}"
    )
    (output / "README.txt").write_text(
        "An experiment written by 'batsim-google demo':\n"
        f"- {platform.name}: {DEMO_MACHINES} machines of the Google 2011 cell, with energy model\n"
        f"- {workload.name}: {count} tasks of the paper's 'google' model (seed {seed})\n"
        f"- {failures.name}: {events} machine failure/repair events over 2 days\n\n"
        f"Simulate it (Batsim 4.2.1 on PATH):\n  {command}\n"
    )
    click.echo(f"wrote {platform}, {workload} ({count} jobs) and {failures} ({events} events)")
    click.echo(f"simulate with:\n  {command}")


@main.command("requests")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--note", default="", help="Where the trace comes from, kept in the law's provenance.")
@click.option("--strict", is_flag=True, help="Stop at the first bad row instead of skipping it.")
def requests_command(sources, output: Path, note: str, strict: bool) -> None:
    """Derive the CPU/memory request law from task_events (trace folders or part files)."""
    account = RowAccount(strict=strict)
    try:
        law = derive_request_law(sources, account, note=note)
    except ValueError as error:  # TraceError included: it names the file and line
        _fail(str(error))
    law.save(output)
    used = law.provenance["rows_used"]
    for kind in used:
        click.echo(f"{kind}: {used[kind]} (cpu, memory) requests")
    click.echo(f"task_events: {account.summary()}")
    click.echo(f"wrote {output}")


@main.command()
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
@click.option("--timeout", type=click.FloatRange(min=1), default=3600.0, show_default=True, help="Wall-clock limit of the simulation, seconds.")
@click.option("--energy-outputs/--no-energy-outputs", default=True, show_default=True, help="Batsim's energy plugin (-E) and its outputs; needs a platform with an energy model.")
@click.option("--batsim", "batsim_binary", default="batsim", show_default=True, help="The Batsim executable.")
@click.option("--progress/--no-progress", default=None, help="Progress bar over simulated time (default: on a terminal).")
@click.option("--frontend", type=click.Choice(FRONTENDS), default="pybatsim", show_default=True, help="Protocol library between Batsim and the policy (batsim-py: restart 'none', no events; see README).")
def run(platform, workloads, events, output, placement, overcommit, preemption, priority_levels, restart, restart_delay, max_restarts, resume, energy, idle_timeout, timeout, energy_outputs, batsim_binary, progress, frontend) -> None:
    """Simulate workloads with Batsim and the Google-cell scheduler; exit 1 if accounting fails."""
    policy = {
        "placement": placement, "cpu_overcommit": overcommit, "preemption": preemption, "priority_levels": priority_levels,
        "restart": restart, "restart_delay": restart_delay, "max_restarts": max_restarts,
        "resume": resume, "energy": energy, "idle_timeout": idle_timeout,
    }
    try:
        summary = run_google_cell(
            platform, list(workloads), output, policy, events=list(events), timeout=timeout,
            batsim=batsim_binary, energy=energy_outputs, progress=sys.stderr.isatty() if progress is None else progress,
            frontend=frontend,
        ).summary
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
_TRACE = click.Path(exists=True, path_type=Path)


def _machine_history(trace: Path, strict: bool) -> MachineHistory:
    try:
        history = read_machine_history([trace], strict=strict)
    except ValueError as error:
        _fail(str(error))
    click.echo(history.accounting())
    if history.capacity_updates:
        click.echo(
            f"{history.capacity_updates} UPDATE rows change a machine's capacities; "
            "hosts keep the capacities each machine had when it joined"
        )
    return history


@main.command("platform")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="SimGrid platform XML to write.")
@click.option("--machines", type=click.IntRange(min=1), help="A scaled cell of this many machines, in the 2011 cell's proportions.")
@click.option("--machine-events", "trace", type=_TRACE, help="Build the cell from a trace's machine_events (trace folder or part file).")
@click.option("--energy", "energy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Energy figures overriding the defaults (.toml or .json).")
@click.option("--strict", is_flag=True, help="With --machine-events: stop at the first bad row instead of skipping it.")
def platform_command(output: Path, machines: int | None, trace: Path | None, energy_file: Path | None, strict: bool) -> None:
    """Write a SimGrid/Batsim platform of the Google cell (default: the full 2011 cell)."""
    if machines and trace:
        _fail("give --machines or --machine-events, not both")
    try:
        energy = load_energy_model(energy_file)
        cell = _machine_history(trace, strict).cell if trace else google_2011_cell(machines)
    except ValueError as error:
        _fail(str(error))
    write_platform(output, cell, energy)
    counts = cell.machines.group_by("platform_id", maintain_order=True).len().iter_rows()
    click.echo(f"wrote {len(cell)} machines + 1 master to {output} (" + ", ".join(f"{p}: {n}" for p, n in counts) + ")")


@main.command("failures")
@click.argument("platform_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Batsim events file (JSON lines) to write.")
@click.option("--horizon", type=click.FloatRange(min=0, min_open=True), help=f"Only events before this time, seconds [default: {TRACE_DAYS} days with a failure law, none with --machine-events].")
@click.option("--seed", type=int, help="Seed of the random generator [default: 0].")
@click.option("--mtbf", type=click.FloatRange(min=0, min_open=True), help=f"Mean time between failures of a machine, seconds [default: {FailureLaw.mean_time_between_failures:.0f}].")
@click.option("--mtbf-shape", type=click.FloatRange(min=0, min_open=True), help="Weibull shape of the time between failures [default: 1, exponential].")
@click.option("--mttr", type=click.FloatRange(min=0, min_open=True), help=f"Mean repair time, seconds [default: {FailureLaw.mean_repair_time:.0f}].")
@click.option("--mttr-shape", type=click.FloatRange(min=0, min_open=True), help="Weibull shape of the repair time [default: 1, exponential].")
@click.option("--machine-events", "trace", type=_TRACE, help="Take the events from a trace's machine_events instead (PLATFORM built from it).")
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
        _fail(str(error))
    if trace:
        if given or seed is not None:
            _fail("--machine-events takes the events from the trace: give no failure law or --seed")
        history = _machine_history(trace, strict)
        machine_ids = [host.properties.get("machine_id") for host in hosts]
        if machine_ids != [str(i) for i in history.cell.machines["machine_id"]]:
            _fail(f"{platform_file} was not built from the machine_events of {trace} (compare its machine_id properties)")
        changes = history.changes if horizon is None else history.changes.before(horizon)
    else:
        changes = draw_failures(
            len(hosts), FailureLaw(**given), horizon or TRACE_DAYS * DAY, np.random.default_rng(0 if seed is None else seed)
        )
    lines = write_availability_events(output, changes)
    down = int((~changes.available).sum())
    click.echo(
        f"wrote {lines} events to {output}: {down} machine unavailabilities, "
        f"{len(changes) - down} returns, on {len(hosts)} machines"
    )


def _fit_input(source: Path, strict: bool) -> pl.DataFrame:
    """A Google trace (a folder with task_events/, or a ``.csv.gz`` part), an SWF log (``.swf``,
    ``.swf.gz``), a Batsim workload (``.json``) or a task table (``.parquet``, ``.csv``; columns in
    :mod:`batsim_google.fitting.table`)."""
    suffix = source.suffix.lower()
    try:
        if source.name.lower().endswith((".swf", ".swf.gz")):
            account = RowAccount(strict=strict)
            frame = swf_task_table(source, account)
            click.echo(f"swf lines: {account.summary()}")
            click.echo(f"SWF has no priorities: every job gets priority {SWF_PRIORITY}")
            return frame
        if source.is_dir() or source.name.lower().endswith(".csv.gz"):
            account = RowAccount(strict=strict)
            frame, left_out = trace_task_table([source], account, progress=sys.stderr.isatty())
            click.echo(f"task_events: {account.summary()}")
            if left_out:
                click.echo("modeled tasks left out: " + ", ".join(f"{n} {reason}" for reason, n in left_out.items()))
            return frame
        if suffix == ".json":
            return read_batsim_workload(source)
        if suffix == ".parquet":
            return pl.read_parquet(source)
        if suffix == ".csv":
            return pl.read_csv(source)
    except (BatsimInputError, TraceError, pl.exceptions.PolarsError, OSError) as error:
        _fail(f"{source}: {error}")
    _fail(f"{source}: fit reads a trace (folder or .csv.gz part), an SWF log (.swf, .swf.gz), a Batsim workload (.json) or a task table (.parquet, .csv)")


@main.command("fit")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Model file to write (.toml or .json).")
@click.option("--classes", type=click.Choice(CLASSIFICATIONS), help="apriori: Finish-ended tasks / Kill-ended services (default); kmeans: clusters.")
@click.option("--k", type=click.IntRange(min=2), help="Number of k-means classes (implies --classes kmeans; default: best mean silhouette for k = 2..10).")
@click.option("--profile", type=click.Choice(PROFILE_CHOICES), default="auto", show_default=True, help="Arrival-rate profile in half-hour bins; auto: weekly if the input spans a week, daily if a day, else none.")
@click.option("--criterion", type=click.Choice(CRITERIA), default="ks", show_default=True, help="How the best law is chosen: smallest KS statistic or smallest AIC.")
@click.option("--groups", type=click.Choice(["none", *GROUPINGS]), default="none", show_default=True, help="Parallel jobs (a width column, e.g. SWF): makespan laws per width, or per power-of-two group of widths; none: one per class.")
@click.option("--laws", "methods", help=f"Comma-separated fitting methods (default: all of {', '.join(FITTERS)}).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of k-means, the silhouette sample and the fidelity check.")
@click.option("--plots", "plots", type=click.Path(file_okay=False, path_type=Path), help="Folder for PNG figures.")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path), help="Fit report: JSON if it ends in .json, else Markdown.")
@click.option("--fidelity/--no-fidelity", default=True, show_default=True, help="Generate from the fitted model and compare with the input (two-sample KS per class).")
@click.option("--strict", is_flag=True, help="Stop at the first invalid row instead of skipping and counting it.")
def fit_command(source, output, classes, k, profile, criterion, groups, methods, seed, plots, report, fidelity, strict) -> None:
    """Fit a workload model to a Google trace, an SWF log, a Batsim workload or a task table."""
    if classes == "apriori" and k is not None:
        _fail("--k needs --classes kmeans")
    if output.suffix.lower() not in (".toml", ".json"):
        _fail(f"{output}: the model file must end in .toml or .json")
    frame = _fit_input(source, strict)
    try:
        result = fit_model(
            frame, classes=classes or ("kmeans" if k else "apriori"), k=k, profile=profile, criterion=criterion,
            methods=None if methods is None else [m.strip() for m in methods.split(",") if m.strip()],
            seed=seed, strict=strict, name=f"fitted from {source.name}", groups=None if groups == "none" else groups,
            source=str(source),
        )
    except TraceError as error:  # a bad row in strict mode: the message names the file and row
        _fail(str(error))
    except (ValueError, ModelError) as error:
        _fail(f"{source}: {error}")
    save_model(result.model, output)
    table = result.table
    click.echo(f"fit table: {table.rows.summary()}")
    for c in result.classes:
        click.echo(
            f"{c.name} ({c.kind}, {c.tasks} tasks, frequency {c.frequency:.4g}, mass {c.mass:.4g} s, disparity "
            f"{c.disparity:.3g}, lambda {c.priority.rate:.4g}): {describe(c.best.law)} [{c.best.method}, KS {c.best.ks:.4f}]"
        )
        if c.priority.note:
            click.echo(f"  note: {c.priority.note}", err=True)
        if c.widths is not None:
            law = c.widths.law
            click.echo(f"  widths: {len(law.values)} values from {min(law.values):.0f} to {max(law.values):.0f}, mean {law.mean():.4g}")
            if c.widths.grouping is not None:
                click.echo(
                    f"  makespans per {c.widths.grouping} group: {len(c.widths.groups)} groups with a law of their own, "
                    f"{c.widths.small_groups} smaller groups ({c.widths.small_group_tasks} tasks) drawing from the class's law"
                )
            for group in c.widths.groups:
                click.echo(f"    widths {group.name} ({group.tasks} tasks): {describe(group.best.law)} [{group.best.method}, KS {group.best.ks:.4f}]")
    arrivals = result.arrivals
    if arrivals.profile is not None:
        click.echo(f"arrival profile: {len(arrivals.profile.profile.rates)} bins over {arrivals.profile.profile.period:g} s, {arrivals.profile.covered_bins} observed")
    click.echo(f"inter-arrivals: {describe(arrivals.best.law)} [{arrivals.best.method}, KS {arrivals.best.ks:.4f}]")
    if arrivals.best.note:
        click.echo(f"  note: {arrivals.best.note}", err=True)
    check = None
    if fidelity:
        check = fidelity_report(table.frame, result.model, seed)
        scores = ", ".join(f"{c.name} {c.makespan_ks:.4f}" for c in check.classes)
        widths = ", ".join(f"{c.name} {c.width_ks:.4f}" for c in check.classes if c.width_ks is not None)
        click.echo(
            f"fidelity (two-sample KS, generated vs input): makespans {scores}; inter-arrivals {check.interarrival_ks:.4f}"
            + (f"; widths {widths}" if widths else "")
        )
    if report:
        write_report(report, result, str(source), check)
        click.echo(f"wrote report {report}")
    if plots:
        from .fitting.plots import write_plots  # matplotlib loads only when figures are asked for

        written = write_plots(plots, result)
        click.echo(f"wrote {len(written)} figures to {plots}")
    click.echo(f"wrote model {output}")
def _reading_options(command):
    """Options shared by the commands that read the trace's task_events."""
    options = [
        click.option("--strict", is_flag=True, help="Stop at the first bad row, naming file and line (default: skip and count)."),
        click.option("--drop-synthesized", is_flag=True, help="Drop records the trace synthesized (missing-info set)."),
        click.option("--grace", type=click.FloatRange(min=0), default=DEFAULT_GRACE, show_default=True, help="Seconds a dead task is held for a resubmission before it is reported closed."),
        click.option("--verify", is_flag=True, help="Check files against the trace's SHA256SUM first."),
        click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Threads: 1 reads and rebuilds in turn; N > 1 reads ahead in a thread (N - 1 part files at a time) while lifecycles are rebuilt. Same results."),
        click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _show_progress(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else progress


@main.group()
def trace() -> None:
    """The Google cluster trace (v2.1): statistics and conversion to Batsim."""


@trace.command("stats")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--json", "json_file", type=click.Path(dir_okay=False, path_type=Path), help="Also write the tables as JSON.")
@click.option("--csv", "csv_file", type=click.Path(dir_okay=False, path_type=Path), help="Also write the tables as CSV (table,row,column,value).")
@click.option("--plots", type=click.Path(file_okay=False, path_type=Path), help="Folder for the PNG figures (Figs. 3, 5-8).")
@click.option("--bin", "bin_width", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_BIN_WIDTH, show_default=True, help="Sampling step (s) of the running-task curves.")
@_reading_options
def trace_stats(sources, json_file, csv_file, plots, bin_width, strict, drop_synthesized, grace, verify, workers, progress) -> None:
    """Print the model paper's Tables 1-7 for the task_events in SOURCES (trace folders or parts)."""
    rows = RowAccount(strict=strict)
    stats = TraceStats(bin_width)
    try:
        for batch in rebuild(sources, rows, grace=grace, synthesized=not drop_synthesized, verify=verify, workers=workers, progress=_show_progress(progress)):
            stats.update(batch)
    except TraceError as error:
        _fail(str(error))
    tables = stats.tables()
    click.echo(render_text(tables), nl=False)
    if json_file:
        json_file.write_text(render_json({**tables, "rows": rows.to_json()}), encoding="utf-8")
    if csv_file:
        csv_file.write_text(render_csv(tables), encoding="utf-8")
    if plots:
        for path in draw_figures(stats, plots):
            click.echo(f"wrote {path}")
    click.echo(rows.summary())


@trace.command("convert")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Batsim JSON workload to write.")
@click.option("--start", type=float, default=0.0, show_default=True, help="Window start (s from the trace window start); subtimes count from it.")
@click.option("--end", type=float, default=math.inf, help="Window end (s): jobs submitted in [start, end) are kept (default: no end).")
@click.option("--per", type=click.Choice(["attempt", "task"]), default="attempt", show_default=True, help="One Batsim job per task attempt, or per task.")
@click.option("--priority-group", "priority_groups", multiple=True, type=click.Choice(list(PRIORITY_GROUPS)), help="Keep these priority groups (repeatable; default: all).")
@click.option("--end-event", "end_events", multiple=True, type=click.Choice(list(END_EVENTS)), help="Keep jobs ended by these events (repeatable; default: finish, kill).")
@click.option("--scheduling-class", "scheduling_classes", multiple=True, type=click.IntRange(0, 3), help="Keep these scheduling classes (repeatable; default: all).")
@click.option("--nb-res", type=click.IntRange(min=1), default=GOOGLE_CELL_MACHINES, show_default=True, help="Machines of the target platform (the workload's nb_res).")
@click.option("--grain", type=click.FloatRange(min=0, min_open=True), help="Round makespans to multiples of GRAIN seconds so jobs share profiles.")
@_reading_options
def trace_convert(sources, output, start, end, per, priority_groups, end_events, scheduling_classes, nb_res, grain, strict, drop_synthesized, grace, verify, workers, progress) -> None:
    """Convert the task_events in SOURCES into a Batsim workload."""
    rows = RowAccount(strict=strict)
    try:
        selection = Selection(
            start=start, end=end, per=per,
            priority_groups=priority_groups or tuple(PRIORITY_GROUPS),
            end_events=end_events or ("finish", "kill"),
            scheduling_classes=scheduling_classes or (0, 1, 2, 3),
        )
        jobs = convert_trace(
            sources, output, selection, rows, nb_res=nb_res, grain=grain, grace=grace,
            synthesized=not drop_synthesized, verify=verify, workers=workers, progress=_show_progress(progress),
        )
    except (TraceError, ValueError) as error:
        _fail(str(error))
    click.echo(f"wrote {jobs.written} jobs to {output}")
    click.echo(jobs.summary(per))
    click.echo(rows.summary())


@main.group()
def swf() -> None:
    """Standard Workload Format logs (Parallel Workloads Archive)."""


@swf.command("convert")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Batsim JSON workload to write.")
@click.option("--start", type=float, default=0.0, show_default=True, help="Window start (s of the log); subtimes count from it.")
@click.option("--end", type=float, default=math.inf, help="Window end (s): jobs submitted in [start, end) are kept (default: no end).")
@click.option("--end-event", "end_events", multiple=True, type=click.Choice(list(END_EVENTS)), help="Keep jobs of these ends (status 1 finish, 0 fail, 5 kill, other lost; default: all).")
@click.option("--nb-res", type=click.IntRange(min=1), help="Processors of the target platform (default: the log's MaxProcs, else MaxNodes).")
@click.option("--priority", type=click.FloatRange(min=0, min_open=True, max=1), default=0.5, show_default=True, help="Priority in ]0, 1] of every job (SWF has none).")
@click.option("--node-memory", type=click.FloatRange(min=0, min_open=True), help="Memory of a processor (KB) to normalize memory requests (default: memory unknown).")
@click.option("--grain", type=click.FloatRange(min=0, min_open=True), help="Round run times to multiples of GRAIN seconds so jobs share profiles.")
@click.option("--strict", is_flag=True, help="Stop at the first bad line, naming it (default: skip and count).")
def swf_convert(log, output, start, end, end_events, nb_res, priority, node_memory, grain, strict) -> None:
    """Convert an SWF log (.swf or .swf.gz) into a Batsim workload: one job per line."""
    rows = RowAccount(strict=strict)
    try:
        header = read_swf_header(log)
        nb_res = nb_res or header_processors(header)
        if nb_res is None:
            _fail(f"{log}: no MaxProcs/MaxNodes in the header; give --nb-res")
        selection = Selection(
            start=start, end=end, end_events=end_events or tuple(END_EVENTS), kill_is_service=False,
            require_requests=False, unknown_priority=priority,
        )
        meta = {"generator": "batsim-google swf convert", "source": str(log), "header": header}
        jobs = write_records(output, read_swf(log, rows, node_memory), selection, nb_res, grain=grain, meta=meta)
    except (TraceError, ValueError) as error:
        _fail(str(error))
    click.echo(f"wrote {jobs.written} jobs to {output} (nb_res {nb_res})")
    click.echo(jobs.summary("job"))
    click.echo(rows.summary())


_WORKERS = click.option("--jobs", "workers", type=click.IntRange(min=1), help="Simulations at once on this machine [default: one per core].")
_DASK = click.option("--dask", "dask_address", metavar="ADDRESS", help="Run the simulations on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://host:8786) instead; see README.")
_BATSIM = click.option("--batsim", "batsim_binary", default="batsim", show_default=True, help="The Batsim executable.")
_PROGRESS = click.option("--progress/--no-progress", default=None, help="Progress bar over the runs (default: on a terminal).")


@contextmanager
def _resumable():
    """Ctrl-C, or a worker process killed, ends the command with a message, not a traceback."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield
    except (KeyboardInterrupt, BrokenProcessPool) as error:
        reason = "interrupted" if isinstance(error, KeyboardInterrupt) else "a worker process ended abruptly (interrupted or killed)"
        click.echo(f"{reason}: finished runs are kept, run the same command again to resume", err=True)
        sys.exit(130)


def _interval(row: dict) -> str:
    if row["mean"] is None:
        return "-"
    half = "" if row["ci_high"] is None else f" +- {row['ci_high'] - row['mean']:.3g}"
    return f"{row['mean']:.4g}{half}"


@main.command("compare")
@click.argument("campaign_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for inputs, runs, tables and plots (resumable).")
@_WORKERS
@_DASK
@_BATSIM
@_PROGRESS
def compare_command(campaign_file: Path, output: Path, workers, dask_address, batsim_binary, progress) -> None:
    """Simulate every combination of a campaign's platforms, workloads, failures and policies."""
    from .experiments.campaign import load_campaign
    from .experiments.compare import compare

    try:
        campaign = load_campaign(campaign_file)
        with _resumable():
            result = compare(
                campaign, output, batsim=batsim_binary, workers=workers, dask_address=dask_address,
                progress=sys.stderr.isatty() if progress is None else progress,
            )
    except ValueError as error:
        _fail(str(error))
    counts = {status: sum(r.status == status for r in result.records) for status in ("done", "reused", "failed")}
    click.echo(f"{len(result.records)} runs: {counts['done']} simulated, {counts['reused']} reused, {counts['failed']} failed")
    shown = ("energy_j", "mean_waiting_s", "utilization", "evictions", "mean_suspension_s")
    wide = {(row["platform"], row["workload"], row["failures"], row["policy"], row["metric"]): row for row in result.summary.iter_rows(named=True)}
    for group in result.summary.select("platform", "workload", "failures", "policy", "n").unique(["platform", "workload", "failures", "policy"], maintain_order=True).iter_rows():
        values = ", ".join(f"{name} {_interval(wide[(*group[:4], name)])}" for name in shown if (*group[:4], name) in wide)
        click.echo(f"{'/'.join(group[:3])} [{group[3]}], {group[4]} runs: {values}")
    click.echo(f"wrote {', '.join(str(path) for path in result.files)}")
    for record in result.failed:
        click.echo(f"run {record.run.directory} failed: {record.error}", err=True)
    unbalanced = [record for record in result.records if record.metrics and not record.metrics["balanced"]]
    for record in unbalanced:
        click.echo(f"run {record.run.directory}: the accounting does not balance", err=True)
    if result.failed or unbalanced:
        sys.exit(1)


@main.command("validate")
@click.argument("original", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--platform", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True, help="SimGrid platform XML the workloads run on.")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for the model, runs and report (resumable).")
@click.option("--replications", type=click.IntRange(min=1), default=10, show_default=True, help="Workloads generated from the model and simulated.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first replication (then SEED+1, ...).")
@click.option("--model", "model_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="The model to validate [default: fitted to ORIGINAL as 'fit' does by default].")
@click.option("--policy", "policy_text", default="{}", show_default=True, help="Scheduler options as a TOML inline table of 'run' options, e.g. '{restart = \"delayed\", restart_delay = 600}'.")
@click.option("--timeout", type=click.FloatRange(min=1), default=3600.0, show_default=True, help="Wall-clock limit of one simulation, seconds.")
@_WORKERS
@_DASK
@_BATSIM
@_PROGRESS
def validate_command(original, platform, output, replications, seed, model_file, policy_text, timeout, workers, dask_address, batsim_binary, progress) -> None:
    """Validate a workload model by simulation (Gaevoy et al.): queue metrics and Dev."""
    import tomllib

    from .experiments.campaign import policy_config
    from .experiments.validation import validate

    try:
        policy = policy_config(tomllib.loads(f"policy = {policy_text}")["policy"], "--policy")
    except (tomllib.TOMLDecodeError, AttributeError, TypeError) as error:
        _fail(f"--policy must be a TOML inline table of 'run' options ({error})")
    except ValueError as error:
        _fail(str(error))
    try:
        with _resumable():
            result = validate(
                original, platform, output, replications=replications, seed=seed, model=model_file, policy=policy,
                timeout=timeout, batsim=batsim_binary, workers=workers, dask_address=dask_address,
                progress=sys.stderr.isatty() if progress is None else progress,
            )
    except SimulationError as error:
        raise click.ClickException(str(error)) from error
    except ValueError as error:
        _fail(str(error))

    def show(value) -> str:
        return "-" if value is None else f"{value:.4g}"

    click.echo(f"{'metric':<24}{'original':>12}{'generated':>12}{'+- 95 %':>10}{'rel. error':>12}{'n for 5 %':>11}")
    for c in result.metrics:
        click.echo(
            f"{c.metric:<24}{show(c.reference):>12}{show(c.mean):>12}{show(c.ci_half_width):>10}"
            f"{show(c.relative_error):>12}{show(c.replications_needed):>11}"
        )
    if result.left_out:
        click.echo(f"left out of Dev (missing or 0 in the original): {', '.join(result.left_out)}")
    per_run = result.replication_deviations
    click.echo(
        f"Dev = {result.deviation:.4f} over {len(result.metrics) - len(result.left_out)} metrics, {len(per_run)} replications "
        f"(one replication alone: {min(per_run):.4f} to {max(per_run):.4f}); "
        f"replications needed for a 5 % error: {show(result.replications_needed)}"
    )
    for failure in result.failed_runs:
        click.echo(f"failed: {failure}", err=True)
    click.echo(f"wrote {output}")
