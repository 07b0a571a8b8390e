"""A campaign's tables: one row per run, and each metric aggregated over the seeds.

``runs.csv`` / ``runs.parquet``: the run's labels (platform, workload and its seed, failures and
their seed, policy), its status and wall time, and its metrics (:mod:`.metrics`).
``summary.csv`` / ``summary.parquet``: per platform, workload, failures and policy, and per metric,
the number of runs with a value ``n``, mean, standard deviation and the bootstrap 95 % interval over
the replications (the seed combinations; when both workloads and failures have several seeds
they are crossed, and the interval treats the combinations as independent), and a ``warning`` when
the policies of a scenario delivered different work (:mod:`.work_done`). A metric no run of a group
knows (the ledger's, for a scheduler without one) has its row with ``n`` 0 and a null mean: "n/a",
never 0. ``energy_correction`` says whether the group's energy includes the load of the delay jobs
that Batsim's own energy misses (``applied``: known for every scheduler on a platform with an
energy model, :mod:`.batsim_accounting`) or is Batsim's alone (``not applied``). A metric that is a
mapping (``rejected_by_reason``) is a JSON text in the runs table.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from batsim_google.experiments.execution import RunRecord
from batsim_google.experiments.statistics import aggregate
from batsim_google.experiments.work_done import with_work_warnings
from batsim_google.output_files import AtomicFile

#: What a replication group shares.
GROUP = ["platform", "workload", "failures", "policy"]
LABELS = ["platform", "workload", "workload_seed", "failures", "failure_seed", "policy"]


def runs_table(records: list[RunRecord]) -> pl.DataFrame:
    rows = [
        {
            **record.run.labels(),
            "status": record.status,
            "wall_seconds": record.wall_seconds,
            **{name: _cell(value) for name, value in (record.metrics or {}).items()},
            "directory": str(record.run.directory),
        }
        for record in records
    ]
    runs = pl.DataFrame(
        rows, schema_overrides={"workload_seed": pl.Int64, "failure_seed": pl.Int64}, infer_schema_length=None
    )
    # a metric no run knows (e.g. jobs of tasks without google_job) is a number still: the CSV
    # and Parquet tables then read back alike
    return runs.with_columns(pl.col(pl.Null).cast(pl.Float64))


def _cell(value):
    """A metric as a table cell: a mapping (the rejections by reason) as its JSON text."""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


def metric_columns(runs: pl.DataFrame) -> list[str]:
    """The metric columns of a runs table (numbers, not labels)."""
    excluded = {*LABELS, "status", "wall_seconds", "directory", "balanced"}
    return [
        name
        for name, dtype in runs.schema.items()
        if name not in excluded and (dtype.is_numeric() or dtype == pl.Null)  # Null: known by no run
    ]


#: ``energy_correction``: whether the load of the delay jobs was added to Batsim's energy.
CORRECTION_APPLIED, CORRECTION_NOT_APPLIED = "applied", "not applied"


def summary_table(runs: pl.DataFrame) -> pl.DataFrame:
    ended = runs.filter(pl.col("status") != "failed")
    metrics = metric_columns(ended)
    every = (
        ended.select(GROUP)
        .unique(maintain_order=True)
        .join(pl.DataFrame({"metric": metrics}, schema={"metric": pl.String}), how="cross")
    )
    summary = every.join(aggregate(ended, GROUP, metrics), on=[*GROUP, "metric"], how="left")
    summary = summary.with_columns(pl.col("n").fill_null(0))
    if "load_energy_j" in ended.columns:  # runs of run_metrics; not known otherwise (null)
        corrected = ended.group_by(GROUP).agg(
            pl.when(pl.col("load_energy_j").is_not_null().all())
            .then(pl.lit(CORRECTION_APPLIED))
            .otherwise(pl.lit(CORRECTION_NOT_APPLIED))
            .alias("energy_correction")
        )
        summary = summary.join(corrected, on=GROUP, how="left", maintain_order="left")
    else:
        summary = summary.with_columns(pl.lit(None, dtype=pl.String).alias("energy_correction"))
    return with_work_warnings(summary)


def write_tables(output: Path, runs: pl.DataFrame, summary: pl.DataFrame) -> list[Path]:
    """Write both tables as CSV and Parquet in ``output``; return the paths."""
    paths = []
    for name, frame in (("runs", runs), ("summary", summary)):
        for suffix in ("csv", "parquet"):
            path = Path(output) / f"{name}.{suffix}"
            with AtomicFile(path) as temporary:
                if suffix == "csv":
                    frame.write_csv(temporary)
                else:
                    frame.write_parquet(temporary)
            paths.append(path)
    return paths
