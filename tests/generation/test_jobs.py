"""Job-level arrivals drawn: jobs, then their tasks; laws checked with fixed seeds."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import polars as pl
from job_models import JOBS, job_model, profiled_job_model
from scipy import stats

from batsim_google.generation.generator import BATCH_SIZE, generate
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.job_arrivals import JobClass
from batsim_google.model.laws import Empirical, Exponential
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law

#: sha256 of the google preset's first 70,000 tasks from seed 5, drawn before job arrivals existed,
#: their times and requests rounded to float32: numpy's exp and log take the processor's SIMD paths,
#: whose last bits differ from one machine to another (the float64 digest did, between two).
PRESET_DIGEST = "92fdc0c42b8bcb8c458c142ec766e06f50421a7182ac5e235c181e0590d77739"


def drawn(model, tasks=200_000, seed=1, **bounds):
    batches = list(generate(model, load_request_law(), np.random.default_rng(seed), tasks=tasks, **bounds))
    return {
        name: np.concatenate([getattr(b, name) for b in batches])
        for name in ("job", "subtime", "class_index", "priority")
    }


def per_job(sample) -> pl.DataFrame:
    frame = pl.DataFrame(sample)
    return frame.group_by("job").agg(
        pl.len().alias("tasks"),
        pl.col("subtime").min().alias("start"),
        pl.col("priority").n_unique().alias("priorities"),
    )


def test_models_without_jobs_draw_byte_for_byte_as_before():
    digest = hashlib.sha256()
    for batch in generate(preset("google"), load_request_law(), np.random.default_rng(5), tasks=70_000):
        assert batch.job is None
        for name in ("subtime", "class_index", "makespan", "priority", "cpu", "memory"):
            values = getattr(batch, name)
            digest.update((values.astype(np.float32) if values.dtype.kind == "f" else values).tobytes())
    assert digest.hexdigest() == PRESET_DIGEST


def test_tasks_come_in_jobs_in_submission_order_and_share_a_priority():
    sample = drawn(job_model())
    assert np.all(np.diff(sample["subtime"]) >= 0)
    jobs = per_job(sample)
    assert jobs["job"].sort().to_list() == list(range(jobs.height))
    assert (jobs["priorities"] == 1).all()


def expected_tasks_law(jobs=JOBS) -> tuple[np.ndarray, np.ndarray]:
    values = np.unique(np.concatenate([c.tasks.values for c in jobs.classes]))
    weights = np.zeros(len(values))
    for job_class in jobs.classes:
        weights[np.searchsorted(values, job_class.tasks.values)] += job_class.frequency * np.array(
            job_class.tasks.weights
        )
    return values, weights


def tasks_per_job_pvalue(model) -> float:
    jobs = per_job(drawn(model)).sort("job")[:-1]  # the last job may be cut
    values, weights = expected_tasks_law()
    counts = np.array([(jobs["tasks"] == v).sum() for v in values])
    return float(stats.chisquare(counts, weights * counts.sum()).pvalue)


def test_tasks_per_job_follow_the_model():
    assert tasks_per_job_pvalue(job_model()) > 0.01


def test_tasks_per_job_from_a_shifted_law_fail():
    shifted = dataclasses.replace(
        JOBS,
        classes=(JobClass(0.7, Empirical((1.0, 3.0, 40.0), (0.55, 0.35, 0.1)), (0.9, 0.1)), JOBS.classes[1]),
    )
    assert tasks_per_job_pvalue(job_model(shifted)) < 1e-6


def test_job_gaps_spread_and_classes_follow_the_model():
    sample = drawn(job_model())
    jobs = per_job(sample).sort("start")
    gaps = np.diff(jobs["start"].to_numpy())
    assert abs(np.mean(gaps == 0) - JOBS.simultaneous) < 0.01
    law = JOBS.interarrival
    assert stats.kstest(gaps[gaps > 0], law.cdf).statistic < 0.03
    frame = pl.DataFrame(sample).sort("job", "subtime")
    within = frame.with_columns(gap=pl.col("subtime").diff().over("job")).drop_nulls("gap")["gap"].to_numpy()
    assert abs(np.mean(within == 0) - JOBS.zero_spread) < 0.01
    assert stats.kstest(within[within > 0], JOBS.spread.cdf).statistic < 0.03
    mean_tasks = np.array([c.frequency * c.tasks.mean() for c in JOBS.classes])
    expected = mean_tasks @ np.array([c.mix for c in JOBS.classes]) / mean_tasks.sum()
    assert np.abs(np.bincount(sample["class_index"]) / len(sample["class_index"]) - expected).max() < 0.01


def test_a_shorter_run_is_a_prefix_and_duration_bounds_submissions():
    long, short = drawn(job_model(), tasks=2 * BATCH_SIZE), drawn(job_model(), tasks=BATCH_SIZE + 17)
    for name in long:
        assert np.array_equal(long[name][: BATCH_SIZE + 17], short[name])
    bounded = drawn(job_model(), tasks=None, duration=5_000.0)
    assert bounded["subtime"].max() <= 5_000.0 < bounded["subtime"].max() + 100.0


def test_arrival_scale_stretches_job_gaps_not_spreads(scale=2.0):
    plain = per_job(drawn(job_model(), tasks=20_000)).sort("job")["start"].to_numpy()
    stretched = per_job(drawn(job_model(), tasks=20_000, arrival_scale=scale)).sort("job")["start"].to_numpy()
    count = min(len(plain), len(stretched)) - 1
    assert np.allclose(stretched[:count], plain[:count] * scale, rtol=1e-9)


def test_each_batsim_job_carries_its_google_job(tmp_path):
    path = tmp_path / "w.json"
    write_generated_workload(path, job_model(), load_request_law(), 1, Generation(tasks=500))
    jobs = json.loads(path.read_text())["jobs"]
    sample = drawn(job_model(), tasks=500)
    assert [job["google_job"] for job in jobs] == sample["job"].tolist()


def test_with_a_job_profile_job_sizes_follow_the_ratio_of_the_profiles():
    """Flat job rate, task rates 1.5 then 0.5: jobs of the first half day are 3 times the size."""
    sample = drawn(profiled_job_model(), tasks=None, duration=86_400.0)
    jobs = per_job(sample).with_columns((pl.col("start") < 43_200.0).alias("first_half"))
    halves = jobs.group_by("first_half").agg(pl.len().alias("jobs"), pl.col("tasks").mean().alias("mean"))
    first, second = (halves.filter(pl.col("first_half") == flag).row(0, named=True) for flag in (True, False))
    mean = JOBS.mean_tasks()
    assert abs(first["jobs"] / second["jobs"] - 1.0) < 0.05  # the jobs' own rate is flat
    assert abs(first["mean"] / (1.5 * mean) - 1.0) < 0.05
    assert abs(second["mean"] / (0.5 * mean) - 1.0) < 0.05
    tasks_first = int((sample["subtime"] < 43_200.0).sum())
    assert abs(tasks_first / (len(sample["subtime"]) - tasks_first) - 3.0) < 0.15


def test_a_duration_keeps_every_task_submitted_by_then_when_spreads_overlap_batches():
    """Spreads of hours make a batch's last jobs overlap the next batch's first: a shorter
    duration must still give exactly the tasks of a longer one submitted by then."""
    spread = dataclasses.replace(JOBS, zero_spread=0.5, spread=Exponential(1e-3))
    short = drawn(job_model(spread), tasks=None, duration=150_000.0)
    long = drawn(job_model(spread), tasks=None, duration=300_000.0)
    assert len(np.unique(long["job"][long["subtime"] > 150_000.0])) > 0
    by_time = long["subtime"] <= 150_000.0
    assert np.array_equal(np.sort(short["subtime"]), np.sort(long["subtime"][by_time]))
    assert np.array_equal(np.sort(short["job"]), np.sort(long["job"][by_time]))
