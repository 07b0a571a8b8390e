"""The ``trace`` and ``swf`` command groups: statistics and conversion of real logs to Batsim."""

from __future__ import annotations

import math
from pathlib import Path

import click
from click.core import ParameterSource

from batsim_google.cli.common import (
    MACHINES,
    SEED,
    WORKERS,
    WORKLOAD_OUTPUT_OPTION,
    NumberRange,
    cell_workload_options,
    checked_output_file,
    checked_output_folder,
    fail,
    fail_usage,
    progress_option,
    show_progress,
    walltime_options,
)
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.trace.vocabulary import DEFAULT_BIN_WIDTH, DEFAULT_GRACE, END_EVENT_NAMES, PRIORITY_GROUPS


def _reading_options(command):
    """Options shared by the commands that read the trace's task_events."""
    options = [
        click.option(
            "--strict", is_flag=True, help="Stop at the first bad row, naming file and line (default: skip and count)."
        ),
        click.option(
            "--drop-synthesized",
            is_flag=True,
            help="Leave out the tasks and attempts with an event the trace synthesized (missing info set), counted.",
        ),
        click.option(
            "--grace",
            type=NumberRange(min=0, infinite=True),
            default=DEFAULT_GRACE,
            show_default=True,
            help="Seconds a dead task is held for a resubmission before it is reported closed.",
        ),
        click.option("--verify", is_flag=True, help="Check files against the trace's SHA256SUM first."),
        click.option(
            "--workers",
            type=WORKERS,
            default=1,
            show_default=True,
            help="Threads: 1 reads and rebuilds in turn; N > 1 reads ahead in a thread (N - 1 part files at a time) while lifecycles are rebuilt. Same results.",
        ),
        progress_option(),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group()
def trace() -> None:
    """The Google cluster trace (v2.1): statistics and conversion to Batsim."""


@trace.command("stats")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--json", "json_file", type=click.Path(dir_okay=False, path_type=Path), help="Also write the tables as JSON."
)
@click.option(
    "--csv",
    "csv_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the tables as CSV (table,row,column,value).",
)
@click.option(
    "--plots", type=click.Path(file_okay=False, path_type=Path), help="Folder for the PNG figures (Figs. 3, 5-8)."
)
@click.option(
    "--bin",
    "bin_width",
    type=NumberRange(min=0, min_open=True),
    default=DEFAULT_BIN_WIDTH,
    show_default=True,
    help="Sampling step (s) of the running-task curves.",
)
@_reading_options
def trace_stats(
    sources, json_file, csv_file, plots, bin_width, strict, drop_synthesized, grace, verify, workers, progress
) -> None:
    """Print the model paper's Tables 1-7 for the task_events in SOURCES (trace folders or parts)."""
    from batsim_google.output_files import write_text
    from batsim_google.trace.rebuild import rebuild
    from batsim_google.trace.row_accounting import RowAccount
    from batsim_google.trace.stats import TraceStats
    from batsim_google.trace.stats_render import render_csv, render_json, render_text

    for table_file in (json_file, csv_file):
        if table_file:
            checked_output_file(table_file, *sources)
    if plots:
        checked_output_folder(plots, *sources)
    rows = RowAccount(strict=strict)
    stats = TraceStats(bin_width, synthesized=not drop_synthesized)
    for batch in rebuild(sources, rows, grace=grace, verify=verify, workers=workers, progress=show_progress(progress)):
        stats.update(batch)
    tables = stats.tables()
    click.echo(render_text(tables), nl=False)
    if json_file:
        write_text(json_file, render_json({**tables, "rows": rows.to_json()}))
    if csv_file:
        write_text(csv_file, render_csv(tables))
    if plots:
        from batsim_google.trace.stats_figures import draw_figures  # matplotlib, only for figures

        for path in draw_figures(stats, plots):
            click.echo(f"wrote {path}")
    click.echo(rows.summary())


@trace.command("convert")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@WORKLOAD_OUTPUT_OPTION
@click.option(
    "--start",
    type=NumberRange(),
    default=0.0,
    show_default=True,
    help="Window start (s from the trace window start); subtimes count from it.",
)
@click.option(
    "--end",
    type=NumberRange(infinite=True),
    default=math.inf,
    help="Window end (s): jobs submitted in [start, end) are kept (default: no end).",
)
@click.option(
    "--per",
    type=click.Choice(["attempt", "task"]),
    default="attempt",
    show_default=True,
    help="One Batsim job per task attempt, or per task.",
)
@click.option(
    "--priority-group",
    "priority_groups",
    multiple=True,
    type=click.Choice(list(PRIORITY_GROUPS)),
    help="Keep these priority groups (repeatable; default: all).",
)
@click.option(
    "--end-event",
    "end_events",
    multiple=True,
    type=click.Choice(list(END_EVENT_NAMES)),
    help="Keep jobs ended by these events (repeatable; default: finish, kill). Records whose end is not in the "
    "input (censored at its end, written as services) go with kill.",
)
@click.option(
    "--scheduling-class",
    "scheduling_classes",
    multiple=True,
    type=click.IntRange(0, 3),
    help="Keep these scheduling classes (repeatable; default: all).",
)
@click.option(
    "--initial-state/--no-initial-state",
    default=True,
    show_default=True,
    help="Write the tasks running or pending at the window start, submitted at the start "
    "(running ones for the time they had left; flagged 'initial').",
)
@click.option(
    "--sample-cell",
    type=click.IntRange(1, GOOGLE_2011_MACHINES),
    help="A scaled replay on a cell of N machines: keep the tasks of machines kept with probability N / "
    f"{GOOGLE_2011_MACHINES:,} (sets --nb-res to N; the platform is `platform --machines N`).",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of --sample-cell's choice of machines and of --walltime user-estimate's draws.",
)
@click.option(
    "--faithful",
    is_flag=True,
    help="Task-level faithful replay: every attempt that ended by itself (finish, kill, fail, lost) with its "
    "resubmissions, evicted attempts folded into the next one (evictions are the scheduler's), and the tasks "
    "running at the start kept on the trace's machine (see docs/faithful-replay.md).",
)
@click.option(
    "--place-again",
    is_flag=True,
    help="With --faithful: let the scheduler place the tasks running at the start anew.",
)
@cell_workload_options
@walltime_options("none")
@_reading_options
def trace_convert(
    sources,
    output,
    start,
    end,
    per,
    priority_groups,
    end_events,
    scheduling_classes,
    initial_state,
    sample_cell,
    seed,
    faithful,
    place_again,
    nb_res,
    grain,
    walltime,
    strict,
    drop_synthesized,
    grace,
    verify,
    workers,
    progress,
) -> None:
    """Convert the task_events in SOURCES into a Batsim workload."""
    from batsim_google.trace.convert import Selection, convert_trace
    from batsim_google.trace.row_accounting import RowAccount
    from batsim_google.trace.sampling import MachineSample

    checked_output_file(output, *sources)
    if place_again and not faithful:
        fail_usage("--place-again is an option of --faithful")
    if faithful and (per != "attempt" or end_events):
        fail_usage("--faithful replays every attempt with every end event: no --per task, no --end-event")
    if sample_cell is not None:
        if click.get_current_context().get_parameter_source("nb_res") is ParameterSource.COMMANDLINE:
            if nb_res != sample_cell:
                fail_usage(f"--nb-res {nb_res} differs from --sample-cell {sample_cell}: give one")
        nb_res = sample_cell
    rows = RowAccount(strict=strict)
    selection = Selection(
        start=start,
        end=end,
        per=per,
        priority_groups=priority_groups or tuple(PRIORITY_GROUPS),
        end_events=end_events or (END_EVENT_NAMES if faithful else ("finish", "kill")),
        scheduling_classes=scheduling_classes or (0, 1, 2, 3),
        synthesized=not drop_synthesized,
        initial_state=initial_state,
        sample=None if sample_cell is None else MachineSample(sample_cell, seed),
        faithful=faithful,
        pin_running=not place_again,
        grain=grain,
        walltime=walltime,
        walltime_seed=seed,
    )
    jobs = convert_trace(
        sources,
        output,
        selection,
        rows,
        nb_res=nb_res,
        grace=grace,
        verify=verify,
        workers=workers,
        progress=show_progress(progress),
    )
    click.echo(f"wrote {jobs.written} jobs to {output}")
    click.echo(jobs.summary(per))
    click.echo(rows.summary())


@click.group()
def swf() -> None:
    """Standard Workload Format logs (Parallel Workloads Archive)."""


@swf.command("convert")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@WORKLOAD_OUTPUT_OPTION
@click.option(
    "--start",
    type=NumberRange(),
    default=0.0,
    show_default=True,
    help="Window start (s of the log); subtimes count from it.",
)
@click.option(
    "--end",
    type=NumberRange(infinite=True),
    default=math.inf,
    help="Window end (s): jobs submitted in [start, end) are kept (default: no end).",
)
@click.option(
    "--end-event",
    "end_events",
    multiple=True,
    type=click.Choice(list(END_EVENT_NAMES)),
    help="Keep jobs of these ends (status 1 finish, 0 fail, 5 kill, other lost; default: all).",
)
@click.option(
    "--nb-res",
    type=MACHINES,
    help="Processors of the target platform (default: the log's MaxProcs, else MaxNodes).",
)
@click.option(
    "--priority",
    type=NumberRange(min=0, min_open=True, max=1),
    default=0.5,
    show_default=True,
    help="Priority in ]0, 1] of every job (SWF has none).",
)
@click.option(
    "--node-memory",
    type=NumberRange(min=0, min_open=True),
    help="Memory of a processor (KB) to normalize memory requests (default: memory unknown).",
)
@click.option(
    "--grain",
    type=NumberRange(min=0, min_open=True),
    help="Round run times to multiples of GRAIN seconds so jobs share profiles.",
)
@walltime_options("requested")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of --walltime user-estimate's draws.")
@click.option("--strict", is_flag=True, help="Stop at the first bad line, naming it (default: skip and count).")
def swf_convert(
    log, output, start, end, end_events, nb_res, priority, node_memory, grain, walltime, seed, strict
) -> None:
    """Convert an SWF log (.swf or .swf.gz) into a Batsim workload: one job per line."""
    from batsim_google.trace.convert import Selection, write_records
    from batsim_google.trace.row_accounting import RowAccount
    from batsim_google.trace.swf import header_processors, read_swf
    from batsim_google.trace.swf import read_header as read_swf_header

    checked_output_file(output, log)
    rows = RowAccount(strict=strict)
    header = read_swf_header(log)
    nb_res = nb_res or header_processors(header, log)
    if nb_res is None:
        fail(f"{log}: no MaxProcs/MaxNodes in the header; give --nb-res")
    selection = Selection(
        start=start,
        end=end,
        end_events=end_events or END_EVENT_NAMES,
        kill_is_service=False,
        require_requests=False,
        unknown_priority=priority,
        grain=grain,
        walltime=walltime,
        walltime_seed=seed,
    )
    meta = {"generator": "batsim-google swf convert", "source": str(log), "header": header}
    jobs = write_records(
        output,
        read_swf(log, rows, node_memory),
        selection,
        nb_res,
        meta=meta,
    )
    click.echo(f"wrote {jobs.written} jobs to {output} (nb_res {nb_res})")
    click.echo(jobs.summary("job"))
    click.echo(rows.summary())
