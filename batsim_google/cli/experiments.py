"""Commands that run many simulations: ``compare`` (a campaign) and ``validate`` (a model)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from batsim_google.cli.common import (
    BATSIM_OPTION,
    SEED,
    checked_output_folder,
    fail_usage,
    progress_option,
    show_progress,
    warmup_option,
)
from batsim_google.cli.parallel_options import DASK_OPTION, RETRY_FAILED_OPTION, jobs_option, resumable
from batsim_google.cli.simulation_options import simulation_options, simulation_settings

#: The commands' progress bars follow the runs, not one simulation's time.
_OVER = "the runs"


def _run_line(record, finished: int, todo: int) -> None:
    """One line per run as it ends, for a campaign without a progress bar."""
    if record.status == "failed":
        outcome = f"failed: {record.error.splitlines()[0] if record.error else 'unknown reason'}"
    else:
        outcome = f"done in {record.wall_seconds:.0f} s"
    click.echo(f"[{finished}/{todo}] {record.run.directory}: {outcome}")


def _interval(row: dict, runs: int) -> str:
    """The mean and its interval; of how many of the group's ``runs`` when fewer had a value (a mean
    wait over the runs that submitted a task in the window)."""
    if row["mean"] is None:
        return "n/a"
    interval = "" if row["ci_high"] is None else f" [{row['ci_low']:.4g}, {row['ci_high']:.4g}]"
    fewer = f" ({row['n']} of {runs} runs)" if row["n"] < runs else ""
    return f"{row['mean']:.4g}{interval}{fewer}"


#: The summary's lines per group: costs, the work done, then the CPU run past the machines'
#: capacities, which the load's energy does not bill (a lower energy per CPU-hour by the model).
_COSTS = (
    "energy_j",
    "load_energy_j",
    "idle_energy_j",
    "mean_waiting_s",
    "p95_waiting_s",
    "mean_bounded_slowdown",
    "mean_job_response_s",
    "utilization",
    "evictions",
    "mean_suspension_s",
)
_WORK = (
    "completed",
    "not_restarted",
    "lost_to_failures",
    "rejected",
    "jobs_refused",
    "pending_at_end",
    "censored",
    "delivered_cpu_s",
)
_OVERCOMMIT = ("energy_per_cpu_hour_j", "allocated_cpu_s", "overcommit_cpu_s", "peak_machine_load")


def _show_summary(summary) -> None:
    """Per group, the mean (and 95 % interval) of its costs and of its work done, over n runs; then
    the scenarios whose policies delivered different work."""
    import polars as pl

    wide = {
        (row["platform"], row["workload"], row["failures"], row["policy"], row["metric"]): row
        for row in summary.iter_rows(named=True)
    }
    groups = (
        summary.group_by(["platform", "workload", "failures", "policy"], maintain_order=True)
        .agg(pl.col("n").max())
        .iter_rows()
    )
    for *group, n in groups:
        correction = wide[(*group, "energy_j")]["energy_correction"] if (*group, "energy_j") in wide else None
        note = f" (energy: delay-job load correction {correction})" if correction else ""
        click.echo(f"{'/'.join(group[:3])} [{group[3]}], n = {n} runs{note}:")
        for names in (_COSTS, _WORK, _OVERCOMMIT):
            values = ", ".join(
                f"{name} {_interval(wide[(*group, name)], n)}" for name in names if (*group, name) in wide
            )
            click.echo(f"  {values}")
    for warning in summary["warning"].drop_nulls().unique(maintain_order=True):
        click.echo(f"warning: {warning}", err=True)


@click.command("compare")
@click.argument("campaign_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for inputs, runs, tables and plots (resumable).",
)
@jobs_option()
@DASK_OPTION
@BATSIM_OPTION
@progress_option(_OVER)
@RETRY_FAILED_OPTION
def compare_command(
    campaign_file: Path, output: Path, workers, dask_address, batsim_binary, progress, retry_failed
) -> None:
    """Simulate every combination of a campaign's platforms, workloads, failures and policies."""
    from batsim_google.experiments.campaign import load_campaign
    from batsim_google.experiments.compare import compare

    checked_output_folder(output, campaign_file)
    campaign = load_campaign(campaign_file)
    shown = show_progress(progress)
    with resumable():
        result = compare(
            campaign,
            output,
            batsim=batsim_binary,
            workers=workers,
            dask_address=dask_address,
            progress=shown,
            retry_failed=retry_failed,
            on_record=None if shown else _run_line,
            warn=lambda message: click.echo(f"warning: {message}", err=True),
        )
    counts = {status: sum(r.status == status for r in result.records) for status in ("done", "reused", "failed")}
    earlier = sum(record.earlier for record in result.failed)
    again = f" ({earlier} of them in an earlier invocation, not run again: --retry-failed runs them)" if earlier else ""
    click.echo(
        f"{len(result.records)} runs: {counts['done']} simulated, {counts['reused']} reused, "
        f"{counts['failed']} failed{again}"
    )
    _show_summary(result.summary)
    click.echo(f"wrote {', '.join(str(path) for path in result.files)}")
    for scheduler, platform, failures in sorted(campaign.skipped):
        click.echo(
            f"not run: {scheduler} on {platform} with failures {failures} (skip_refused: it cannot take them)", err=True
        )
    for record in result.failed:
        when = " (in an earlier invocation)" if record.earlier else ""
        click.echo(f"run {record.run.directory} failed{when}: {record.error}", err=True)
    # balanced is null without the ledger: nothing to check
    unbalanced = [record for record in result.records if record.metrics and record.metrics["balanced"] is False]
    for record in unbalanced:
        click.echo(f"run {record.run.directory}: the accounting does not balance", err=True)
    if result.failed or unbalanced:
        sys.exit(1)


@click.command("validate")
@click.argument("original", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--platform",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="SimGrid platform XML the workloads run on.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for the model, runs and report (resumable).",
)
@click.option(
    "--replications",
    type=click.IntRange(1, 10**4),
    default=10,
    show_default=True,
    help="Workloads generated from the model and simulated.",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of the first replication (then SEED+1, ...).",
)
@click.option(
    "--model",
    "model_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The model to validate [default: fitted to ORIGINAL as 'fit' does by default].",
)
@click.option(
    "--policy",
    "policy_text",
    default="{}",
    show_default=True,
    help="Scheduler options as a TOML inline table of 'run' options, e.g. '{restart = \"delayed\", restart_delay = 600}'.",
)
@warmup_option
@simulation_options(_OVER)
@jobs_option()
@DASK_OPTION
@RETRY_FAILED_OPTION
def validate_command(
    original,
    platform,
    output,
    replications,
    seed,
    model_file,
    policy_text,
    warmup,
    timeout,
    workers,
    dask_address,
    batsim_binary,
    progress,
    retry_failed,
) -> None:
    """Validate a workload model by simulation (Gaevoy et al.): queue metrics and Dev."""
    from batsim_google.experiments.validation import ModelCheck, validate
    from batsim_google.experiments.window import window_of
    from batsim_google.parameters import parse_text
    from batsim_google.scheduling.policy_config import PolicyConfig

    checked_output_folder(output, original, platform, model_file)
    try:
        raw = parse_text(f"policy = {policy_text}", ".toml")["policy"]
    except ValueError as error:
        fail_usage(f"--policy must be a TOML inline table of 'run' options ({error})")
    try:
        policy = PolicyConfig.from_mapping(raw, "--policy")
        window_of(warmup, policy.horizon)  # a window that leaves nothing is refused before any run
    except (AttributeError, TypeError) as error:
        fail_usage(f"--policy must be a TOML inline table of 'run' options ({error})")
    with resumable():
        result = validate(
            ModelCheck(original, platform, model_file, replications, seed, policy, warmup),
            output,
            settings=simulation_settings(timeout, batsim_binary, progress),
            workers=workers,
            dask_address=dask_address,
            retry_failed=retry_failed,
            on_record=None if show_progress(progress) else _run_line,
        )

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
