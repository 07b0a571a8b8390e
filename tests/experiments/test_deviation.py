"""Gaevoy et al.'s deviation criterion, Student-t intervals and the replications a 5 % error needs."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from batsim_google.experiments.queue_metrics import QUEUE_METRICS, deviation
from batsim_google.experiments.statistics import aggregate, bootstrap_interval, half_width, replications_needed
from batsim_google.experiments.validation import compare_metrics

#: Gaevoy et al., Table 3: the original workload's eleven parameters ("Original") ...
TABLE3_ORIGINAL = [14329, 93.067, 872.26, 72.41, 2259.7, 0.032044, 0.4703, 15.31, 14402, 93.537, 887.57]
#: ... the five models' (columns), and the Dev the paper prints for each.
TABLE3_MODELS = [
    [14352, 96.511, 905.98, 38.28, 1873.8, 0.016405, 0.26044, 9.395, 14390, 96.771, 915.37],
    [14196, 96.2, 966.42, 35.247, 1391.7, 0.019913, 0.2413, 12.048, 14231, 96.441, 978.46],
    [14196, 96.105, 959.97, 33.043, 1323.5, 0.020755, 0.2262, 11.916, 14229, 96.331, 971.88],
    [14375, 97.161, 920.9, 28.605, 2327.7, 0.007809, 0.19438, 8.023, 14404, 97.355, 928.92],
    [14324, 96.816, 910.3, 25.24, 1789.4, 0.009683, 0.17137, 7.073, 14349, 96.987, 917.37],
]
TABLE3_DEV = [0.27683, 0.27981, 0.29096, 0.37155, 0.38778]


@pytest.mark.parametrize("column", range(5))
def test_deviation_reproduces_gaevoy_table_3(column):
    reference = {f"p{i}": v for i, v in enumerate(TABLE3_ORIGINAL)}
    model = {f"p{i}": v for i, v in enumerate(TABLE3_MODELS[column])}
    dev, left_out = deviation(reference, model)
    assert left_out == []
    assert dev == pytest.approx(TABLE3_DEV[column], abs=2e-5)  # the table rounds its inputs


def test_deviation_known_case_and_left_out_metrics():
    dev, left_out = deviation({"a": 10.0, "b": 20.0, "c": 0.0, "d": None}, {"a": 11.0, "b": 20.0, "c": 5.0, "d": 3.0})
    assert dev == pytest.approx(math.sqrt((0.1**2 + 0.0) / 2))
    assert left_out == ["c", "d"]
    assert deviation({"a": 4.0}, {"a": 2.0})[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="no metric to compare"):
        deviation({"a": 0.0}, {"a": 1.0})


def test_student_half_width():
    half = stats.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)  # std of 1, 2, 3 is 1
    assert half_width(np.array([1.0]), np.array([3]))[0] == pytest.approx(half) == pytest.approx(2.4841377)
    assert np.isnan(half_width(np.array([1.0]), np.array([1]))[0])


def test_aggregate_gives_bootstrap_intervals_and_n():
    frame = pl.DataFrame(
        {
            "policy": ["x", "x", "x", "y", "y"],
            "m": [1.0, 2.0, 3.0, 5.0, None],
            "k": [1, 1, 1, 2, 4],
        }
    )
    summary = {(r["policy"], r["metric"]): r for r in aggregate(frame, ["policy"], ["m", "k"]).iter_rows(named=True)}
    x = summary[("x", "m")]
    assert (x["n"], x["mean"], x["std"]) == (3, 2.0, 1.0)
    # a resample of 1, 2, 3 is all 1s (or all 3s) with probability 1/27 > 2.5 %: those are the bounds
    assert (x["ci_low"], x["ci_high"]) == (1.0, 3.0)
    assert (x["ci_low"], x["ci_high"]) == bootstrap_interval([1.0, 2.0, 3.0])  # seeded: reproducible
    y = summary[("y", "m")]  # one value: no interval, not a crash
    assert (y["n"], y["mean"], y["ci_low"], y["ci_high"]) == (1, 5.0, None, None)
    assert summary[("y", "k")]["mean"] == 3.0
    assert bootstrap_interval([7.0]) is None and bootstrap_interval([]) is None


def test_a_skewed_positive_sample_gets_no_interval_below_zero():
    sample = [1e6, 1e6, 1e10]
    mean, std = np.mean(sample), np.std(sample, ddof=1)
    assert mean - half_width(std, 3) < 0  # the Student-t interval crossed zero
    low, high = aggregate(pl.DataFrame({"m": sample, "g": 0}), ["g"], ["m"]).select("ci_low", "ci_high").row(0)
    assert 1e6 <= low < mean < high <= 1e10


def test_bootstrap_interval_covers_the_mean_at_about_its_nominal_rate():
    # Lognormal(0, 0.5), n = 20: the percentile interval covers the true mean exp(0.125) about
    # 91 % of the time (it undercovers a little on skewed laws); an interval of half its width
    # covers ~67 %, one using the std for the standard error ~100 %.
    rng = np.random.default_rng(3)
    true_mean, trials = math.exp(0.5**2 / 2), 400
    hits = 0
    for _ in range(trials):
        low, high = bootstrap_interval(rng.lognormal(0.0, 0.5, 20), resamples=2000, rng=rng)
        hits += low <= true_mean <= high
    assert 0.87 <= hits / trials <= 0.98


def test_replications_needed_for_a_five_percent_error():
    # Normal 95 % half-width z s / sqrt(n) <= 0.05 mean: with s / mean = 0.1, n >= (1.96 * 2)^2 = 15.4.
    assert replications_needed(10.0, 1.0) == 16
    assert replications_needed(-10.0, 1.0) == 16
    assert replications_needed(10.0, 0.0) == 1
    assert replications_needed(0.0, 1.0) is None
    # Gaevoy et al. needed "more than 40": a coefficient of variation of about 0.16.
    assert replications_needed(1.0, 0.163) == 41


def test_compare_metrics_of_replications():
    reference = dict.fromkeys(QUEUE_METRICS, 10.0) | {"queued_share": 0.0}
    generated = [dict.fromkeys(QUEUE_METRICS, v) | {"mean_waiting_queued_s": None} for v in (9.0, 11.0, 13.0)]
    rows = {c.metric: c for c in compare_metrics(reference, generated)}
    execution = rows["mean_execution_s"]
    assert (execution.replications, execution.mean, execution.std) == (3, 11.0, 2.0)
    assert execution.relative_error == pytest.approx(0.1)
    assert execution.ci_half_width == pytest.approx(stats.t.ppf(0.975, 2) * 2.0 / math.sqrt(3))
    assert execution.replications_needed == math.ceil((stats.norm.ppf(0.975) * 2.0 / (0.05 * 11.0)) ** 2)
    assert rows["mean_waiting_queued_s"].replications == 0 and rows["mean_waiting_queued_s"].mean is None
    assert rows["queued_share"].relative_error is None  # reference 0
