"""The two sides of a replay as one table of attempts (:data:`.replay_fidelity.ATTEMPT_COLUMNS`).

- **Real**: the trace's attempts alive in the window (submitted before its end, not ended before
  its start), rebuilt from task_events: ``start`` is the SCHEDULE of the attempt, ``end`` its end
  event (EVICT, FAIL, FINISH, KILL, LOST), ``evicted`` when that was EVICT; a time after the
  window's end is null (not started, or not ended, in the window). The trace is read as far as a
  conversion of the window reads it (until what was submitted before the window's end has ended),
  so that on a sampled cell an attempt still waiting at the window's end is kept or not by the
  machine it will run on, as in the replay (:mod:`batsim_google.trace.sampling`).
- **Simulated**: one attempt per Batsim job (a workload job, or a job the scheduler resubmitted
  after an eviction or a failure), with Batsim's submission, start and finish times, the task and
  end reason the scheduler recorded, the CPU request of its task and the priority group of the
  trace's priority (the workload's ``google_priority``; a generated workload's jobs, without it,
  that of their model priority). Jobs of the window's initial state were
  submitted before the window: their submission is -inf, as in the trace.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import ijson
import numpy as np
import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.replay_fidelity import attempt_table, group_names
from batsim_google.fitting.chunks import in_chunks
from batsim_google.model.priority import google_priority
from batsim_google.simulation.run_inputs import workload_name
from batsim_google.trace.convert import Selection, window_complete
from batsim_google.trace.rebuild import rebuild
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample
from batsim_google.trace.schema import TaskEvent


def _real_batch(attempts: pl.DataFrame, start: float, end: float, sample: MachineSample | None) -> pl.DataFrame:
    alive = attempts.filter(
        (pl.col("submit") < end) & (pl.col("end").is_null() | (pl.col("end") > start)).fill_null(True)
    )
    if sample is not None:
        alive = alive.filter(sample.kept())
    scheduled = pl.col("schedule") < end
    ended = pl.col("end") < end
    return attempt_table(
        alive.select(
            pl.concat_str(pl.col("job_id"), pl.lit("_"), pl.col("task_index")).alias("task"),
            pl.col("job_id").cast(pl.String).alias("job"),
            group_names(pl.col("priority")).alias("group"),
            pl.col("cpu_request").alias("cpu"),
            (pl.col("submit") - start).alias("submit"),
            pl.when(scheduled).then(pl.col("schedule") - start).alias("start"),
            pl.when(ended).then(pl.col("end") - start).alias("end"),
            (ended & (pl.col("end_event") == TaskEvent.EVICT)).fill_null(False).alias("evicted"),
        )
    )


def real_attempts(
    sources: Iterable[str | Path],
    start: float,
    end: float,
    rows: RowAccount,
    *,
    sample: MachineSample | None = None,
    workers: int = 1,
    progress: bool = False,
) -> pl.DataFrame:
    """The trace's attempts alive in ``[start, end)`` (s of the trace), times from ``start``."""
    frames = [
        _real_batch(batch.attempts, start, end, sample)
        for batch in rebuild(
            sources,
            rows,
            workers=workers,
            until=window_complete(Selection(start=start, end=end, initial_state=True)),
            progress=progress,
        )
    ]
    return pl.concat(frames)


def workload_jobs(workload: Path, index: int = 0) -> pl.DataFrame:
    """``job`` (full id), ``google_job`` (the trace's job id), ``google_priority`` and ``initial``
    (submitted before the window) of a converted or generated workload's jobs."""
    prefix = workload_name(index) + "!"
    schema = {"job": pl.String, "google_job": pl.String, "google_priority": pl.Int64, "initial": pl.Boolean}
    frames = []
    try:
        with Path(workload).open("rb") as handle:
            for chunk in in_chunks(ijson.items(handle, "jobs.item", use_float=True)):
                frames.append(
                    pl.DataFrame(
                        {
                            "job": [prefix + str(job["id"]) for job in chunk],
                            "google_job": [_text(job.get("google_job")) for job in chunk],
                            "google_priority": _google_priorities(chunk),
                            "initial": [job.get("initial") is not None for job in chunk],
                        },
                        schema=schema,
                    )
                )
    except (OSError, ijson.JSONError, KeyError) as error:
        raise InputFileError(f"{workload}: not a Batsim workload ({error})") from error
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames)


def _google_priorities(jobs: list[dict]) -> pl.Series:
    """Each job's Google priority: its ``google_priority`` (a converted trace's), or else the one
    of its model priority (a generated workload's, :func:`google_priority`)."""
    recorded = pl.Series([job.get("google_priority") for job in jobs], dtype=pl.Int64)
    unit = np.array([job.get("priority", math.nan) for job in jobs], dtype=float)
    return recorded.fill_null(pl.Series(google_priority(unit), nan_to_null=True).cast(pl.Int64))


def _text(value) -> str | None:
    """A job id as the trace's side writes it (an integer's digits)."""
    if value is None:
        return None
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def simulated_attempts(outputs: RunOutputs, workload: Path) -> pl.DataFrame:
    """The run's attempts: every Batsim job, as the trace's side is built."""
    jobs = outputs.jobs()
    tasks = outputs.tasks().select("task_id", "cpu")
    reasons = outputs.attempts().select(pl.col("job_id").alias("job"), "end_reason")
    # a resubmitted job's id is ``resubmit!{task id with '!' as '_'}#{restart}`` (the scheduler's)
    local = tasks.select(
        pl.col("task_id").str.replace_all("!", "_", literal=True).alias("local"), pl.col("task_id").alias("of_task")
    )
    own = workload_jobs(workload)
    table = (
        jobs.join(reasons, on="job", how="left")
        .with_columns(
            pl.when(pl.col("workload_name") == "resubmit")
            .then(pl.col("job_id").str.replace(r"#\d+$", ""))
            .alias("local")
        )
        .join(local, on="local", how="left")
        .with_columns(pl.coalesce("of_task", "job").alias("task"))
        .join(tasks, left_on="task", right_on="task_id", how="left")
        .join(own, left_on="task", right_on="job", how="left")
    )
    started = pl.col("starting_time").is_not_null() & pl.col("starting_time").is_not_nan()
    return attempt_table(
        table.select(
            "task",
            pl.col("google_job").alias("job"),
            group_names(pl.col("google_priority")).alias("group"),
            "cpu",
            pl.when(pl.col("initial") & (pl.col("workload_name") != "resubmit"))
            .then(-math.inf)
            .otherwise(pl.col("submission_time"))
            .alias("submit"),
            pl.when(started).then(pl.col("starting_time")).alias("start"),
            pl.when(started).then(pl.col("finish_time")).alias("end"),
            (pl.col("end_reason") == "evicted").fill_null(False).alias("evicted"),
        )
    )
