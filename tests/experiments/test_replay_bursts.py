"""A replay's bursts: evictions per minute and the largest jobs' waits, on attempts written by hand."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from batsim_google.experiments.replay_bursts import bursts, evictions_per_minute, job_waits, largest_jobs
from batsim_google.experiments.replay_fidelity import attempt_table, compare, eviction_p_values, targets

INF = math.inf
NAMES = ("task", "job", "group", "cpu", "submit", "start", "end", "evicted")


def _table(rows: list[tuple]) -> pl.DataFrame:
    return attempt_table(pl.DataFrame([dict(zip(NAMES, row)) for row in rows]))


def _giant(waits: list[float | None], job: str = "7", submit: float = 100.0) -> list[tuple]:
    """A job whose task i was submitted at ``submit`` and waited ``waits[i]`` (None: not started)."""
    return [
        (f"{job}_{i}", job, "normal", 0.01, submit, None if w is None else submit + w, None, False)
        for i, w in enumerate(waits)
    ]


#: 300 s: a job of 4 tasks, one of 2 (with a resubmission), one of 1; evictions in minutes 0 and 2.
REAL = _table(
    [
        *_giant([1.0, 2.0, 30.0, None]),
        ("8_0", "8", "free", 0.1, -INF, -INF, 130.0, True),
        ("8_0", "8", "free", 0.1, 130.0, 135.0, None, False),  # resubmitted after the eviction
        ("8_1", "8", "free", 0.1, 10.0, 12.0, 50.0, True),
        ("9_0", "9", "production", 0.1, 20.0, 21.0, None, False),
        ("5_0", "5", "normal", 0.1, 400.0, 401.0, None, False),  # after the window: not counted
    ]
)
SIMULATED = _table(
    [
        *_giant([2.0, 2.0, 2.0, 2.0]),
        ("8_0", "8", "free", 0.1, -INF, -INF, 280.0, True),
        ("8_0", "8", "free", 0.1, 280.0, 282.0, None, False),
        ("8_1", "8", "free", 0.1, 10.0, 12.0, None, False),
        ("9_0", "9", "production", 0.1, 20.0, 22.0, None, False),
    ]
)


def test_evictions_are_counted_in_the_minute_they_happen():
    assert evictions_per_minute(REAL, 300.0).tolist() == [1, 0, 1, 0, 0]
    assert evictions_per_minute(SIMULATED, 300.0).tolist() == [0, 0, 0, 0, 1]


def test_the_largest_jobs_are_those_with_the_most_tasks_submitted_in_the_window():
    jobs = largest_jobs(REAL, 300.0, count=2)
    assert jobs.rows() == [("7", "normal", 4), ("8", "free", 2)]  # 8 has 2 tasks, 3 attempts
    assert largest_jobs(REAL, 300.0)["job"].to_list() == ["7", "8", "9"]  # job 5 is after the window


def test_a_jobs_waits_count_the_tasks_not_started_as_infinite():
    assert job_waits(REAL, "7", 300.0).tolist() == [1.0, 2.0, 30.0, INF]
    assert job_waits(REAL, "7", 120.0).tolist() == [1.0, 2.0, INF, INF]  # started at 130 s: after the end


def test_the_bursts_key_gives_each_large_jobs_waits_on_both_sides():
    key = bursts(REAL, SIMULATED, 300.0)
    assert key["evictions_per_minute"] == {"real": [1, 0, 1, 0, 0], "simulated": [0, 0, 0, 0, 1]}
    giant = key["largest_jobs"][0]
    assert (giant["job"], giant["group"], giant["tasks"]) == ("7", "normal", 4)
    assert giant["real"] == {
        "tasks": 4,
        "median_wait_s": 2.0,  # of the three started
        "p90_wait_s": pytest.approx(2 + 0.8 * 28),
        "share_started_60s": 0.75,
        "never_started": 1,
    }
    assert giant["simulated"]["median_wait_s"] == 2.0 and giant["simulated"]["never_started"] == 0


def _report(real_waits: list[float], simulated_waits: list[float]) -> dict:
    real, simulated = _table(_giant(real_waits)), _table(_giant(simulated_waits))
    report = {**compare(real, simulated, 3600.0), "bursts": bursts(real, simulated, 3600.0)}
    report["eviction_p_values"] = eviction_p_values(report)
    return report


def test_the_largest_jobs_median_wait_is_a_target_for_a_job_of_100_tasks_or_more():
    rng = np.random.default_rng(3)
    real = list(rng.uniform(40, 100, size=150))  # a giant job that waited about 70 s
    assert targets(_report(real, [2.0] * 150))["largest_job"] == {"median_wait": False}
    assert targets(_report(real, list(np.array(real) * 1.5)))["largest_job"] == {"median_wait": True}
    assert "largest_job" not in targets(_report(real[:99], [2.0] * 99))  # too small a job to be held


def test_the_figures_give_a_panel_to_each_group_with_attempts_only(tmp_path):
    import matplotlib.image

    from batsim_google.experiments.replay_figures import DPI, draw_figures

    key = bursts(REAL, SIMULATED, 300.0)
    paths = draw_figures(REAL, SIMULATED, 300.0, tmp_path, key)
    assert [path.name for path in paths] == ["wait_cdf.png", "cpu_in_use.png", "bursts.png"]
    # free, normal, production and all: no monitoring panel (3.1 in a panel, 0.6 in for the axis)
    width = matplotlib.image.imread(tmp_path / "wait_cdf.png").shape[1]
    assert width == round((3.1 * 4 + 0.6) * DPI)
    only_normal = REAL.filter(pl.col("group") == "normal")
    draw_figures(only_normal, only_normal, 300.0, tmp_path)
    assert matplotlib.image.imread(tmp_path / "wait_cdf.png").shape[1] == round((3.1 * 2 + 0.6) * DPI)
