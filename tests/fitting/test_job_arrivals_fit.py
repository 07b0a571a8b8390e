"""Job-level arrivals fitted: recovery from a known job model, and fidelity on the real parts."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from job_models import HALVES, JOBS, job_model, profiled_job_model
from scipy import stats

from batsim_google.fitting.fidelity import fidelity_report
from batsim_google.fitting.fit_figures import write_plots
from batsim_google.fitting.job_arrivals import SIMULTANEOUS_GAP
from batsim_google.fitting.job_fidelity import job_fidelity
from batsim_google.fitting.model_fit import (
    FitSettings,
    fit_model,
)
from batsim_google.fitting.report import render_markdown, report_mapping
from batsim_google.fitting.trace_input import trace_job_records, trace_task_table
from batsim_google.generation.generator import generate
from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.job_arrivals import JobClass
from batsim_google.model.job_sizes import size_factors
from batsim_google.model.laws import Empirical, Exponential
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.units import HOUR, WEEK

#: Jobs whose tasks are all of the job's class, so that a job's majority class is the one drawn.
PURE = dataclasses.replace(
    JOBS,
    classes=(
        JobClass(0.7, Empirical((1.0, 3.0, 40.0), (0.6, 0.3, 0.1)), (1.0, 0.0)),
        JobClass(0.3, Empirical((1.0, 8.0), (0.5, 0.5)), (0.0, 1.0)),
    ),
)


def generated_table(model, tasks=150_000, seed=2) -> pl.DataFrame:
    """Generated tasks as a fitting table, without the last job (cut by the task count)."""
    batches = list(generate(model, load_request_law(), np.random.default_rng(seed), tasks=tasks))
    kinds = np.array([c.kind for c in model.classes])
    return pl.DataFrame(
        {
            "subtime": np.concatenate([b.subtime for b in batches]),
            "makespan": np.concatenate([b.makespan for b in batches]),
            "kind": kinds[np.concatenate([b.class_index for b in batches])],
            "priority": np.concatenate([b.priority for b in batches]),
            "job_id": np.concatenate([b.job for b in batches]),
        }
    ).filter(pl.col("job_id") != pl.col("job_id").max())


@pytest.fixture(scope="module")
def recovered():
    return fit_model(
        generated_table(job_model(PURE)), FitSettings(profile="none", methods=["gamma-ml", "exponential"])
    ).jobs


def test_job_classes_and_tasks_per_job_are_recovered(recovered):
    for truth, fitted in zip(PURE.classes, recovered.jobs.classes, strict=True):
        assert abs(fitted.frequency - truth.frequency) < 0.01
        assert fitted.tasks.values == truth.tasks.values
        assert np.allclose(fitted.tasks.weights, truth.tasks.weights, atol=0.01)
        assert np.allclose(fitted.mix, truth.mix)


def test_job_gaps_and_spread_are_recovered(recovered):
    fitted = recovered.jobs
    assert abs(fitted.simultaneous - PURE.simultaneous) < 0.01
    assert abs(fitted.interarrival.mean() / PURE.interarrival.mean() - 1.0) < 0.03
    grid = np.geomspace(1e-3, 100.0, 50)
    assert np.abs(fitted.interarrival.cdf(grid) - PURE.interarrival.cdf(grid)).max() < 0.02
    # gaps under 10 us count as simultaneous: the spread law's shortest ones too
    simultaneous = PURE.zero_spread + (1 - PURE.zero_spread) * PURE.spread.cdf(SIMULTANEOUS_GAP)
    assert abs(fitted.zero_spread - simultaneous) < 0.01
    assert abs(fitted.spread.mean() / PURE.spread.mean() - 1.0) < 0.05
    assert recovered.shared["class"] == 1.0


def test_a_shifted_tasks_per_job_law_is_told_apart(recovered):
    """The recovered law is close to the truth and far from a law shifted by one task."""
    fitted = recovered.jobs.classes[0].tasks
    truth = PURE.classes[0].tasks
    values = np.array(truth.values)
    assert np.abs(np.cumsum(fitted.weights) - np.cumsum(truth.weights)).max() < 0.01
    shifted = stats.ks_2samp(
        np.repeat(values, np.round(np.array(fitted.weights) * 10_000).astype(int)),
        np.repeat(values + 1, np.round(np.array(truth.weights) * 10_000).astype(int)),
    )
    assert shifted.pvalue < 1e-6


def test_the_jobs_own_profile_is_fitted_and_job_sizes_follow_the_task_rates():
    """Two days drawn with a flat job rate and task rates 1.5 then 0.5: the fitted profiles give
    it back, half day by half day (a fit of the jobs in the task profile's time would not)."""
    table = generated_table(profiled_job_model(), tasks=230_000)
    fitted = fit_model(table, FitSettings(profile="daily", methods=["gamma-ml", "exponential"])).model
    job_rates = np.array(fitted.jobs.profile.rates)
    factors = size_factors(fitted.arrival_profile, fitted.jobs.profile)
    assert abs(job_rates[:24].mean() - 1.0) < 0.05 and abs(job_rates[24:].mean() - 1.0) < 0.05
    assert abs(factors[:24].mean() - HALVES.rates[0]) < 0.05 * HALVES.rates[0]
    assert abs(factors[24:].mean() - HALVES.rates[-1]) < 0.05 * HALVES.rates[-1]


def test_tables_without_job_ids_fit_no_jobs():
    table = generated_table(job_model(PURE), tasks=5_000).drop("job_id")
    fit = fit_model(table, FitSettings(profile="none", methods=["gamma-ml"]))
    assert fit.jobs is None and fit.model.jobs is None


@pytest.fixture(scope="module")
def sample_parts(google_2011):
    frame, _ = trace_task_table([google_2011], RowAccount())
    return frame.join(trace_job_records([google_2011], RowAccount()), on="job_id", how="left")


@pytest.fixture(scope="module")
def sample_parts_fit(sample_parts):
    """The sample parts fitted with the hours they cover as a daily profile (the others at the mean)."""
    fit = fit_model(sample_parts, FitSettings(profile="daily"))
    return fit, fidelity_report(fit.table.frame, fit.model, seed=0)


def test_fidelity_targets_on_the_sample_parts(sample_parts_fit):
    """Every KS <= 0.06 and every whole hour's rate within 10 %; the first hour has 2.5 times the
    tasks of the next ones from as many jobs (docs/fitting.md), which the jobs' own profile and
    the sizes by bin follow."""
    _, fidelity = sample_parts_fit
    jobs = fidelity.jobs
    assert jobs.task_gap_ks <= 0.06
    assert jobs.job_gap_ks <= 0.06
    assert jobs.tasks_per_job_ks <= 0.06
    assert len(jobs.original_hourly) == 4 and jobs.hourly_draws == 20
    assert jobs.worst_hourly_error <= 0.10
    assert jobs.hourly_spread > 0.10  # why one draw is not the model's rate


def test_a_stationary_job_model_misses_the_first_hour(sample_parts):
    """Without a profile (the input spans less than a day) the mean rate is kept, the hours not."""
    fit = fit_model(sample_parts)
    jobs = fidelity_report(fit.table.frame, fit.model, seed=0).jobs
    original, generated = np.array(jobs.original_hourly), np.array(jobs.generated_hourly)
    assert abs(generated.sum() / original.sum() - 1.0) <= 0.10
    assert jobs.worst_hourly_error > 0.4


def test_what_the_tasks_of_a_job_share_in_the_trace(sample_parts_fit):
    fit, _ = sample_parts_fit
    shared = fit.jobs.shared
    assert shared["google_priority"] == shared["scheduling_class"] == shared["user"] == 1.0
    assert shared["class"] < 0.5
    assert fit.jobs.recorded_jobs > 0.99 * fit.jobs.job_count
    assert fit.jobs.as_recorded == {"user": 1.0, "scheduling_class": 1.0}


def test_the_report_and_plots_show_the_jobs(sample_parts_fit, tmp_path):
    fit, fidelity = sample_parts_fit
    text = render_markdown(fit, "parts", fidelity)
    assert "## Jobs (an extension of the model paper)" in text
    assert f"tasks per job {fidelity.jobs.tasks_per_job_ks:.4g}" in text
    mapping = report_mapping(fit, "parts", fidelity)
    assert mapping["jobs"]["jobs"] == fit.jobs.job_count
    assert mapping["fidelity"]["jobs"]["worst_ks"] == fidelity.jobs.worst_ks
    written = write_plots(tmp_path, fit, fidelity)
    assert tmp_path / "hourly_rates.png" in written and (tmp_path / "hourly_rates.png").stat().st_size > 0


@pytest.mark.parametrize("begin", [10_622.0, 10_023.0, 10_790.0])  # part 00002 begins at 10,023 s
def test_an_input_starting_later_is_compared_over_its_own_hours(begin):
    """A later part of the trace starts hours after 0: the hours before it, and an hour it covers
    less than 95 % of, are not compared (they gave an infinite or a far too large error)."""
    rng = np.random.default_rng(0)
    original = np.sort(rng.uniform(begin, 25_000.0, 4000))
    size = round(4000 * 25_000.0 / (25_000.0 - begin))  # the same rate from 0
    drawn = [np.sort(rng.uniform(0.0, 25_000.0, size)) for _ in range(3)]
    fidelity = job_fidelity(original, np.arange(4000), drawn[0], np.arange(size), drawn)
    assert len(fidelity.original_hourly) == 3  # hours 3, 4 and 5 (10,800 to 21,600 s)
    assert min(fidelity.original_hourly) > 900
    assert fidelity.worst_hourly_error == pytest.approx(0.0, abs=0.1)


def test_a_fit_on_weeks_of_jobs_generates_their_hourly_jobs():
    """Two weeks of jobs with a weekly rhythm (360 jobs an hour on average): the fitted model's
    generated week has the input's jobs per hour, in numbers, within 15 % MAE; the same week at
    three quarters of the level does not."""
    week = np.arange(336)
    rhythm = ArrivalProfile.normalized(WEEK, 1.0 + 0.5 * np.sin(week * 2 * np.pi / 336) * np.cos(week * 2 * np.pi / 48))
    small = dataclasses.replace(
        PURE,
        interarrival=Exponential(0.1),
        simultaneous=0.0,
        profile=rhythm,
        classes=tuple(dataclasses.replace(c, tasks=Empirical((1.0, 2.0), (0.5, 0.5))) for c in PURE.classes),
    )
    truth = dataclasses.replace(preset("google"), jobs=small, arrival_profile=rhythm)
    batches = list(generate(truth, load_request_law(), np.random.default_rng(3), duration=2 * WEEK))
    kinds = np.array([c.kind for c in truth.classes])
    table = pl.DataFrame(
        {
            "subtime": np.concatenate([b.subtime for b in batches]),
            "makespan": np.concatenate([b.makespan for b in batches]),
            "kind": kinds[np.concatenate([b.class_index for b in batches])],
            "priority": np.concatenate([b.priority for b in batches]),
            "job_id": np.concatenate([b.job for b in batches]),
        }
    )
    model = fit_model(table, FitSettings(methods=["gamma-ml", "exponential"])).model
    assert model.arrival_profile.period == WEEK

    def hourly_jobs(source) -> np.ndarray:
        job = np.concatenate([b.job for b in source])
        first = np.concatenate([[True], np.diff(job) != 0])
        starts = np.concatenate([b.subtime for b in source])[first]
        weeks = np.ceil(starts.max() / WEEK)
        return np.bincount((np.mod(starts, WEEK) // HOUR).astype(np.int64), minlength=168)[:168] / weeks

    expected = hourly_jobs(batches)
    generated = hourly_jobs(list(generate(model, load_request_law(), np.random.default_rng(4), duration=WEEK)))
    assert expected.mean() == pytest.approx(360.0, rel=0.02)

    def mae(hourly):
        return np.mean(np.abs(hourly - expected)) / expected.mean()

    assert mae(generated) < 0.15 and mae(0.75 * generated) > 0.15
