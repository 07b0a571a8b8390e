"""A model fitted with censored lifetimes on the three shared parts, against those parts: the warm
start, the task rate, the jobs (the issue's "done when", docs/fitting.md)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from batsim_google.fitting.model_fit import (
    FitSettings,
    fit_model,
)
from batsim_google.fitting.trace_input import trace_job_records, trace_task_table
from batsim_google.generation.generator import generate
from batsim_google.generation.warm_start import class_rates, warm_start
from batsim_google.model.priority import google_priority
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.trace.reader import read_batches
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent, seconds

#: The real cell at t = 0 (task_events part 00000, SCHEDULE rows at time 0; test_cell_preset).
START_TASKS, START_CPU, START_MEMORY = 132_982, 7492.65, 5468.16
#: Methods for the task class and the gaps: enough for the laws the full fit picks to be matched.
METHODS = ["lognormal-ml", "gamma-ml", "hyperexp2-ml", "hypergamma3-ml"]


@pytest.fixture(scope="module")
def parts_jobs(google_2011) -> pl.DataFrame:
    """Every task first submitted in the parts' window (SUBMIT after time 0), one row per job:
    its number of tasks and its first submission."""
    submits = pl.concat(
        pl.from_arrow(batch)
        .filter(pl.col("event_type") == int(TaskEvent.SUBMIT))
        .select("time", "job_id", "task_index")
        for _, batch in read_batches([google_2011], "task_events", account=RowAccount())
    )
    submits = submits.with_columns(pl.Series("t", seconds(submits["time"].to_numpy())))
    first = submits.group_by("job_id", "task_index").agg(pl.col("t").min()).filter(pl.col("t") > 0)
    return first.group_by("job_id").agg(pl.len().alias("tasks"), pl.col("t").min().alias("start")).sort("start")


@pytest.fixture(scope="module")
def fitted(google_2011):
    frame, _ = trace_task_table([google_2011], RowAccount(), censored=True)
    frame = frame.join(trace_job_records([google_2011], RowAccount()), on="job_id", how="left")
    return fit_model(frame, FitSettings(profile="none", methods=METHODS)).model


def test_the_parts_submissions(parts_jobs):
    assert parts_jobs["tasks"].sum() == 99_173 and parts_jobs.height == 3_080
    assert parts_jobs["start"].max() == pytest.approx(15_031.7, abs=1.0)


def test_the_fitted_model_warm_starts_like_the_real_cell(fitted):
    """On 1,000 machines at the cell's load per machine: the whole cell's start x 1,000 / 12,583."""
    machines = 1000
    share = machines / GOOGLE_2011_MACHINES
    batch = warm_start(fitted, load_request_law(), np.random.default_rng(1), 1.0 / share, machines)
    assert len(batch) == pytest.approx(START_TASKS * share, rel=0.1)
    assert batch.cpu.sum() == pytest.approx(START_CPU * share, rel=0.1)
    # each band draws the requests of the start's tasks in its band and group (from the band's
    # submitted tasks, whose production ones request half the memory, it held 0.85 of it)
    assert batch.memory.sum() == pytest.approx(START_MEMORY * share, rel=0.05)


def test_the_fitted_model_holds_the_starts_priority_groups(fitted):
    """A fit of the parts splits its classes by priority group, each drawing its Google
    priorities: the warm start (whole cell, seed 1) holds each group's tasks of the real start
    within 15 % (free 54,611, normal 22,318, production 9-11 56,053)."""
    assert {c.name for c in fitted.classes} >= {"task-free", "task-normal", "service-production-1"}
    assert all(c.priorities is not None and c.priority_rate is None for c in fitted.classes)
    batch = warm_start(fitted, load_request_law(), np.random.default_rng(1), 1.0, GOOGLE_2011_MACHINES)
    levels = google_priority(batch.priority)
    for (low, high), real in (((0, 1), 54_611), ((2, 8), 22_318), ((9, 11), 56_053)):
        assert ((levels >= low) & (levels <= high)).sum() == pytest.approx(real, rel=0.15), (low, high)


#: Seeds of the generated spans: the job sizes are heavy-tailed (a job may bring 2,000 tasks), so
#: one seed's rate says little; before every task counted in the jobs, seed 2 fell 10.9 % short.
SEEDS = (1, 2, 3, 4, 5)


def test_the_fitted_models_task_rate_is_the_parts(fitted, parts_jobs):
    """Every task the parts submit counts, those without a lifetime too: the model's mean rate and
    mean tasks per job are the parts' (the jobs' sizes are their exact histogram)."""
    rate = parts_jobs["tasks"].sum() / float(parts_jobs["start"].max())
    assert class_rates(fitted).sum() == pytest.approx(rate, rel=0.02)
    assert fitted.jobs.mean_tasks() == pytest.approx(parts_jobs["tasks"].mean(), rel=0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_fitted_model_generates_the_parts_tasks_and_jobs(fitted, parts_jobs, seed):
    """Ten times the parts' span: the task rate and the mean tasks per job within 10 %, the job
    gaps and the tasks per job within a KS distance of 0.06 of the parts'."""
    span = float(parts_jobs["start"].max())
    sizes = parts_jobs["tasks"].to_numpy()
    rate = sizes.sum() / span
    batches = list(generate(fitted, load_request_law(), np.random.default_rng(seed), duration=10 * span))
    job = np.concatenate([b.job for b in batches])
    subtime = np.concatenate([b.subtime for b in batches])
    first = np.concatenate([[True], np.diff(job) != 0])
    tasks_per_job = np.diff(np.concatenate([np.flatnonzero(first), [len(job)]]))
    assert len(job) / subtime.max() == pytest.approx(rate, rel=0.1)
    assert tasks_per_job.mean() == pytest.approx(sizes.mean(), rel=0.1)
    assert stats.ks_2samp(tasks_per_job, sizes).statistic <= 0.06
    assert stats.ks_2samp(np.diff(subtime[first]), np.diff(parts_jobs["start"].to_numpy())).statistic <= 0.06


def test_a_model_fitted_on_a_later_part_warm_starts_like_the_real_cell(google_2011):
    """Part 00002 alone does not open on the trace's start: the tasks running before it are unknown,
    so the cell's start bounds the stationary tasks (its services' mean lifetime), and the warm
    start holds the real cell's tasks, CPU and memory within 10 %. Its rate is every task it
    submits."""
    part = google_2011 / "task_events" / "part-00002-of-00500.csv.gz"
    frame, _ = trace_task_table([part], RowAccount(), censored=True)
    fit = fit_model(frame, FitSettings(profile="none", methods=METHODS))
    assert not frame["resident"].any()
    assert any("trace's start" in (c.best.note or "") for c in fit.classes)
    machines = 1000
    share = machines / GOOGLE_2011_MACHINES
    batch = warm_start(fit.model, load_request_law(), np.random.default_rng(1), 1.0 / share, machines)
    assert len(batch) == pytest.approx(START_TASKS * share, rel=0.1)
    assert batch.cpu.sum() == pytest.approx(START_CPU * share, rel=0.1)
    assert batch.memory.sum() == pytest.approx(START_MEMORY * share, rel=0.1)
    submitted = frame.filter(~pl.col("resident"))
    span = float(submitted["subtime"].max() - submitted["subtime"].min())
    assert class_rates(fit.model).sum() == pytest.approx(submitted.height / span, rel=0.1)
