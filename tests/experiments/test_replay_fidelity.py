"""The figures of a replay's fidelity, on small tables of attempts computed by hand."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from batsim_google.experiments.replay_fidelity import (
    attempt_table,
    band_figures,
    bands,
    compare,
    cpu_per_minute,
    cpu_ratios,
    equal_rates_p_value,
    eviction_p_values,
    group_names,
    targets,
)

INF = math.inf


def _table(rows: list[tuple]) -> pl.DataFrame:
    """Attempts from rows of (task, group, cpu, submit, start, end, evicted); the task is its job."""
    names = ("task", "group", "cpu", "submit", "start", "end", "evicted")
    return attempt_table(pl.DataFrame([{**dict(zip(names, row)), "job": row[0]} for row in rows]))


#: A 600 s window: a task running from before it, one evicted, one waiting at the end, ...
ATTEMPTS = _table(
    [
        ("a", "normal", 0.5, -INF, -INF, None, False),  # running all along: 600 s
        ("b", "free", 0.25, 10.0, 12.0, 130.0, True),  # waits 2 s, evicted at 130 (118 s run)
        ("b", "free", 0.25, 130.0, 230.0, 400.0, False),  # resubmitted, waits 100 s, 170 s run
        ("c", "normal", 0.1, 300.0, 301.0, 900.0, False),  # waits 1 s, 299 s run in the window
        ("d", "normal", 0.1, 500.0, None, None, False),  # never started: still waiting at the end
        ("e", "normal", 0.1, 550.0, None, 560.0, False),  # killed while pending: not waiting
        ("f", "normal", 0.1, 650.0, 651.0, 700.0, False),  # after the window
        ("g", "free", 0.2, -INF, -INF, 60.0, True),  # evicted at 60, ran 60 s in the window
    ]
)


def test_band_figures_follow_the_documented_definitions():
    free = band_figures(ATTEMPTS.filter(pl.col("group") == "free"), 600.0)
    assert free["tasks"] == 2
    assert free["median_wait_s"] == pytest.approx(51.0)  # waits 2 and 100
    assert free["p90_wait_s"] == pytest.approx(2 + 0.9 * 98)
    assert free["share_started_60s"] == pytest.approx(0.5)
    hours = (118 + 170 + 60) / 3600
    assert free["evictions_per_1000_task_hours"] == pytest.approx(1000 * 2 / hours)
    assert free["never_started"] == 0
    assert free["evictions"] == 2 and free["task_hours"] == pytest.approx(hours)
    normal = band_figures(ATTEMPTS.filter(pl.col("group") == "normal"), 600.0)
    assert normal["tasks"] == 3  # c, d, e (f is after the window)
    assert normal["median_wait_s"] == pytest.approx(1.0)
    assert normal["share_started_60s"] == pytest.approx(1 / 3)
    assert normal["never_started"] == 1
    assert normal["evictions_per_1000_task_hours"] == 0.0


def test_bands_give_null_waits_to_a_band_where_nothing_started():
    figures = bands(ATTEMPTS, 600.0)
    assert figures["production"] == {
        "tasks": 0,
        "median_wait_s": None,
        "p90_wait_s": None,
        "share_started_60s": None,
        "evictions_per_1000_task_hours": None,
        "never_started": 0,
        "evictions": 0,
        "task_hours": 0.0,
    }
    assert figures["all"]["tasks"] == 5 and figures["all"]["never_started"] == 1


def test_cpu_in_use_is_the_time_average_over_each_minute():
    cpu = cpu_per_minute(ATTEMPTS, 600.0)
    assert cpu.shape == (10,)
    # minute 0: a (0.5) + g (0.2) all minute + b (0.25) from 12 s
    assert cpu[0] == pytest.approx(0.5 + 0.2 + 0.25 * 48 / 60)
    # minute 2 (120-180 s): a, b's first attempt to 130 s
    assert cpu[2] == pytest.approx(0.5 + 0.25 * 10 / 60)
    # minute 9 (540-600 s): a, c
    assert cpu[9] == pytest.approx(0.6)


def test_cpu_ratios_report_the_mean_and_the_minute_furthest_from_one():
    ratios = cpu_ratios(np.array([1.0, 2.0, 4.0, 0.0]), np.array([1.1, 1.0, 4.2, 3.0]))
    assert ratios["mean_ratio"] == pytest.approx((1.1 + 0.5 + 1.05) / 3)
    assert ratios["worst_ratio"] == pytest.approx(0.5)


def test_compare_holds_the_interface_keys():
    report = compare(ATTEMPTS, ATTEMPTS, 600.0)
    assert set(report) == {"bands", "cpu_in_use"}
    assert set(report["bands"]) == {"free", "normal", "production", "monitoring", "all"}
    assert set(report["bands"]["free"]) == {"real", "simulated"}
    assert report["cpu_in_use"] == {"mean_ratio": pytest.approx(1.0), "worst_ratio": pytest.approx(1.0)}


def test_groups_follow_the_model_papers_priority_groups():
    names = pl.select(group_names(pl.Series([0, 1, 2, 8, 9, 10, 11, None]))).to_series().to_list()
    assert names == ["free", "free", "normal", "normal", "production", "monitoring", "monitoring", None]


def _side(tasks, median, share, evictions, never, task_hours=50_000.0):
    """A side's figures; the eviction count is its rate's over ``task_hours``."""
    return {
        "tasks": tasks,
        "median_wait_s": median,
        "p90_wait_s": None,
        "share_started_60s": share,
        "evictions_per_1000_task_hours": evictions,
        "never_started": never,
        "evictions": 0 if evictions is None else round(evictions * task_hours / 1000),
        "task_hours": task_hours,
    }


def test_targets_hold_each_group_of_100_real_tasks_to_the_issues_bounds():
    report = {
        "bands": {
            "free": {"real": _side(200, 2.0, 0.95, 70.0, 3), "simulated": _side(210, 3.9, 0.86, 139.0, 2)},
            "normal": {"real": _side(1000, 2.0, 1.0, 2.0, 0), "simulated": _side(1000, 4.1, 0.89, 0.0, 10)},
            "production": {"real": _side(99, 2.0, 1.0, 0.0, 0), "simulated": _side(99, 500.0, 0.0, 9.0, 99)},
            "monitoring": {"real": _side(0, None, None, 0.0, 0), "simulated": _side(0, None, None, 0.0, 0)},
            "all": {"real": _side(1299, 2.0, 1.0, 1.0, 3), "simulated": _side(1309, 4.0, 0.9, 1.0, 111)},
        },
        "cpu_in_use": {"mean_ratio": 0.96, "worst_ratio": 1.11},
    }
    checked = targets(report)
    assert set(checked) == {"free", "normal", "cpu_in_use"}  # production has fewer than 100 real tasks
    assert checked["free"] == {"median_wait": True, "share_started_60s": True, "evictions": True, "never_started": True}
    assert checked["normal"] == {
        "median_wait": False,  # 4.1 > 2 x 2.0
        "share_started_60s": False,  # 11 points
        "evictions": False,  # none against 2.0, in 50,000 task-hours: 0 against 100
        "never_started": False,  # 10 > 1 % of 990
    }
    assert checked["cpu_in_use"] == {"mean": True, "worst_minute": False}


def _eviction_report(real: tuple[int, float], simulated: tuple[int, float]) -> dict:
    """A report whose free group has these (evictions, task-hours), real and simulated."""

    def side(evictions, hours):
        return _side(1000, 2.0, 1.0, 1000.0 * evictions / hours, 0, hours)

    quiet = {"real": _side(0, None, None, None, 0), "simulated": _side(0, None, None, None, 0)}
    report = {
        "bands": {
            "free": {"real": side(*real), "simulated": side(*simulated)},
            **{band: quiet for band in ("normal", "production", "monitoring", "all")},
        },
        "cpu_in_use": {"mean_ratio": 1.0, "worst_ratio": 1.0},
    }
    report["eviction_p_values"] = eviction_p_values(report)
    report["targets"] = targets(report)
    return report


def test_a_missed_eviction_rate_that_equal_rates_explain_is_met_and_its_p_value_is_reported():
    from batsim_google.experiments.replay_validation import report_lines

    # 1 against 5 in equal task-hours: 5x apart, which 2x misses, but p = 0.22
    report = _eviction_report((1, 1000.0), (5, 1000.0))
    assert report["eviction_p_values"] == {"free": pytest.approx(0.21875)}
    assert report["targets"]["free"]["evictions"] is True
    lines = list(report_lines(report))
    assert (
        "  free evictions, rates not within 2x; counts behind them: real 1 in 1,000.0 task-hours, simulated 5 in"
        " 1,000.0; at equal rates, counts this far apart: p = 0.22, met: equal rates explain them"
    ) in lines
    assert lines[-1] == "targets (groups of 100 real tasks or more): all met"


def test_a_missed_eviction_rate_that_the_counts_tell_apart_stays_missed():
    from batsim_google.experiments.replay_validation import report_lines

    # 10 against 40 in equal task-hours: 4x apart, p far below 0.05
    report = _eviction_report((10, 1000.0), (40, 1000.0))
    assert report["eviction_p_values"]["free"] < 1e-4
    assert report["targets"]["free"]["evictions"] is False
    lines = list(report_lines(report))
    assert any(line.startswith("  free evictions") and line.endswith("p = 0.00, missed") for line in lines)
    assert lines[-1] == "targets (groups of 100 real tasks or more): missed: free evictions"


def test_rates_within_2x_need_no_test_and_print_no_counts():
    from batsim_google.experiments.replay_validation import report_lines

    report = _eviction_report((30, 1000.0), (40, 1000.0))
    assert report["targets"]["free"]["evictions"] is True
    assert 0.05 < report["eviction_p_values"]["free"] <= 1  # kept in the JSON all the same
    assert not any("evictions, rates not within 2x" in line for line in report_lines(report))


def test_the_equal_rates_test_tells_few_evictions_from_many():
    def side(evictions, hours):
        return {"evictions": evictions, "task_hours": hours}

    # 0 against 4 in equal task-hours: 2 x 0.5^4, chance; 0 against 40 is not
    assert equal_rates_p_value(side(0, 1000.0), side(4, 1000.0)) == pytest.approx(0.125)
    assert equal_rates_p_value(side(0, 1000.0), side(40, 1000.0)) < 1e-9
    # the task-hours weigh: 1 in 100 h against 9 in 900 h is one rate
    assert equal_rates_p_value(side(1, 100.0), side(9, 900.0)) == pytest.approx(1.0)
    assert equal_rates_p_value(side(0, 10.0), side(0, 10.0)) is None
