"""Tasks submitted without a lifetime (never scheduled, evicted...) count in the rates and jobs,
not in the lifetime laws: a synthetic table of jobs, some of whose tasks have no makespan."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from batsim_google.fitting.model_fit import (
    FitSettings,
    fit_model,
)
from batsim_google.fitting.table import task_table
from batsim_google.generation.generator import generate
from batsim_google.generation.warm_start import class_rates
from batsim_google.model.request_law import load_request_law
from batsim_google.trace.row_accounting import RowAccount

JOBS = 600
#: Mean gap between jobs (s).
JOB_GAP = 30.0
EVICTED = "ended by EVICT"
METHODS = ["lognormal-ml", "exponential", "hyperexp2-ml"]


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    """Jobs of Finish-ended tasks (median 300 s) or of Kill-ended services (median 5,000 s), 1 to
    40 tasks each; in service jobs 60 % of the tasks have no lifetime, and 30 jobs have none at all."""
    rng = np.random.default_rng(11)
    starts = np.cumsum(rng.exponential(JOB_GAP, JOBS))
    sizes = rng.integers(1, 41, JOBS)
    service_job = rng.random(JOBS) < 0.4
    owner = np.repeat(np.arange(JOBS), sizes)
    service = service_job[owner]
    makespan = np.where(
        service, rng.lognormal(np.log(5000.0), 1.0, len(owner)), rng.lognormal(np.log(300.0), 1.0, len(owner))
    )
    lifeless = (service & (rng.random(len(owner)) < 0.6)) | (owner < 30)
    return pl.DataFrame(
        {
            "subtime": starts[owner],
            "makespan": np.where(lifeless, np.nan, makespan),
            "end_event": np.where(service, "KILL", "FINISH"),
            "google_priority": rng.integers(0, 12, len(owner)),
            "job_id": owner,
            "cpu_request": rng.uniform(0.01, 0.1, len(owner)),
            "no_lifetime": np.where(lifeless, EVICTED, None),
        }
    ).with_columns(pl.col("makespan").fill_nan(None))


def test_a_task_without_a_lifetime_needs_a_reason(table):
    """A row without a makespan is a task without a lifetime only when it says why; otherwise it is skipped."""
    account = RowAccount()
    checked = task_table(table.with_columns(pl.lit(None, pl.String).alias("no_lifetime")), account).frame
    assert checked.height == table["makespan"].is_not_null().sum()
    assert account.skipped == {
        "makespan is missing, not finite, <= 0 or past 2^42 s": table["makespan"].is_null().sum()
    }
    assert task_table(table, RowAccount()).frame.height == table.height


def test_tasks_without_a_lifetime_count_in_the_rates_not_in_the_laws(table):
    fit = fit_model(table, FitSettings(profile="none", methods=METHODS))
    with_lifetime = fit_model(
        table.filter(pl.col("no_lifetime").is_null()), FitSettings(profile="none", methods=METHODS)
    )
    lifeless = int(table["no_lifetime"].is_not_null().sum())
    assert lifeless > 0.25 * table.height  # leaving them out misses the rate by far more than 10 %
    # jobs: every job and every task, each job's size its whole size
    assert fit.jobs.job_count == JOBS
    assert fit.jobs.jobs.mean_tasks() == pytest.approx(table.height / JOBS, rel=1e-9)
    assert with_lifetime.jobs.jobs.mean_tasks() < 0.8 * fit.jobs.jobs.mean_tasks()
    span = float(table["subtime"].max())
    assert class_rates(fit.model).sum() == pytest.approx(table.height / span, rel=0.1)
    batches = list(generate(fit.model, load_request_law(), np.random.default_rng(3), duration=10 * span))
    subtime = np.concatenate([b.subtime for b in batches])
    assert len(subtime) / subtime.max() == pytest.approx(table.height / span, rel=0.1)
    # the lifetime laws are those of the tasks with a lifetime only
    by_name = {c.name: c for c in fit.classes}
    for c in with_lifetime.classes:
        assert by_name[c.name].tasks == c.tasks
        assert by_name[c.name].best.law.mean() == pytest.approx(c.best.law.mean(), rel=1e-9)
        assert by_name[c.name].priority.rate == pytest.approx(c.priority.rate, rel=1e-9)
    # each is drawn into its job's class: the service jobs' go to the service class
    in_service_jobs = int(
        table.filter(
            pl.col("no_lifetime").is_not_null() & (pl.col("end_event") == "KILL") & (pl.col("job_id") >= 30)
        ).height
    )
    assert by_name["service"].without_lifetime >= in_service_jobs
    assert sum(c.without_lifetime for c in fit.classes) == lifeless
    assert by_name["service"].frequency == pytest.approx(
        (by_name["service"].tasks + by_name["service"].without_lifetime) / table.height, rel=1e-9
    )
    assert fit.without_lifetime == {EVICTED: lifeless}
    assert sum(c.cpu_share for c in fit.classes) == pytest.approx(1.0, rel=1e-9)
    assert fit.without_lifetime_cpu == pytest.approx(
        table.filter(pl.col("no_lifetime").is_not_null())["cpu_request"].sum() / table["cpu_request"].sum(), rel=1e-9
    )
