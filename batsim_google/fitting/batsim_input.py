"""Read a Batsim workload (JSON) into the task table fitting starts from.

The file is parsed as a stream (ijson), jobs then profiles, a chunk of rows at a time, so memory
holds columns, never the parsed document. A job's makespan is its ``delay`` profile's delay, or
for a service (``kind`` = ``service``, which runs until stopped) its walltime, as
:mod:`batsim_google.generation.batsim_json` writes them. The job fields ``kind``, ``priority`` (]0, 1]),
``class`` and ``scheduling_class`` are kept when present; jobs that lack what the table needs
are counted and skipped by :func:`.table.task_table`, never lost silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import ijson
import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.generation.job_times import COLUMNS as JOB_TIME_COLUMNS
from batsim_google.generation.job_times import check_job_times

CHUNK = 100_000
OPTIONAL_FIELDS = ("class", "scheduling_class")
JOB_FIELDS = {
    "id": pl.String,
    "subtime": pl.Float64,
    "walltime": pl.Float64,
    "profile": pl.String,
    "kind": pl.String,
    "priority": pl.Float64,
    "class": pl.String,
    "scheduling_class": pl.Float64,
}


class BatsimInputError(InputFileError):
    """A file that is not a readable Batsim workload; the message names it."""


def in_chunks(items: Iterable[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _number_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _jobs(path: Path) -> pl.DataFrame:
    frames = []
    with path.open("rb") as handle:
        for chunk in in_chunks(ijson.items(handle, "jobs.item", use_float=True)):
            columns = {
                name: [
                    (
                        _number_or_none(job.get(name))
                        if dtype == pl.Float64
                        else None
                        if job.get(name) is None
                        else str(job.get(name))
                    )
                    for job in chunk
                ]
                for name, dtype in JOB_FIELDS.items()
            }
            frames.append(pl.DataFrame(columns, schema=JOB_FIELDS))
    return pl.concat(frames) if frames else pl.DataFrame(schema=JOB_FIELDS)


def _profile_delays(path: Path) -> pl.DataFrame:
    schema = {"profile": pl.String, "delay": pl.Float64}
    frames = []
    with path.open("rb") as handle:
        for chunk in in_chunks(ijson.kvitems(handle, "profiles", use_float=True)):
            frames.append(
                pl.DataFrame(
                    {
                        "profile": [name for name, _ in chunk],
                        "delay": [
                            _number_or_none(profile.get("delay"))
                            if isinstance(profile, dict) and profile.get("type") == "delay"
                            else None
                            for _, profile in chunk
                        ],
                    },
                    schema=schema,
                )
            )
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def _read(path: Path) -> pl.DataFrame:
    """The jobs with their profile's ``delay``, the times checked as everywhere (:mod:`.job_times`)."""
    try:
        jobs = _jobs(path)
        delays = _profile_delays(path)
    except (ijson.JSONError, OSError) as error:
        raise BatsimInputError(f"{path}: not a readable Batsim workload ({error})") from error
    unknown = jobs.join(delays, on="profile", how="anti")
    if unknown.height:
        job = unknown.row(0, named=True)
        raise BatsimInputError(f"{path}: job {job['id']}: profile {job['profile']!r} is not among the profiles")
    table = jobs.join(delays, on="profile", how="left", maintain_order="left")
    check_job_times(table, str(path))
    return table


def job_times(path: str | Path) -> pl.DataFrame:
    """Every job's ``id``, ``subtime``, ``delay`` (its delay profile's, else null) and ``walltime``
    (null when absent), refused as Batsim would refuse them (:func:`.job_times.check_job_times`)."""
    return _read(Path(path)).select(JOB_TIME_COLUMNS)


def read_batsim_workload(path: str | Path) -> pl.DataFrame:
    """One row per job: ``subtime``, ``makespan``, ``kind``, ``priority`` and, if any job has
    them, ``class`` and ``scheduling_class`` (null where a job lacks the field); a workload Batsim
    would refuse is refused."""
    makespan = pl.when(pl.col("kind") == "service").then(pl.col("walltime")).otherwise(pl.col("delay"))
    table = _read(Path(path)).select(
        "subtime", makespan.alias("makespan"), "kind", "priority", "class", "scheduling_class"
    )
    # Optional fields that no job carries are dropped rather than read as missing on every row.
    return table.drop([name for name in OPTIONAL_FIELDS if table[name].null_count() == table.height])
