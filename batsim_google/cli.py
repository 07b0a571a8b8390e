"""Command line: ``batsim-google SUBCOMMAND``.

Errors in user input (bad parameters, unreadable files) end with a one-line message naming the
parameter or file and exit status 2, never a traceback.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from . import __version__
from .model import ModelError, WorkloadModel, load_model
from .presets import PRESETS, preset
from .requests import derive_request_law, load_request_law
from .swf import header_processors, read_swf
from .swf import read_header as read_swf_header
from .trace.accounting import RowAccount, TraceError
from .trace.convert import END_EVENTS, Selection, convert_trace, write_records
from .trace.lifecycle import DEFAULT_GRACE, rebuild
from .trace.plots import draw_figures
from .trace.schema import PRIORITY_GROUPS
from .trace.stats import DEFAULT_BIN_WIDTH, TraceStats, render_csv, render_json, render_text
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


def _reading_options(command):
    """Options shared by the commands that read the trace's task_events."""
    options = [
        click.option("--strict", is_flag=True, help="Stop at the first bad row, naming file and line (default: skip and count)."),
        click.option("--drop-synthesized", is_flag=True, help="Drop records the trace synthesized (missing-info set)."),
        click.option("--grace", type=click.FloatRange(min=0), default=DEFAULT_GRACE, show_default=True, help="Seconds a dead task is held for a resubmission before it is reported closed."),
        click.option("--verify", is_flag=True, help="Check files against the trace's SHA256SUM first."),
        click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Part files parsed ahead in parallel threads."),
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
