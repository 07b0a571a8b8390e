"""One run's tables, each read from its files or built once, for its metrics and its figures.

After a simulation, ``run`` measures it (:mod:`.metrics`) and draws its figures
(:mod:`.run_figures`) from a few tables: Batsim's jobs, the jobs that ran with the scheduler's
attempts, one row per task, one per job and machine it ran on, the suspensions. Each function
reading and building them on its own, a week of the whole cell read its 1 GB ``out_jobs.csv`` seven
times and rebuilt its 5 million tasks' table five times. A :class:`RunTables` builds each table on
first use and keeps it until dropped (:meth:`RunTables.drop`): the metrics drop the large tables
only they read once they are done with them, and keep the narrow ones the figures read.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import polars as pl

from batsim_google.experiments.batsim_accounting import machine_rows, workload_jobs
from batsim_google.experiments.job_groups import workload_groups
from batsim_google.experiments.outputs import RunOutputs, first_waits, started_jobs, task_ends, task_times
from batsim_google.experiments.simulated_workloads import check_simulated_workloads, submitted_jobs
from batsim_google.experiments.suspension import suspension_intervals
from batsim_google.fitting.batsim_input import forget_workload_files

#: Batsim's columns of the jobs that ran which their readers need (the attempts' are added).
STARTED_COLUMNS = ("job", "starting_time", "finish_time", "execution_time", "waiting_time")


class RunTables:
    """The tables of the run in ``outputs`` that simulated ``workloads`` (in Batsim's order), each
    built on first use and kept until dropped. ``keep_workloads`` False: the workloads' whole
    tables are forgotten once read (:meth:`read_workloads`)."""

    def __init__(self, outputs: RunOutputs, workloads: Sequence[str | Path] = (), keep_workloads: bool = True) -> None:
        self.outputs = outputs
        self.workloads = tuple(workloads)
        self.keep_workloads = keep_workloads

    def drop(self, *names: str) -> None:
        """Forget these tables (each is built again if asked for again)."""
        for name in names:
            self.__dict__.pop(name, None)

    def drop_jobs(self) -> None:
        """Drop Batsim's jobs and the workloads' requests (a week of the whole cell's take 1 GB)
        once the tables built from them are."""
        built = ("makespan", "waits", "machine_rows", "started" if self.outputs.has_ledger() else "task_ends")
        for name in built:
            getattr(self, name)
        self.drop("jobs", "requests")

    def read_workloads(self) -> None:
        """Read what is read of the workloads, all at once: their jobs' requests and jobs of tasks,
        and the submissions that show them to be those the run simulated
        (:func:`.simulated_workloads.check_simulated_workloads`); unless kept, forget the workloads'
        whole tables (:func:`.batsim_input.forget_workload_files`: a week of the whole cell's is
        1 GB, of no more use to ``run``) before reading Batsim's jobs to check them."""
        self.outputs.refuse_incomplete()  # before minutes of reading
        submitted = [submitted_jobs(path) for path in self.workloads]
        for name in ("requests", "groups"):
            getattr(self, name)
        if not self.keep_workloads:
            forget_workload_files()
        if self.workloads:
            check_simulated_workloads(self.jobs, self.workloads, self.outputs.directory, submitted)

    @cached_property
    def jobs(self) -> pl.DataFrame:
        """Batsim's jobs (:meth:`.RunOutputs.jobs`)."""
        return self.outputs.jobs()

    @cached_property
    def makespan(self) -> float:
        """The last job's finish time (0 when no job ran)."""
        return float(self.jobs["finish_time"].max() or 0.0)

    @cached_property
    def waits(self) -> pl.DataFrame:
        """The first waits of the user's jobs that started (:func:`.outputs.first_waits`)."""
        return first_waits(self.jobs)

    @cached_property
    def requests(self) -> pl.DataFrame:
        """The workloads' jobs' requests (:func:`.batsim_accounting.workload_jobs`)."""
        return workload_jobs(self.workloads)

    @cached_property
    def groups(self) -> pl.DataFrame:
        """The workloads' jobs of tasks (:func:`.job_groups.workload_groups`)."""
        return workload_groups(self.workloads)

    @cached_property
    def started(self) -> pl.DataFrame:
        """The jobs that ran (:func:`.outputs.started_jobs`) with Batsim's :data:`STARTED_COLUMNS`
        only (a week of the whole cell ran 6 million jobs)."""
        return started_jobs(self.outputs, self.jobs.select(*STARTED_COLUMNS))

    @cached_property
    def tasks(self) -> pl.DataFrame:
        """One row per task of the ledger (:func:`.outputs.task_times`)."""
        return task_times(self.outputs, self.started)

    @cached_property
    def task_ends(self) -> pl.DataFrame:
        """One row per task, the ledger's or Batsim's jobs (:func:`.outputs.task_ends`)."""
        if self.outputs.has_ledger():
            return task_ends(self.outputs, tasks=self.tasks)
        return task_ends(self.outputs, self.jobs)

    @cached_property
    def machine_rows(self) -> pl.DataFrame:
        """One row per job that ran and machine it ran on (:func:`.batsim_accounting.machine_rows`),
        without the job's id, which none of their readers needs."""
        return machine_rows(self.outputs, self.workloads, self.jobs, self.requests).drop("job")

    @cached_property
    def intervals(self) -> pl.DataFrame:
        """The suspensions (:func:`.suspension.suspension_intervals`) up to the run's end."""
        return suspension_intervals(self.started, self.tasks, self.makespan)
