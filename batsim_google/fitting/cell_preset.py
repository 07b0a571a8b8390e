"""How the ``google-2011-cell`` preset is made from the shared data (docs/model-files.md).

1. ``fit_model`` with censored lifetimes (``fit --censored``) on the task_events and job_events
   parts 00000-00002: a task class and service classes in bands of CPU request, job-level
   arrivals, each service band holding its share of the parts' start and drawing the requests of
   the start's tasks in it; every task the parts submit in the rates and jobs.
2. The month's rhythm and level: the weekly profile of the month's job submissions
   (:mod:`.month_rhythm`) becomes the model's arrival profile and the jobs' own (the same bins, so
   the job sizes do not depend on the hour), and the job gaps are stretched so that the mean job
   rate is the month's: the parts' 4 hours are a quiet Sunday evening (0.76 times the month's
   mean rate), which as the mean of a week would leave every generated hour a quarter short.
3. The start kept at the month's rate: the services, in bands of CPU requests, are the classes that
   hold the cell; each band's mean lifetime, which a 4-hour window hardly fixes (most of it lies in
   the tail beyond the window), is set so that its stationary tasks (rate x mean lifetime, Little's
   law) are its share of the start's tasks, the fit's, now at the month's rate; their sigma is
   refitted by censored likelihood given that mean (:func:`~.model_fit.holding_populations`, which
   the fit applies at the parts' rate). The warm start is then the cell the arrivals keep.

``python -m batsim_google.fitting.cell_preset DATA OUTPUT`` writes it (DATA holds ``google-2011``
and ``google-2011-month``); the package ships the result as ``data/google-2011-cell.toml``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl

from batsim_google.fitting.model_fit import (
    FitSettings,
    ModelFit,
    fit_model,
    holding_populations,
)
from batsim_google.fitting.month_rhythm import job_submissions, mean_rate, weekly_job_profile
from batsim_google.fitting.trace_input import trace_job_records, trace_task_table
from batsim_google.model.laws import Law, law_from_mapping
from batsim_google.model.workload_model import WorkloadModel, save_model
from batsim_google.trace.row_accounting import RowAccount

NAME = "google-2011-cell"
SERVICE = "service"

#: How each parameter of a law changes when its time is stretched by a factor.
_STRETCHED = {
    "scale": lambda value, factor: value * factor,
    "scales": lambda values, factor: [v * factor for v in values],
    "rate": lambda value, factor: value / factor,
    "rates": lambda values, factor: [v / factor for v in values],
    "mu": lambda value, factor: value + math.log(factor),
}


def stretched(law: Law, factor: float) -> Law:
    """The law of ``factor`` times a variate of ``law``."""
    raw = law.to_mapping()
    return law_from_mapping(
        {key: _STRETCHED[key](value, factor) if key in _STRETCHED else value for key, value in raw.items()}, "law"
    )


def at_the_months_level(model: WorkloadModel, jobs_per_second: float) -> WorkloadModel:
    """``model`` with its job gaps (and task gaps) stretched to a mean of ``jobs_per_second`` jobs."""
    jobs = model.jobs
    factor = 1.0 / (jobs_per_second * jobs.interarrival.mean() * (1.0 - jobs.simultaneous))
    return replace(
        model,
        interarrival=stretched(model.interarrival_law(), factor),
        jobs=replace(jobs, interarrival=stretched(jobs.interarrival, factor)),
    )


def holding_the_start(model: WorkloadModel, fit: ModelFit) -> WorkloadModel:
    """``model`` whose classes that hold the cell keep the tasks the fit gave them at the start at
    ``model``'s rates (Little's law; :func:`~.model_fit.holding_populations`)."""
    populations = {c.name: c.population for c in fit.classes if c.population is not None}
    rows = fit.table.frame.filter(pl.col("makespan").is_not_null())
    return holding_populations(model, populations, rows)[0]


def cell_preset(data: Path) -> WorkloadModel:
    """The preset from the shared data folder ``data``."""
    parts = data / "google-2011"
    frame, _ = trace_task_table([parts], RowAccount(), censored=True)
    frame = frame.join(trace_job_records([parts], RowAccount()), on="job_id", how="left")
    fit = fit_model(frame, FitSettings(profile="none"), name=NAME)
    month = weekly_job_profile(job_submissions([data / "google-2011-month"], RowAccount()))
    rhythm = month.profile
    model = replace(fit.model, arrival_profile=rhythm, jobs=replace(fit.model.jobs, profile=rhythm))
    model = at_the_months_level(model, mean_rate(month))
    return holding_the_start(model, fit)


if __name__ == "__main__":
    save_model(cell_preset(Path(sys.argv[1])), Path(sys.argv[2]))
