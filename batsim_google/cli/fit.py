"""The ``fit`` command: a workload model fitted to a trace, an SWF log, a workload or a task table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from batsim_google.cli.common import SEED, checked_output_file, checked_output_folder, fail, fail_usage, show_progress
from batsim_google.fitting.vocabulary import CLASSIFICATIONS, CRITERIA, FITTER_NAMES, PROFILE_CHOICES
from batsim_google.model.vocabulary import GROUPINGS

if TYPE_CHECKING:
    import polars as pl


def _fit_input(source: Path, strict: bool, speed: float | None = None, censored: bool = False) -> pl.DataFrame:
    """A Google trace (a folder with task_events/, or a ``.csv.gz`` part), an SWF log (``.swf``,
    ``.swf.gz``), a Batsim workload (``.json``) or a task table (``.parquet``, ``.csv``; columns in
    :mod:`batsim_google.fitting.table`)."""
    import polars as pl

    from batsim_google.fitting.batsim_input import BatsimInputError, read_batsim_table
    from batsim_google.fitting.swf_input import SWF_PRIORITY, swf_task_table
    from batsim_google.fitting.trace_input import trace_job_records, trace_task_table
    from batsim_google.trace.row_accounting import RowAccount, TraceError

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
            frame, left_out = trace_task_table([source], account, progress=show_progress(None), censored=censored)
            click.echo(f"task_events: {account.summary()}")
            if left_out and not censored:  # a censored fit says what it did with them (without_lifetime_summary)
                click.echo("modeled tasks left out: " + ", ".join(f"{n} {reason}" for reason, n in left_out.items()))
            if source.is_dir() and (source / "job_events").is_dir():
                account = RowAccount(strict=strict)
                frame = frame.join(trace_job_records([source], account), on="job_id", how="left")
                click.echo(f"job_events: {account.summary()}")
            return frame
        if suffix == ".json":
            table = read_batsim_table(source, speed)
            for note in table.notes():
                click.echo(note)
            return table.frame
        if suffix == ".parquet":
            return pl.read_parquet(source)
        if suffix == ".csv":
            return pl.read_csv(source)
    except (BatsimInputError, TraceError) as error:  # their messages name the file
        fail(str(error))
    except (pl.exceptions.PolarsError, OSError) as error:
        fail(f"{source}: {error}")
    fail(
        f"{source}: fit reads a trace (folder or .csv.gz part), an SWF log (.swf, .swf.gz), a Batsim workload (.json) or a task table (.parquet, .csv)"
    )


@click.command("fit")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Model file to write (.toml or .json).",
)
@click.option(
    "--classes",
    type=click.Choice(CLASSIFICATIONS),
    help="apriori: Finish-ended tasks / Kill-ended services (default); kmeans: clusters.",
)
@click.option(
    "--k",
    type=click.IntRange(2, 1000),
    help="Number of k-means classes (implies --classes kmeans; default: best mean silhouette for k = 2..10).",
)
@click.option(
    "--profile",
    type=click.Choice(PROFILE_CHOICES),
    default="auto",
    show_default=True,
    help="Arrival-rate profile in half-hour bins; auto: weekly if the input spans a week, daily if a day, else none.",
)
@click.option(
    "--criterion",
    type=click.Choice(CRITERIA),
    default="ks",
    show_default=True,
    help="How the best law is chosen: smallest KS statistic or smallest AIC.",
)
@click.option(
    "--groups",
    type=click.Choice(["none", *GROUPINGS]),
    default="none",
    show_default=True,
    help="Parallel jobs (a width column, e.g. SWF): makespan laws per width, or per power-of-two group of widths; none: one per class.",
)
@click.option("--laws", "methods", help=f"Comma-separated fitting methods (default: all of {', '.join(FITTER_NAMES)}).")
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of k-means, the silhouette sample and the fidelity check.",
)
@click.option("--plots", "plots", type=click.Path(file_okay=False, path_type=Path), help="Folder for PNG figures.")
@click.option(
    "--report",
    "report",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Fit report: JSON if it ends in .json, else Markdown.",
)
@click.option(
    "--fidelity/--no-fidelity",
    default=True,
    show_default=True,
    help="Generate from the fitted model and compare with the input (two-sample KS per class).",
)
@click.option(
    "--jobs/--no-jobs",
    default=True,
    show_default=True,
    help="Fit job-level arrivals (jobs of tasks) when the input has job ids (the Google trace does).",
)
@click.option(
    "--censored/--no-censored",
    default=True,
    show_default=True,
    help="Google trace: also the tasks the input cuts (running at its start or end), with censored lifetime fits, "
    "and a stationary cell: the classes' arrivals keep the tasks and CPU running at the input's start (Little's "
    "law, services in bands of CPU request; see docs/fitting.md). --no-censored fits only the tasks submitted and "
    "ended in the input.",
)
@click.option(
    "--speed",
    help="A Batsim workload's machines' speed (flop/s, or SimGrid's 1Gf...): durations of its profiles of flops.",
)
@click.option("--strict", is_flag=True, help="Stop at the first invalid row instead of skipping and counting it.")
def fit_command(
    source,
    output,
    classes,
    k,
    profile,
    criterion,
    groups,
    methods,
    seed,
    plots,
    report,
    fidelity,
    jobs,
    censored,
    speed,
    strict,
) -> None:
    """Fit a workload model to a Google trace, an SWF log, a Batsim workload or a task table."""
    from batsim_google.fitting.fidelity import fidelity_report
    from batsim_google.fitting.job_arrivals import describe_job_profile
    from batsim_google.fitting.model_fit import (
        FitSettings,
        fit_model,
    )
    from batsim_google.fitting.report import describe, stationarity_summary, without_lifetime_summary, write_report
    from batsim_google.model.workload_model import save_model

    if classes == "apriori" and k is not None:
        fail_usage("--k needs --classes kmeans")
    if output.suffix.lower() not in (".toml", ".json"):
        fail_usage(f"{output}: the model file must end in .toml or .json")
    checked_output_file(output, source)
    if report:
        checked_output_file(report, source)
    if plots:
        checked_output_folder(plots, source)
    if speed is not None:
        from batsim_google.platform.simgrid_xml import parse_speed

        speed = parse_speed(speed)
    frame = _fit_input(source, strict, speed, censored)
    result = fit_model(
        frame,
        FitSettings(
            classes=classes or ("kmeans" if k else "apriori"),
            k=k,
            profile=profile,
            criterion=criterion,
            methods=None if methods is None else [m.strip() for m in methods.split(",") if m.strip()],
            seed=seed,
            strict=strict,
            groups=None if groups == "none" else groups,
            jobs=jobs,
        ),
        name=f"fitted from {source.name}",
        source=str(source),
    )
    save_model(result.model, output)
    table = result.table
    click.echo(f"fit table: {table.rows.summary()}")
    if note := stationarity_summary(result):
        click.echo(note)
    if note := without_lifetime_summary(result):
        click.echo(note)
    for c in result.classes:
        click.echo(
            f"{c.name} ({c.kind}, {c.tasks} tasks, frequency {c.frequency:.4g}, mass {c.mass:.4g} s, disparity "
            f"{c.disparity:.3g}, lambda {c.priority.rate:.4g}): {describe(c.best.law)} [{c.best.method}, KS {c.best.ks:.4f}]"
        )
        if c.cpu_share is not None:
            click.echo(f"  {c.cpu_share:.1%} of the requested CPU")
        if c.without_lifetime:
            click.echo(
                f"  {c.without_lifetime} more tasks without a lifetime drawn into it (in its frequency and CPU share)"
            )
        if c.censored:
            click.echo(f"  censored: {c.censored} of its lifetimes outlive the input (lower bounds), fitted as such")
        if c.best.note:
            click.echo(f"  lifetime law: {c.best.note}")
        if c.cpu_range is not None:
            click.echo(f"  CPU requests in [{c.cpu_range[0]:.4g}, {c.cpu_range[1]:.4g})")
        if c.requests is not None:
            click.echo(
                f"  requests: the start's {sum(c.requests.count):,.0f} tasks in its band and group "
                f"({len(c.requests.cpu)} distinct pairs), for its warm tasks and its arrivals"
            )
        if c.population is not None:
            click.echo(f"  holds {c.population:,.0f} tasks of the start (its rate x mean lifetime)")
        if c.priority.note:
            click.echo(f"  note: {c.priority.note}", err=True)
        if c.widths is not None:
            law = c.widths.law
            click.echo(
                f"  widths: {len(law.values)} values from {min(law.values):.0f} to {max(law.values):.0f}, mean {law.mean():.4g}"
            )
            if c.widths.grouping is not None:
                click.echo(
                    f"  makespans per {c.widths.grouping} group: {len(c.widths.groups)} groups with a law of their own, "
                    f"{c.widths.small_groups} smaller groups ({c.widths.small_group_tasks} tasks) drawing from the class's law"
                    + (
                        f"; so do groups of equal makespans: {', '.join(c.widths.constant_groups)}"
                        if c.widths.constant_groups
                        else ""
                    )
                )
            for group in c.widths.groups:
                click.echo(
                    f"    widths {group.name} ({group.tasks} tasks): {describe(group.best.law)} [{group.best.method}, KS {group.best.ks:.4f}]"
                )
    arrivals = result.arrivals
    if arrivals.profile is not None:
        click.echo(
            f"arrival profile: {len(arrivals.profile.profile.rates)} bins over {arrivals.profile.profile.period:g} s, {arrivals.profile.covered_bins} observed"
        )
    click.echo(f"inter-arrivals: {describe(arrivals.best.law)} [{arrivals.best.method}, KS {arrivals.best.ks:.4f}]")
    if arrivals.zero_gaps:
        click.echo(
            f"  {arrivals.zero_gaps} of {arrivals.gaps} gaps are zero (simultaneous submissions): "
            f"the model draws them at that share (simultaneous = {arrivals.simultaneous:.4g})"
        )
    if arrivals.best.note:
        click.echo(f"  note: {arrivals.best.note}", err=True)
    if result.jobs is not None:
        fitted = result.jobs
        click.echo(
            f"jobs: {fitted.job_count}, {fitted.jobs.mean_tasks():.4g} tasks per job on average; job inter-arrivals: "
            f"{describe(fitted.best.law)} [{fitted.best.method}, KS {fitted.best.ks:.4f}]; "
            f"{fitted.jobs.zero_spread:.4g} of the gaps within jobs simultaneous (under 10 us)"
        )
        if result.model.arrival_profile is not None and (
            note := describe_job_profile(fitted, result.model.arrival_profile)
        ):
            click.echo(f"  {note}")
        click.echo(
            "  shared by all the tasks of a job: "
            + ", ".join(f"{name} {share:.1%}" for name, share in fitted.shared.items())
            + f" (of {fitted.multi_task_jobs} jobs of two tasks or more)"
        )
        if fitted.as_recorded is not None:
            click.echo(
                f"  job_events: {fitted.recorded_jobs} jobs start at their own SUBMIT; their tasks all have the job's "
                + ", ".join(f"{name} in {share:.1%}" for name, share in fitted.as_recorded.items())
            )
    check = None
    if fidelity:
        check = fidelity_report(table.frame, result.model, seed)
        scores = ", ".join(f"{c.name} {c.makespan_ks:.4f}" for c in check.classes)
        widths = ", ".join(f"{c.name} {c.width_ks:.4f}" for c in check.classes if c.width_ks is not None)
        # with jobs, raw gaps mix the trace's 1-2 us stamps with the generator's zeros: the job line says it
        arrivals = "" if check.jobs is not None else f"; inter-arrivals {check.interarrival_ks:.4f}"
        click.echo(
            f"fidelity (two-sample KS, generated vs input): makespans {scores}{arrivals}"
            + (f"; widths {widths}" if widths else "")
        )
        if check.jobs is not None:
            error = check.jobs.worst_hourly_error
            click.echo(
                f"job fidelity (two-sample KS): task gaps {check.jobs.task_gap_ks:.4f}, job gaps "
                f"{check.jobs.job_gap_ks:.4f}, tasks per job {check.jobs.tasks_per_job_ks:.4f}; hourly rates "
                + ("-" if error is None else f"within {error:.1%} (worst hour, {check.jobs.hourly_note()})")
            )
    load = None
    if result.start is not None:
        from batsim_google.fitting.load_fidelity import load_fidelity
        from batsim_google.model.request_law import load_request_law
        from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES

        load = load_fidelity(frame, result.model, load_request_law(), GOOGLE_2011_MACHINES, seed)
        cpu_error, memory_error = load.errors
        click.echo(
            f"start: input {load.input_start.describe()}; model's warm start on {load.machines:,} machines "
            f"(seed {seed}): {load.warm_start.describe()}"
        )
        click.echo(
            f"requested load over the input's span, generated against input: CPU within {cpu_error:.1%}, "
            f"memory within {memory_error:.1%} (mean absolute error over the input's mean{load.span_note})"
        )
        if note := load.day_note():
            click.echo(note)
    if report:
        write_report(report, result, str(source), check, load)
        click.echo(f"wrote report {report}")
    if plots:
        from batsim_google.fitting.fit_figures import write_plots  # matplotlib, only for figures

        written = write_plots(plots, result, check, load)
        click.echo(f"wrote {len(written)} figures to {plots}")
    click.echo(f"wrote model {output}")


@click.command("compare-workload")
@click.argument("workload", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("reference", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the report: comparison.md and comparison.json.",
)
@click.option("--strict", is_flag=True, help="Stop at the first invalid row instead of skipping and counting it.")
def compare_workload_command(workload: Path, reference: Path, output: Path | None, strict: bool) -> None:
    """Compare a Batsim workload with a trace, an SWF log, another workload or a task table: fit's fidelity report."""
    import json

    from batsim_google.fitting.fidelity import compare_inputs
    from batsim_google.fitting.report import comparison_markdown
    from batsim_google.fitting.table import task_table
    from batsim_google.output_files import output_folder, write_text
    from batsim_google.trace.row_accounting import RowAccount, TraceError

    if workload.suffix.lower() != ".json":
        fail_usage(f"{workload}: WORKLOAD is a Batsim workload (.json)")
    if output:
        checked_output_folder(output, workload, reference)
    tables = []
    for source in (reference, workload):
        frame = _fit_input(source, strict)
        account = RowAccount(strict=strict)
        try:
            table = task_table(frame, account, str(source)).frame
        except (TraceError, ValueError) as error:
            fail(f"{source}: {error}")
        if table.height < 2:
            fail(f"{source}: fewer than 2 valid tasks to compare ({account.summary()})")
        tables.append((table, account.summary()))
    check = compare_inputs(tables[0][0], tables[1][0])
    for c in check.classes:
        click.echo(
            f"{c.name}: {c.generated_tasks} tasks in the workload, {c.original_tasks} in the reference; frequency "
            f"{c.generated_frequency:.4g} vs {c.original_frequency:.4g}; makespan KS {c.makespan_ks:.4f}; "
            f"mean priority {c.generated_mean_priority:.4g} vs {c.original_mean_priority:.4g}"
            + ("" if c.width_ks is None else f"; width KS {c.width_ks:.4f}")
        )
    rates = check.rates
    shown = [f"{r:.4g}" if r is not None else "-" for r in (rates.other_rate, rates.original_rate)]
    gap = rates.worst_profile_gap
    click.echo(
        f"inter-arrivals KS {check.interarrival_ks:.4f}; submissions per hour {shown[0]} vs {shown[1]}; hourly "
        + (
            "profile: no whole hour in common"
            if gap is None
            else f"profile over {rates.hours} h: largest gap {gap:.3g}"
        )
    )
    if check.jobs is not None:
        click.echo(
            f"jobs: {check.jobs.generated_jobs} vs {check.jobs.original_jobs}; KS task gaps {check.jobs.task_gap_ks:.4f}, "
            f"job gaps {check.jobs.job_gap_ks:.4f}, tasks per job {check.jobs.tasks_per_job_ks:.4f}"
        )
    if output:
        folder = output_folder(output, [workload, reference])
        rows = (tables[0][1], tables[1][1])
        write_text(folder / "comparison.md", comparison_markdown(check, str(workload), str(reference), rows))
        mapping = {"workload": str(workload), "reference": str(reference), "rows": rows, **check.to_mapping()}
        write_text(folder / "comparison.json", json.dumps(mapping, indent=1, default=float) + "\n")
        click.echo(f"wrote {folder / 'comparison.md'} and {folder / 'comparison.json'}")
