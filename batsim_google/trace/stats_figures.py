"""PNG analogues of the model paper's Figs. 3, 5, 6, 7 and 8, drawn from :class:`TraceStats`."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from batsim_google.output_files import output_folder, save_figure  # noqa: E402
from batsim_google.trace.stats import LogHistogram, TraceStats  # noqa: E402
from batsim_google.units import HOUR  # noqa: E402


def _cdf(path: Path, curves: list[tuple[str, LogHistogram]], xlabel: str, title: str, zeros_note: str = "") -> Path:
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for label, histogram in curves:
        x, y = histogram.cdf()
        if len(x):  # from the zeros' share (left of the log axis) up: a single value is a visible step
            start = histogram.zeros / max(histogram.total, 1)
            axes.step(np.r_[x[0], x], np.r_[start, y], where="post", label=label)
    axes.set_xscale("log")
    axes.set_ylim(0, 1.02)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("cumulative fraction")
    axes.set_title(title + zeros_note, fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    save_figure(figure, path)
    return path


def _running(path: Path, stats: TraceStats, end: str, title: str) -> Path:
    times, running = stats.running_series(end)
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    axes.plot(times / HOUR, running, linewidth=0.8)
    axes.set_xlabel("time since the start of the trace window (h)")
    axes.set_ylabel("running tasks")
    axes.set_title(title, fontsize=10)
    axes.grid(True, alpha=0.3)
    save_figure(figure, path)
    return path


def draw_figures(stats: TraceStats, folder: str | Path) -> list[Path]:
    """Write the five figures into ``folder``; return their paths."""
    folder = output_folder(folder)
    arrivals = stats.interarrival_histogram
    note = f"\n({arrivals.zeros} of {arrivals.total} gaps are 0, left of the log axis)" if arrivals.zeros else ""
    paths = [
        _cdf(
            folder / "fig3_interarrival_cdf.png",
            [(f"submissions ({arrivals.total:,} gaps)", arrivals)],
            "time between consecutive submissions (s)",
            "Inter-arrival times (Fig. 3)",
            note,
        ),
        _running(folder / "fig5_running_finish.png", stats, "finish", "Running tasks that end with Finish (Fig. 5)"),
        _running(folder / "fig6_running_kill.png", stats, "kill", "Running tasks that end with Kill (Fig. 6)"),
    ]
    for number, end in ((7, "finish"), (8, "kill")):
        histograms = stats.makespans[end].histograms
        curves = [
            (f"{group} ({histograms[group].total:,} tasks)", histograms[group])
            for group in ("all", "free", "normal", "production")
            if histograms[group].total
        ]
        paths.append(
            _cdf(
                folder / f"fig{number}_makespan_{end}_cdf.png",
                curves,
                "makespan (s)",
                f"Makespan of three-event tasks ended by {end.capitalize()} (Fig. {number})",
            )
        )
    return paths
