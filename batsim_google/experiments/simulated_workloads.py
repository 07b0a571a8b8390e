"""The workloads a run's metrics are given (``metrics DIR --workload W``) must be the ones the run
simulated, in its order: otherwise its jobs of tasks would mix two workloads (another window of the
trace has other ids and times) and the figures would be wrong without a word.

Each workload is matched against Batsim's ``out_jobs.csv``: every job the run had from it (``w0``,
``w1``, ... in command-line order) is in the file with the same submission time, and no job of the
file submitted before the run's last submission is missing from the run (a run cut at a horizon
never saw the later ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.fitting.batsim_input import job_times
from batsim_google.simulation.run_inputs import workload_name

#: Batsim prints times with 6 decimals.
TIME_TOLERANCE_S = 1e-6


def submitted_jobs(path: str | Path) -> pl.DataFrame:
    """A workload's jobs' ``id`` and ``subtime`` (:func:`.batsim_input.job_times`), what the check reads of it."""
    return job_times(path).select("id", "subtime")


def check_simulated_workloads(
    jobs: pl.DataFrame,
    workloads: Sequence[str | Path],
    directory: str | Path,
    submitted: Sequence[pl.DataFrame] | None = None,
) -> None:
    """Refuse (InputFileError naming the workload and a job) ``workloads`` that are not those the
    run whose Batsim ``jobs`` (``out_jobs.csv``) are in ``directory`` simulated. ``submitted``:
    :func:`submitted_jobs` of each workload, when already read."""
    submitted = [submitted_jobs(path) for path in workloads] if submitted is None else submitted
    simulated = sorted(name for name in jobs["workload_name"].unique().to_list() if name.startswith("w"))
    expected = [workload_name(index) for index in range(len(workloads))]
    extra = sorted(set(simulated) - set(expected))
    if extra:
        raise InputFileError(
            f"{directory}: the run simulated workload(s) {', '.join(extra)} too: give every --workload it ran, in its order"
        )
    for name, path, given in zip(expected, map(Path, workloads), submitted, strict=True):
        ran = (  # of the run's jobs, these two columns only: a week of the whole cell ran 6 million
            jobs.lazy()
            .filter(pl.col("workload_name") == name)
            .select(pl.col("job_id").alias("id"), pl.col("submission_time").alias("in_run"))
            .collect()
        )
        _refuse(
            ran.join(given, on="id", how="left").filter(pl.col("subtime").is_null()),
            path,
            directory,
            name,
            lambda job: f"it has no job {job['id']}, which the run had",
        )
        moved = ran.join(given, on="id").filter((pl.col("subtime") - pl.col("in_run")).abs() > TIME_TOLERANCE_S)
        _refuse(
            moved,
            path,
            directory,
            name,
            lambda job: f"its job {job['id']} is submitted at {job['subtime']:g} s, at {job['in_run']:g} s in the run",
        )
        last = ran["in_run"].max()
        if last is not None:
            unseen = given.join(ran, on="id", how="anti").filter(pl.col("subtime") <= last)
            _refuse(
                unseen,
                path,
                directory,
                name,
                lambda job: f"its job {job['id']} (submitted at {job['subtime']:g} s) is not in the run",
            )


def _refuse(bad: pl.DataFrame, path: Path, directory: str | Path, name: str, reason) -> None:
    if bad.height:
        raise InputFileError(
            f"{path}: not the workload {name} the run in {directory} simulated: {reason(bad.row(0, named=True))}"
        )
