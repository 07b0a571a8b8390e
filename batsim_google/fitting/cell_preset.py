"""How the ``google-2011-cell`` preset is made from the shared data (docs/model-files.md).

1. ``fit_model`` with censored lifetimes (``fit --censored``) on the task_events and job_events
   parts 00000-00002: task, service and resident classes, job-level arrivals, the warm start's
   population (``per_machine``).
2. The month's rhythm: the weekly profile of the month's job submissions (:mod:`.month_rhythm`)
   becomes the model's arrival profile and the jobs' own (the same bins, so the job sizes do not
   depend on the hour). The profile's mean is 1: the job rate and the tasks per job stay those of
   the parts, so the warm start's population does too.

``python -m batsim_google.fitting.cell_preset DATA OUTPUT`` writes it (DATA holds ``google-2011``
and ``google-2011-month``); the package ships the result as ``data/google-2011-cell.toml``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from batsim_google.fitting.model_fit import fit_model
from batsim_google.fitting.month_rhythm import job_submissions, weekly_job_profile
from batsim_google.fitting.trace_input import trace_job_records, trace_task_table
from batsim_google.model.workload_model import WorkloadModel, save_model
from batsim_google.trace.row_accounting import RowAccount

NAME = "google-2011-cell"


def cell_preset(data: Path) -> WorkloadModel:
    """The preset from the shared data folder ``data``."""
    parts = data / "google-2011"
    frame, _ = trace_task_table([parts], RowAccount(), censored=True)
    frame = frame.join(trace_job_records([parts], RowAccount()), on="job_id", how="left")
    model = fit_model(frame, profile="none", name=NAME).model
    rhythm = weekly_job_profile(job_submissions([data / "google-2011-month"], RowAccount())).profile
    return replace(model, arrival_profile=rhythm, jobs=replace(model.jobs, profile=rhythm))


if __name__ == "__main__":
    save_model(cell_preset(Path(sys.argv[1])), Path(sys.argv[2]))
