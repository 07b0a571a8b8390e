"""One run's output files as tables: Batsim's jobs, machine states and energy, the scheduler's
tasks and attempts, and their join into one row per task.

Times come from Batsim's ``out_jobs.csv`` (the scheduler's attempt times are those of the
messages, a few milliseconds off); what Batsim does not know comes from the scheduler's accounting:
which task a job stands for and why it was stopped (``out_attempts.csv``), each task's request,
work and outcome (``out_tasks.csv``). A Batsim job's full id is ``workload!job``, the id the
scheduler records.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.experiments.pstate_energy import pstate_energy_records
from batsim_google.platform.simgrid_xml import PlatformHost
from batsim_google.scheduling.ledger_files import ATTEMPTS, SUMMARY, TASKS
from batsim_google.scheduling.sleep_log import SLEEP_LOG
from batsim_google.scheduling.tasks import Outcome
from batsim_google.simulation.run import INCOMPLETE
from batsim_google.simulation.runner import OUTPUT_PREFIX

JOBS = "jobs.csv"
MACHINE_STATES = "machine_states.csv"
ENERGY = "consumed_energy.csv"
PSTATE_CHANGES = "pstate_changes.csv"
SCHEDULE = "schedule.csv"
#: Columns read from each file, with their types.
JOB_COLUMNS = {
    "job_id": pl.String,
    "workload_name": pl.String,
    "submission_time": pl.Float64,
    "requested_number_of_resources": pl.Int64,
    "final_state": pl.String,
    "starting_time": pl.Float64,
    "execution_time": pl.Float64,
    "finish_time": pl.Float64,
    "waiting_time": pl.Float64,
    "allocated_resources": pl.String,
}
ATTEMPT_COLUMNS = {"task_id": pl.String, "job_id": pl.String, "machine": pl.Int64, "end_reason": pl.String}
TASK_COLUMNS = {
    "task_id": pl.String,
    "kind": pl.String,
    "priority": pl.Float64,
    "cpu": pl.Float64,
    "memory": pl.Float64,
    "submit": pl.Float64,
    "work": pl.Float64,
    "restarts": pl.Int64,
    "outcome": pl.String,
    "ended": pl.Float64,
}
MACHINE_STATE_COLUMNS = {
    "time": pl.Float64,
    "nb_sleeping": pl.Int64,
    "nb_switching_on": pl.Int64,
    "nb_switching_off": pl.Int64,
    "nb_idle": pl.Int64,
    "nb_computing": pl.Int64,
}
#: Workload name of resubmitted jobs (the scheduler's ``RESUBMIT_WORKLOAD``).
RESUBMITTED = "resubmit"
#: Outcomes of tasks that did all their work.
WHOLE_WORK = (Outcome.COMPLETED.value, Outcome.KILLED_BY_DESIGN.value)
#: Batsim's final state of a job that did all its work.
SUCCEEDED = "COMPLETED_SUCCESSFULLY"


def _read_csv(path: Path, columns: dict[str, pl.DataType]) -> pl.DataFrame:
    try:
        frame = pl.read_csv(path, columns=list(columns), schema_overrides=columns)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file (did the run finish?)") from None
    except (pl.exceptions.PolarsError, OSError) as error:
        raise InputFileError(f"{path}: {error}") from error
    return frame


@dataclass(frozen=True)
class RunOutputs:
    """The files ``batsim-google run`` wrote in ``directory``."""

    directory: Path

    def path(self, name: str) -> Path:
        return Path(self.directory) / f"{OUTPUT_PREFIX}_{name}"

    def has_batsim_outputs(self) -> bool:
        return self.path(JOBS).is_file()

    def has_ledger(self) -> bool:
        """Whether this package's scheduler kept its accounting here (other schedulers do not)."""
        return all(self.path(name).is_file() for name in (TASKS, ATTEMPTS, SUMMARY))

    def jobs(self) -> pl.DataFrame:
        """Batsim's jobs with their full id ``job`` (``workload!job_id``); times null if never started.
        A folder marked incomplete (a run interrupted or failed) is refused: its files are not a run's."""
        self.refuse_incomplete()
        jobs = _read_csv(self.path(JOBS), JOB_COLUMNS)
        return jobs.with_columns(pl.concat_str("workload_name", pl.lit("!"), "job_id").alias("job"))

    def refuse_incomplete(self) -> None:
        """Refuse (InputFileError) a folder marked incomplete: a run interrupted or failed."""
        if (Path(self.directory) / INCOMPLETE).exists():
            raise InputFileError(
                f"{self.directory}: the run there did not end (interrupted or failed: see {INCOMPLETE}); run it again"
            )

    def last_finish(self) -> float:
        """The last job's finish time (0 when no job ran), from that column alone."""
        self.refuse_incomplete()
        return float(_read_csv(self.path(JOBS), {"finish_time": pl.Float64})["finish_time"].max() or 0.0)

    def submissions(self) -> pl.Series:
        """The submission times of the jobs of the user's workloads (resubmissions left out)."""
        jobs = _read_csv(self.path(JOBS), {"workload_name": pl.String, "submission_time": pl.Float64})
        return jobs.filter(pl.col("workload_name") != RESUBMITTED)["submission_time"]

    def attempts(self, columns: Sequence[str] = tuple(ATTEMPT_COLUMNS)) -> pl.DataFrame:
        """The scheduler's attempts, the ``columns`` asked for (of :data:`ATTEMPT_COLUMNS`)."""
        return _read_csv(self.path(ATTEMPTS), {name: ATTEMPT_COLUMNS[name] for name in columns})

    def tasks(self, columns: Sequence[str] = tuple(TASK_COLUMNS)) -> pl.DataFrame:
        """The scheduler's tasks, the ``columns`` asked for (of :data:`TASK_COLUMNS`)."""
        return _read_csv(self.path(TASKS), {name: TASK_COLUMNS[name] for name in columns})

    def machine_states(self) -> pl.DataFrame:
        """Batsim's machine counts per state, from each change on."""
        return _read_csv(self.path(MACHINE_STATES), MACHINE_STATE_COLUMNS)

    def sleeping(self) -> pl.DataFrame | None:
        """The scheduler's machines asleep and up (``time``, ``sleeping``), None without its log."""
        path = self.path(SLEEP_LOG)
        return _read_csv(path, {"time": pl.Float64, "sleeping": pl.Int64}) if path.is_file() else None

    def machines(self) -> int:
        """Batsim's compute machines: ``nb_computing_machines`` of ``out_schedule.csv``, or else the
        most machines ``out_machine_states.csv`` counts at once."""
        schedule = self.path(SCHEDULE)
        if schedule.is_file():
            return int(_read_csv(schedule, {"nb_computing_machines": pl.Int64})["nb_computing_machines"][0])
        states = self.machine_states()
        return int(states.select(pl.sum_horizontal(pl.exclude("time")).max()).item() or 0)

    def energy(self, hosts: Sequence[PlatformHost] | None = None, last_finish: float | None = None) -> float | None:
        """Joules consumed by the machines over the run (Batsim's ``-E``), None without it
        (``last_finish``: see :meth:`energy_records`)."""
        records = self.energy_records(hosts, last_finish)
        if records is None:
            return None
        return float(records["energy"][-1]) if records.height else 0.0

    def energy_records(
        self, hosts: Sequence[PlatformHost] | None = None, last_finish: float | None = None
    ) -> pl.DataFrame | None:
        """Batsim's cumulative energy (``time``, ``energy``) at each of its records, None without
        ``-E``. Without ``out_consumed_energy.csv`` (``--disable-energy-tracing``), the same
        records from ``out_pstate_changes.csv`` and the platform's compute ``hosts``, up to the
        run's last job end (``last_finish``, read when not given) or power-state change
        (:mod:`.pstate_energy`)."""
        path = self.path(ENERGY)
        if path.exists():
            return _read_csv(path, {"time": pl.Float64, "energy": pl.Float64})
        changes = self.path(PSTATE_CHANGES)
        if hosts is None or not changes.exists():
            return None
        last_change = float(pl.scan_csv(changes).select(pl.col("time").cast(pl.Float64).max()).collect().item() or 0.0)
        end = max(self.last_finish() if last_finish is None else last_finish, last_change)
        return pstate_energy_records(changes, hosts, end)

    def summary(self) -> dict:
        """The scheduler's accounting summary (tasks submitted, outcomes, balanced)."""
        path = self.path(SUMMARY)
        try:
            return json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise InputFileError(f"{path}: {error}") from error


def first_waits(jobs: pl.DataFrame) -> pl.DataFrame:
    """``submission_time`` and ``waiting_time`` of the jobs of the user's workloads that started,
    in Batsim's order: each task's first wait (resubmissions left out). ``jobs``: :meth:`RunOutputs.jobs`."""
    started = pl.col("starting_time").is_not_null() & (pl.col("workload_name") != RESUBMITTED)
    read = jobs.select("submission_time", "waiting_time", "starting_time", "workload_name")  # not every column
    return read.filter(started).select("submission_time", "waiting_time")


def started_jobs(outputs: RunOutputs, jobs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every job that ran, with Batsim's times and the task, machine and end reason the scheduler
    recorded for it; a job the scheduler has no attempt for is an error. ``jobs``:
    :meth:`RunOutputs.jobs`, when already read."""
    jobs = (outputs.jobs() if jobs is None else jobs).filter(pl.col("starting_time").is_not_null())
    jobs = jobs.drop("allocated_resources", strict=False)  # its machine is the attempt's
    attempts = outputs.attempts().rename({"job_id": "job"})
    joined = jobs.join(attempts, on="job", how="left")
    orphan = joined.filter(pl.col("task_id").is_null())
    if orphan.height:
        raise InputFileError(
            f"{outputs.path(JOBS)}: {orphan.height} job(s) ran without an attempt in {outputs.path(ATTEMPTS)}, "
            f"e.g. {orphan['job'][0]}"
        )
    return joined


def task_times(outputs: RunOutputs, jobs: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per task of ``out_tasks.csv``: its request and outcome, and from Batsim's jobs its
    ``first_start``, ``first_wait`` (its workload job's waiting time), ``end`` (its last job's
    finish), ``execution`` (time run, summed over its jobs) and ``jobs`` run (null/0 if it never
    started). ``jobs``: :func:`started_jobs`, when already read."""
    jobs = started_jobs(outputs) if jobs is None else jobs
    per_task = jobs.group_by("task_id").agg(
        pl.col("starting_time").min().alias("first_start"),
        pl.col("waiting_time").filter(pl.col("job") == pl.col("task_id")).first().alias("first_wait"),
        pl.col("finish_time").max().alias("end"),
        pl.col("execution_time").sum().alias("execution"),
        pl.len().alias("jobs"),
    )
    tasks = outputs.tasks().join(per_task, on="task_id", how="left", maintain_order="left")
    return tasks.with_columns(pl.col("jobs").fill_null(0))


def task_ends(
    outputs: RunOutputs, all_jobs: pl.DataFrame | None = None, tasks: pl.DataFrame | None = None
) -> pl.DataFrame:
    """One row per task (the ledger's where it exists, else each Batsim job is one): ``task`` (its
    workload job's full id), ``submit``, ``end``, ``work`` and ``whole`` (whether it did all its
    work). ``all_jobs``: :meth:`RunOutputs.jobs`, ``tasks``: :func:`task_times`, when already built."""
    if outputs.has_ledger():
        tasks = task_times(outputs, started_jobs(outputs, all_jobs)) if tasks is None else tasks
        return tasks.select(
            pl.col("task_id").alias("task"), "submit", "end", "work", pl.col("outcome").is_in(WHOLE_WORK).alias("whole")
        )
    return (outputs.jobs() if all_jobs is None else all_jobs).select(
        pl.col("job").alias("task"),
        pl.col("submission_time").alias("submit"),
        pl.col("finish_time").alias("end"),
        pl.col("execution_time").alias("work"),
        (pl.col("final_state") == SUCCEEDED).alias("whole"),
    )
