"""``metrics``: a run's metrics from its output folder, for any Batsim scheduler; the short
summary ``run`` prints; ``per-core-jobs``: a run's jobs on virtual cores, for evalys."""

from __future__ import annotations

from pathlib import Path

import click

from batsim_google.cli.common import NumberRange, checked_output_file, warmup_option
from batsim_google.parameters import MAX_TIME_S

#: What the short summary shows, in order: name, label, format.
SUMMARY = (
    ("energy_j", "energy", lambda v: f"{v / 1e9:.4g} GJ"),
    ("load_energy_j", "of which load", lambda v: f"{v / 1e9:.4g} GJ"),
    ("idle_energy_j", "idle machines", lambda v: f"{v / 1e9:.4g} GJ"),
    ("mean_waiting_s", "waiting mean", lambda v: f"{v:.4g} s"),
    ("p95_waiting_s", "p95", lambda v: f"{v:.4g} s"),
    ("mean_bounded_slowdown", "bounded slowdown", lambda v: f"{v:.4g}"),
    ("utilization", "utilization", lambda v: f"{v:.3g}"),
    ("completed", "completed tasks", str),
    ("not_restarted", "abandoned at the restart cap", str),
    ("censored", "censored at the horizon", str),
    ("delivered_cpu_s", "delivered", lambda v: f"{v / 3600:.4g} CPU-h"),
    ("energy_per_cpu_hour_j", "energy per CPU-h", lambda v: f"{v / 1e6:.4g} MJ"),
)


def overcommit_text(metrics: dict) -> str:
    """How far the run went past its machines' capacities, which the load's energy does not bill
    (it caps a machine's load at 1): an over-committing scheduler's energy per CPU-hour is lower by
    the model, not by its merit. Empty when not known."""
    above, allocated = metrics.get("overcommit_cpu_s"), metrics.get("allocated_cpu_s")
    if above is None or not allocated:
        return ""
    return (
        f"over-commit {above / 3600:.4g} CPU-h above capacity ({100 * above / allocated:.0f} % of the CPU-h allocated, "
        f"not billed: the load's energy caps a machine at load 1), peak machine load {metrics['peak_machine_load']:.3g}"
    )


def summary_lines(metrics: dict) -> list[str]:
    """The short summary of a run's metrics; what is not known reads "n/a"."""
    shown = ", ".join(
        f"{label} {'n/a' if metrics.get(name) is None else form(metrics[name])}" for name, label, form in SUMMARY
    )
    shown += "".join(f"; {text}" for text in [overcommit_text(metrics)] if text)
    window = f"over {metrics['window_start_s']:g}-{metrics['window_end_s']:g} s of simulated time: "
    jobs = f"Batsim jobs: {metrics['jobs_completed']} completed, {metrics['jobs_killed']} killed, {metrics['jobs_rejected']} rejected"
    reasons = metrics.get("rejected_by_reason") or {}
    if reasons:
        jobs += " (" + ", ".join(f"{count} {reason}" for reason, count in reasons.items()) + ")"
    if metrics.get("google_jobs") is None:
        return [window + shown, jobs]
    response = metrics["mean_job_response_s"]
    grouped = (
        f"jobs of tasks: {metrics['google_jobs_completed']} of {metrics['google_jobs']} served whole, response "
        + ("n/a" if response is None else f"mean {response:.4g} s, p95 {metrics['p95_job_response_s']:.4g} s")
    )
    return [window + shown, jobs, grouped]


@click.command("metrics")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--platform",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The platform the run simulated: CPU capacities for the utilization, power for the load and idle energy.",
)
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The workloads the run simulated, in Batsim's order (repeatable): the jobs' CPU requests, walltimes "
    "(rejections' reasons), jobs of tasks (google_job) and their response times.",
)
@warmup_option
@click.option(
    "--horizon",
    type=NumberRange(min=0, max=MAX_TIME_S),
    default=0.0,
    show_default=True,
    help="End of the measurement window, simulated seconds; 0: the run's end.",
)
@click.option(
    "--json",
    "json_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the metrics to this JSON file.",
)
def metrics_command(
    directory: Path,
    platform: Path | None,
    workloads: tuple[Path, ...],
    warmup: float,
    horizon: float,
    json_file: Path | None,
) -> None:
    """Metrics of a Batsim output folder (any scheduler); "n/a" for what only this package's scheduler records."""
    from batsim_google.experiments.metrics import run_metrics, write_metrics
    from batsim_google.experiments.outputs import RunOutputs
    from batsim_google.experiments.window import window_of

    if json_file:
        checked_output_file(json_file, directory, platform, *workloads)
    metrics = run_metrics(RunOutputs(directory), platform, window_of(warmup, horizon), workloads)
    for name, value in metrics.items():
        click.echo(f"{name:<24}{_shown(value)}")
    if json_file:
        click.echo(f"wrote {write_metrics(directory, metrics, json_file)}")


def _shown(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


@click.command("per-core-jobs")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--platform",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The platform the run simulated (its machines' cpu_capacity).",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The CSV to write."
)
@click.option(
    "--cores",
    type=click.IntRange(1, 10**6),
    default=1000,
    show_default=True,
    help="Virtual cores per unit of cpu_capacity (the largest machine); a job gets floor(CPU request x this).",
)
def per_core_jobs_command(directory: Path, platform: Path, output: Path, cores: int) -> None:
    """Batsim's jobs of a run with one resource per virtual core, which evalys reads as machines held alone."""
    from batsim_google.experiments.core_allocation import core_allocation
    from batsim_google.experiments.outputs import RunOutputs
    from batsim_google.output_files import AtomicFile

    checked_output_file(output, directory, platform)
    allocation = core_allocation(RunOutputs(directory), platform, cores)
    with AtomicFile(output) as temporary:
        allocation.jobs.write_csv(temporary)
    click.echo(
        f"wrote {allocation.jobs.height} jobs on {allocation.cores} cores to {output} "
        f"(left out: {allocation.too_small} job(s) under one core, {allocation.no_core_free} finding no core free "
        f"on an over-committed machine; {allocation.short_of_cores} written with fewer cores than they asked)"
    )
