"""The figures of a replay's validation, real against simulated: one window's (wait CDFs per
priority group, CPU in use per minute, its bursts) and a sweep's (evictions per minute over the
windows, the largest jobs' waits per window).

Real is a solid line, simulated a dashed one, everywhere. A wait CDF's height is the share of the
attempts submitted in the window that started within that wait; attempts not started by the
window's end keep it below 1. A group with no attempt on either side gets no panel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.experiments.replay_bursts import job_waits, waits
from batsim_google.experiments.replay_fidelity import BANDS, cpu_per_minute
from batsim_google.output_files import save_figure

SIDES = (("real", "-"), ("simulated", "--"))
#: Waits are drawn from this floor (a log axis has no 0) to the longest wait shown.
WAIT_FLOOR_S = 0.1
DPI = 150
MINUTE_S, HOUR_S = 60.0, 3600.0


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _wait_axis(axis, longest: float) -> None:
    from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter

    axis.set_xscale("log")
    axis.set_xlim(WAIT_FLOOR_S, max(10.0, 2.0 * longest))
    axis.xaxis.set_major_locator(LogLocator(base=10, numticks=6))
    axis.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    axis.xaxis.set_minor_formatter(NullFormatter())
    axis.set_ylim(0, 1.02)
    axis.grid(True, which="major", alpha=0.3)


def draw_cdf(axis, waits: np.ndarray, **style) -> None:
    """The share of ``waits`` at or below each wait, as steps (inf waits count in the total only)."""
    finite = waits[np.isfinite(waits)]
    if not waits.size:
        return
    x = np.concatenate([[WAIT_FLOOR_S], np.clip(finite, WAIT_FLOOR_S, None)])
    y = np.arange(finite.size + 1) / waits.size
    axis.step(x, y, where="post", **style)


def _longest(*waits: np.ndarray) -> float:
    finite = [w[np.isfinite(w)] for w in waits]
    return max((float(w.max()) for w in finite if w.size), default=WAIT_FLOOR_S)


def wait_cdf_figure(real: pl.DataFrame, simulated: pl.DataFrame, duration: float, path: Path) -> Path:
    """Wait CDF per priority group with attempts in the window, and for all."""
    plt = _pyplot()
    tables = {name: table for (name, _), table in zip(SIDES, (real, simulated))}
    by_band = {
        band: {
            side: waits(table if band == "all" else table.filter(pl.col("group") == band), duration)
            for side, table in tables.items()
        }
        for band in BANDS
    }
    shown = [band for band in BANDS[:-1] if any(w.size for w in by_band[band].values())] + ["all"]
    longest = _longest(*(w for band in shown for w in by_band[band].values()))
    figure, axes = plt.subplots(1, len(shown), figsize=(3.1 * len(shown) + 0.6, 3.2), sharey=True, squeeze=False)
    for axis, band in zip(axes[0], shown):
        for side, style in SIDES:
            draw_cdf(axis, by_band[band][side], linestyle=style)
        if not any(w.size for w in by_band[band].values()):
            axis.text(0.5, 0.5, "no attempt submitted\nin the window", transform=axis.transAxes, ha="center")
        _wait_axis(axis, longest)
        counts = {side: f"{w.size:,}" for side, w in by_band[band].items()}
        axis.set_title(f"{band}\n{counts['real']} real, {counts['simulated']} simulated attempts", fontsize="medium")
        axis.set_xlabel("wait (s)")
    axes[0][0].set_ylabel("share of attempts started\n(real solid, simulated dashed)")
    return save_figure(figure, path, dpi=DPI)


def cpu_figure(real: pl.DataFrame, simulated: pl.DataFrame, duration: float, path: Path) -> Path:
    """CPU requested by the running attempts per minute."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 3.2))
    for (side, style), table in zip(SIDES, (real, simulated)):
        cpu = cpu_per_minute(table, duration)
        axis.plot(np.arange(cpu.size) + 0.5, cpu, style, label=side)
    axis.set_xlabel("minute of the window")
    axis.set_ylabel("CPU requested by running tasks")
    axis.set_ylim(bottom=0)
    axis.legend()
    return save_figure(figure, path, dpi=DPI)


def _eviction_steps(axis, per_minute: dict, offset_minutes: float = 0.0, labels: bool = True) -> None:
    for side, style in SIDES:
        counts = np.asarray(per_minute[side])
        edges = offset_minutes + np.arange(counts.size + 1)
        axis.stairs(
            counts, edges, linestyle=style, color="C0" if side == "real" else "C1", label=side if labels else None
        )


def _jobs_cdfs(axis, real: pl.DataFrame, simulated: pl.DataFrame, jobs: Sequence[dict], duration: float) -> None:
    """Wait CDFs of ``jobs`` (the report's ``largest_jobs``), one colour per job."""
    per_job = [(job, job_waits(real, job["job"], duration), job_waits(simulated, job["job"], duration)) for job in jobs]
    for index, (job, real_waits, simulated_waits) in enumerate(per_job):
        colour = f"C{index}"
        draw_cdf(axis, real_waits, color=colour, label=f"{job['job']} ({job['tasks']:,})")
        draw_cdf(axis, simulated_waits, color=colour, linestyle="--")
    _wait_axis(axis, _longest(*(w for _, r, s in per_job for w in (r, s))))
    if jobs:  # beside the panel: the curves climb where a legend inside would go
        axis.legend(
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="x-small",
            title="job (tasks)",
            title_fontsize="x-small",
            frameon=False,
        )
    else:
        axis.text(0.5, 0.5, "no job submitted\nin the window", transform=axis.transAxes, ha="center")


def bursts_figure(real: pl.DataFrame, simulated: pl.DataFrame, bursts: dict, duration: float, path: Path) -> Path:
    """Evictions per minute, and the wait CDFs of the window's largest jobs."""
    plt = _pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [1.1, 1]})
    _eviction_steps(left, bursts["evictions_per_minute"])
    left.set_xlabel("minute of the window")
    left.set_ylabel("attempts evicted per minute")
    left.set_xlim(0, max(1, len(bursts["evictions_per_minute"]["real"])))
    left.set_ylim(bottom=0)
    left.legend()
    left.set_title("evictions")
    _jobs_cdfs(right, real, simulated, bursts["largest_jobs"], duration)
    right.set_xlabel("wait (s)")
    right.set_ylabel("share of the job's attempts started")
    right.set_title("largest jobs: real (solid), simulated (dashed)", fontsize="medium")
    return save_figure(figure, path, dpi=DPI)


def draw_figures(
    real: pl.DataFrame, simulated: pl.DataFrame, duration: float, folder: Path, bursts: dict | None = None
) -> list[Path]:
    """One window's figures as PNG files in ``folder``: ``wait_cdf.png``, ``cpu_in_use.png`` and,
    given the report's ``bursts``, ``bursts.png``."""
    paths = [
        wait_cdf_figure(real, simulated, duration, folder / "wait_cdf.png"),
        cpu_figure(real, simulated, duration, folder / "cpu_in_use.png"),
    ]
    if bursts is not None:
        paths.append(bursts_figure(real, simulated, bursts, duration, folder / "bursts.png"))
    return paths


#: A sweep's figure of the largest jobs' waits shows at most this many windows: those whose
#: largest job is largest (the bursts).
SWEEP_PANELS = 24


def sweep_evictions_figure(windows: Sequence[tuple[float, float, dict]], path: Path) -> Path:
    """Evictions per minute over the sweep's span, real and simulated; ``windows`` are (start,
    end, bursts) of the windows replayed, borders dotted."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(10, 3.4))
    for index, (start, end, bursts) in enumerate(windows):
        for side, style in SIDES:
            counts = np.asarray(bursts["evictions_per_minute"][side])
            edges = (start + MINUTE_S * np.arange(counts.size + 1)) / HOUR_S
            colour = "C0" if side == "real" else "C1"
            axis.stairs(counts, edges, linestyle=style, color=colour, label=side if index == 0 else None)
        axis.axvline(start / HOUR_S, color="grey", linestyle=":", linewidth=0.8)
        axis.axvline(end / HOUR_S, color="grey", linestyle=":", linewidth=0.8)
    axis.set_xlabel("hour of the trace (windows dotted)")
    axis.set_ylabel("attempts evicted per minute")
    axis.set_ylim(bottom=0)
    if windows:
        axis.set_xlim(min(w[0] for w in windows) / HOUR_S, max(w[1] for w in windows) / HOUR_S)
        axis.legend()
    else:
        axis.text(0.5, 0.5, "no window replayed", transform=axis.transAxes, ha="center")
    return save_figure(figure, path, dpi=DPI)


def sweep_jobs_figure(panels: Sequence[tuple[float, float, Callable[[], tuple]]], path: Path) -> Path:
    """The largest jobs' wait CDFs, a panel per window: ``panels`` are (start, end, load) where
    ``load()`` gives the window's (real, simulated, bursts) (read only when drawn)."""
    plt = _pyplot()
    columns = max(1, min(2, len(panels)))
    rows = max(1, math.ceil(len(panels) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(6.2 * columns, 3.3 * rows), sharey=True, squeeze=False)
    for axis, (start, end, load) in zip(axes.flat, panels):
        real, simulated, bursts = load()
        _jobs_cdfs(axis, real, simulated, bursts["largest_jobs"], end - start)
        axis.set_title(f"[{start:g}, {end:g}) s", fontsize="medium")
        axis.set_xlabel("wait (s)")
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    for row in axes:
        row[0].set_ylabel("share of the job's\nattempts started")
    figure.suptitle("largest jobs of each window: real (solid), simulated (dashed)", fontsize="medium")
    return save_figure(figure, path, dpi=DPI)
