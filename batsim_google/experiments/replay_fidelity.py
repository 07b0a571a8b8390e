"""How faithful a replay is: the same figures, by the same definitions, for the trace and the run.

Both sides are first turned into one table of *attempts* (:data:`ATTEMPT_COLUMNS`; the trace's by
:mod:`.replay_attempts`, the simulation's from Batsim's jobs and the scheduler's accounting), with
times in seconds from the window start; the window is ``[0, duration)``. Then, per priority group
and for all attempts:

- ``tasks``: attempts submitted in the window (a resubmission after an eviction or a failure is
  an attempt of its own, in the trace as in the simulation);
- ``median_wait_s``, ``p90_wait_s``: start minus submission of the attempts submitted in the
  window that started before its end (null when none did);
- ``share_started_60s``: of the attempts submitted in the window, the share that started within
  60 s of their submission;
- ``evictions_per_1000_task_hours``: attempts evicted in the window, per 1,000 hours of attempts
  running in it (every attempt running in the window counts, those already running at its start
  included; null without any running);
- ``never_started``: attempts submitted in the window, not started and not ended by its end
  (still waiting when the window closes);
- ``evictions`` and ``task_hours``: the counts behind the eviction rate, so that a reader sees
  when a ratio rests on a handful of events.

CPU in use is the CPU requested by the attempts running, averaged over each whole minute of the
window; ``mean_ratio`` is the mean over minutes of simulated / real, ``worst_ratio`` the minute's
ratio furthest from 1.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from batsim_google.trace.vocabulary import PRIORITY_GROUPS

#: The common table of attempts: ``task`` (an id), ``job`` (the trace's job id; null: unknown),
#: ``group`` (priority group name), ``cpu`` (request), ``submit``, ``start`` (null: never started),
#: ``end`` (null: not ended in the data), ``evicted`` (the attempt ended by an eviction). Times in s
#: from the window start; -inf before it.
ATTEMPT_COLUMNS = {
    "task": pl.String,
    "job": pl.String,
    "group": pl.String,
    "cpu": pl.Float64,
    "submit": pl.Float64,
    "start": pl.Float64,
    "end": pl.Float64,
    "evicted": pl.Boolean,
}
BANDS = ("free", "normal", "production", "monitoring", "all")
FIGURES = (
    "tasks",
    "median_wait_s",
    "p90_wait_s",
    "share_started_60s",
    "evictions_per_1000_task_hours",
    "never_started",
    "evictions",
    "task_hours",
)
#: The wait within which a task counts as started quickly.
QUICK_START_S = 60.0
MINUTE = 60.0


def attempt_table(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` reduced to the common columns, typed."""
    return frame.select([pl.col(name).cast(kind) for name, kind in ATTEMPT_COLUMNS.items()])


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def band_figures(attempts: pl.DataFrame, duration: float) -> dict:
    """The figures of one band's attempts over the window ``[0, duration)``."""
    submitted = attempts.filter((pl.col("submit") >= 0) & (pl.col("submit") < duration))
    started = submitted.filter(pl.col("start").is_not_null() & (pl.col("start") < duration))
    waits = (started["start"] - started["submit"]).to_numpy()
    quick = int((waits <= QUICK_START_S).sum())
    waiting = submitted.filter(
        (pl.col("start").is_null() | (pl.col("start") >= duration))
        & (pl.col("end").is_null() | (pl.col("end") >= duration))
    ).height
    running = attempts.filter(pl.col("start").is_not_null())
    begin = running["start"].to_numpy().clip(0, duration)
    finish = running["end"].fill_null(math.inf).to_numpy().clip(0, duration)
    hours = float(np.clip(finish - begin, 0, None).sum()) / 3600.0
    evicted = running.filter(
        pl.col("evicted") & pl.col("end").is_not_null() & (pl.col("end") >= 0) & (pl.col("end") < duration)
    ).height
    return {
        "tasks": submitted.height,
        "median_wait_s": _number(float(np.median(waits))) if waits.size else None,
        "p90_wait_s": _number(float(np.quantile(waits, 0.9))) if waits.size else None,
        "share_started_60s": quick / submitted.height if submitted.height else None,
        "evictions_per_1000_task_hours": 1000.0 * evicted / hours if hours > 0 else None,
        "never_started": waiting,
        "evictions": evicted,
        "task_hours": hours,
    }


def bands(attempts: pl.DataFrame, duration: float) -> dict[str, dict]:
    """:func:`band_figures` per priority group and for all attempts."""
    figures = {name: band_figures(attempts.filter(pl.col("group") == name), duration) for name in BANDS[:-1]}
    figures["all"] = band_figures(attempts, duration)
    return figures


def cpu_per_minute(attempts: pl.DataFrame, duration: float) -> np.ndarray:
    """CPU requested by the running attempts, averaged over each whole minute of the window."""
    minutes = int(duration // MINUTE)
    edges = np.arange(minutes + 1) * MINUTE
    running = attempts.filter(pl.col("start").is_not_null())
    begin = running["start"].to_numpy().clip(0, duration)
    finish = running["end"].fill_null(math.inf).to_numpy().clip(0, duration)
    cpu = running["cpu"].fill_null(0.0).to_numpy()
    # the integral of CPU in use up to each edge: each attempt adds cpu x its time running before it
    inside = np.clip(edges[None, :] - begin[:, None], 0, None).clip(max=(finish - begin).clip(0, None)[:, None])
    integral = (cpu[:, None] * inside).sum(axis=0) if cpu.size else np.zeros(edges.size)
    return np.diff(integral) / MINUTE


def cpu_ratios(real: np.ndarray, simulated: np.ndarray) -> dict:
    """``mean_ratio`` and ``worst_ratio`` (furthest from 1) of simulated over real, per minute."""
    valid = real > 0
    ratios = simulated[valid] / real[valid]
    if not ratios.size:
        return {"mean_ratio": None, "worst_ratio": None}
    worst = ratios[np.argmax(np.abs(ratios - 1.0))]
    return {"mean_ratio": float(ratios.mean()), "worst_ratio": float(worst)}


def compare(real: pl.DataFrame, simulated: pl.DataFrame, duration: float) -> dict:
    """The JSON report: per band real against simulated, and the CPU in use."""
    real_bands, simulated_bands = bands(real, duration), bands(simulated, duration)
    return {
        "bands": {name: {"real": real_bands[name], "simulated": simulated_bands[name]} for name in BANDS},
        "cpu_in_use": cpu_ratios(cpu_per_minute(real, duration), cpu_per_minute(simulated, duration)),
    }


def group_names(google_priority: pl.Expr) -> pl.Expr:
    """The priority group's name of Google priorities (null: unknown)."""
    names = {p: name for name, (low, high) in PRIORITY_GROUPS.items() for p in range(low, high + 1)}
    return google_priority.cast(pl.Int64).replace_strict(names, default=None, return_dtype=pl.String)


#: The groups held to the targets: those with at least this many real attempts in the window.
TARGET_MIN_TASKS = 100


def _within(simulated: float | None, real: float | None, factor: float) -> bool:
    """``simulated`` within ``factor`` x of ``real`` (both zero counts as within)."""
    if real is None or simulated is None:
        return real is None and simulated is None
    if real == 0 or simulated == 0:
        return real == simulated
    return real / factor <= simulated <= real * factor


def equal_rates_p_value(real: dict, simulated: dict) -> float | None:
    """How likely two sides evicting at one same rate differ in their eviction counts as much as
    ``real`` and ``simulated`` do (two-sided exact test: given their sum, a side's count is
    binomial by its share of the task-hours); None without evictions or task-hours. On a few
    evictions, a rate within 2x or not is chance: this says whether the counts tell the rates apart."""
    from scipy.stats import binomtest

    total = real["evictions"] + simulated["evictions"]
    hours = real["task_hours"] + simulated["task_hours"]
    if not total or not hours:
        return None
    return float(binomtest(real["evictions"], total, real["task_hours"] / hours).pvalue)


#: Below this p-value of :func:`equal_rates_p_value`, counts tell the two eviction rates apart.
EQUAL_RATES_ALPHA = 0.05


def eviction_p_values(report: dict) -> dict[str, float | None]:
    """:func:`equal_rates_p_value` of each group held to the targets (see :func:`targets`)."""
    return {
        band: equal_rates_p_value(report["bands"][band]["real"], report["bands"][band]["simulated"])
        for band in BANDS[:-1]
        if report["bands"][band]["real"]["tasks"] >= TARGET_MIN_TASKS
    }


def evictions_met(real: dict, simulated: dict, p_value: float | None) -> bool:
    """The eviction target: rates within 2x, or counts that equal rates explain (``p_value`` of
    :func:`equal_rates_p_value` at least :data:`EQUAL_RATES_ALPHA`): a miss by a handful of
    evictions is chance, not a wrong rate."""
    within = _within(simulated["evictions_per_1000_task_hours"], real["evictions_per_1000_task_hours"], 2.0)
    return within or (p_value is not None and p_value >= EQUAL_RATES_ALPHA)


def targets(report: dict) -> dict:
    """Which of issue 26's targets a report meets: per group with at least
    :data:`TARGET_MIN_TASKS` real attempts, median wait within 2x, share started within 60 s
    within 10 points, evictions per 1,000 task-hours by :func:`evictions_met` (``p_values``: the
    report's ``eviction_p_values``, computed when absent), never started at most 1 % of the
    started; CPU in use within 5 % on average and 10 % in the worst minute; and, when the report
    has ``bursts`` and its largest job has :data:`TARGET_MIN_TASKS` real attempts, that job's
    median wait within 2x."""
    p_values = report.get("eviction_p_values") or eviction_p_values(report)
    checked = {}
    for band in BANDS[:-1]:
        real, simulated = report["bands"][band]["real"], report["bands"][band]["simulated"]
        if real["tasks"] < TARGET_MIN_TASKS:
            continue
        started = simulated["tasks"] - simulated["never_started"]
        quick = (real["share_started_60s"], simulated["share_started_60s"])
        checked[band] = {
            "median_wait": _within(simulated["median_wait_s"], real["median_wait_s"], 2.0),
            "share_started_60s": None not in quick and abs(quick[0] - quick[1]) <= 0.10,
            "evictions": evictions_met(real, simulated, p_values.get(band)),
            "never_started": simulated["never_started"] <= 0.01 * started,
        }
    cpu = report["cpu_in_use"]
    checked["cpu_in_use"] = {
        "mean": cpu["mean_ratio"] is not None and abs(cpu["mean_ratio"] - 1) <= 0.05,
        "worst_minute": cpu["worst_ratio"] is not None and abs(cpu["worst_ratio"] - 1) <= 0.10,
    }
    largest = (report.get("bursts") or {}).get("largest_jobs") or []
    if largest and largest[0]["real"]["tasks"] >= TARGET_MIN_TASKS:
        real, simulated = largest[0]["real"], largest[0]["simulated"]
        checked["largest_job"] = {"median_wait": _within(simulated["median_wait_s"], real["median_wait_s"], 2.0)}
    return checked
