"""Figures of a fit, as PNG files (matplotlib, no display needed).

- ``makespan_<class>.png``, ``makespan_<class>_width_<group>.png`` (parallel jobs, makespan laws
  per group of widths) and ``interarrival.png``: the empirical distribution function against
  every fitted law's, on a log time axis (like the model paper's Figs. 3, 7 and 8); none for a
  censored fit's resident class, whose sample is residual lives;
- ``elbow.png``: inertia and mean distance to the closest centroid for each k (its Fig. 12);
- ``silhouette.png``: silhouettes of a sample of tasks per cluster (its Figs. 11 and 13);
- ``arrival_profile.png``: the normalized arrival rate over the period;
- ``hourly_rates.png`` (job-level arrivals, with the fidelity check): tasks submitted per hour,
  input and generated (the mean of several draws, with one draw's spread), on one plot;
- ``load.png`` (censored fits): requested CPU and memory of the running tasks over the input's span,
  input and generated (the warm start at 0, then the arrivals).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from batsim_google.figure_style import curve_style, ecdf_points  # noqa: E402
from batsim_google.fitting.fidelity import Fidelity  # noqa: E402
from batsim_google.fitting.job_fidelity import JobFidelity  # noqa: E402
from batsim_google.fitting.kmeans import feature_names  # noqa: E402
from batsim_google.fitting.load_fidelity import LoadFidelity  # noqa: E402
from batsim_google.fitting.model_fit import ModelFit  # noqa: E402
from batsim_google.fitting.select import LawFit  # noqa: E402
from batsim_google.model.widths import group_names  # noqa: E402
from batsim_google.output_files import output_folder, save_figure  # noqa: E402
from batsim_google.units import HOUR  # noqa: E402


def _cdf_figure(path: Path, sample: np.ndarray, fits: list[LawFit], best: LawFit, title: str, unit: str) -> None:
    values, shares = ecdf_points(sample)
    grid = np.geomspace(values[0], values[-1], 400)
    figure, axes = plt.subplots(figsize=(10, 5))
    axes.step(
        np.r_[values[0], values], np.r_[0.0, shares], where="post", color="black", linewidth=2.2, label="empirical"
    )
    for index, fit in enumerate(fit for fit in fits if fit.law is not None):
        style = {"linewidth": 2.0} if fit is best else {"linewidth": 1.0, "alpha": 0.8}
        best_mark = ", best" if fit is best else ""
        axes.plot(
            grid, fit.law.cdf(grid), label=f"{fit.method} (KS {fit.ks:.3f}{best_mark})", **curve_style(index), **style
        )
    axes.set_xscale("log")
    axes.set_ylim(0, 1.02)
    axes.set_xlabel(f"{unit} (log scale)")
    axes.set_ylabel("cumulative probability")
    axes.set_title(title)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside: the curves fill the frame
    axes.grid(True, which="both", alpha=0.3)
    save_figure(figure, path, dpi=100)


def _elbow(path: Path, fit: ModelFit) -> None:
    ks = [s.k for s in fit.elbow]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.plot(ks, [s.inertia for s in fit.elbow], "o-", label="inertia")
    axes.set_xlabel("k (clusters)")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel("inertia (sum of squared distances)")
    other = axes.twinx()
    other.plot(
        ks, [s.mean_distance for s in fit.elbow], "s--", color="tab:orange", label="mean distance to closest centroid"
    )
    other.set_ylabel("mean distance to closest centroid")
    axes.set_title(f"k-means on standardized {', '.join(feature_names(fit.table))}")
    handles = axes.get_legend_handles_labels()[0] + other.get_legend_handles_labels()[0]
    axes.legend(handles=handles, loc="upper right", fontsize=8)
    save_figure(figure, path, dpi=100)


def _silhouette(path: Path, fit: ModelFit) -> None:
    clustering = fit.clustering
    figure, axes = plt.subplots(figsize=(7, 6))
    bottom = 0
    for label in range(clustering.k):
        values = np.sort(clustering.sample_silhouettes[clustering.sample_labels == label])
        axes.fill_betweenx(np.arange(bottom, bottom + len(values)), 0, values, alpha=0.7)
        axes.text(-0.05, bottom + len(values) / 2, str(label), ha="right", va="center")
        bottom += len(values) + 10
    axes.axvline(clustering.silhouette, color="red", linestyle="--", label=f"mean {clustering.silhouette:.2f}")
    axes.set_xlim(-1, 1)
    axes.set_yticks([])
    axes.set_xlabel("silhouette")
    axes.set_ylabel("cluster (tasks of the sample)")
    axes.set_title(f"Silhouettes of a {clustering.k}-clustering ({len(clustering.sample_labels)} tasks sampled)")
    axes.legend()
    save_figure(figure, path, dpi=100)


def _profile(path: Path, fit: ModelFit) -> None:
    profile = fit.arrivals.profile
    rates = np.asarray(profile.profile.rates)
    hours = np.arange(len(rates) + 1) * profile.profile.bin_width / HOUR
    figure, axes = plt.subplots(figsize=(10, 4))
    axes.stairs(rates, hours, fill=True, alpha=0.4, label="normalized arrival rate")
    if profile.covered_bins < len(rates):
        unseen = np.where(profile.exposure > 0, np.nan, rates)
        axes.stairs(unseen, hours, color="grey", hatch="//", label="not observed (mean rate)")
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xlabel("hours from the start of the period")
    axes.set_ylabel("rate / mean rate")
    axes.set_xticks(np.arange(0, hours[-1] + 1, 24 if hours[-1] > 24 else 2))
    axes.set_title(f"Arrival-rate profile ({len(rates)} bins of {profile.profile.bin_width / 60:g} min)")
    axes.legend(fontsize=8)
    save_figure(figure, path, dpi=100)


def _hourly_rates(path: Path, jobs: JobFidelity) -> None:
    hours = np.arange(len(jobs.original_hourly) + 1)
    figure, axes = plt.subplots(figsize=(10, 4))
    axes.stairs(jobs.original_hourly, hours, label="input", linewidth=1.5)
    mean, sd = np.array(jobs.generated_hourly), np.array(jobs.generated_hourly_sd)
    axes.stairs(mean, hours, label=f"generated, mean of {jobs.hourly_draws} draws", linestyle="--", linewidth=1.5)
    axes.stairs(mean + sd, hours, baseline=np.maximum(mean - sd, 0.0), fill=True, alpha=0.2, label="one draw, +/- 1 sd")
    axes.set_xlabel("hours from the input's start")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel("tasks submitted per hour")
    axes.set_ylim(bottom=0)
    axes.set_title("Hourly submission rate, input and generated")
    axes.legend(fontsize=8)
    save_figure(figure, path, dpi=100)


def _load(path: Path, load: LoadFidelity) -> None:
    hours = load.input.times / HOUR
    figure, panels = plt.subplots(1, 2, figsize=(12, 4))
    for axes, resource, given, generated in (
        (panels[0], "CPU", load.input.cpu, load.generated.cpu),
        (panels[1], "memory", load.input.memory, load.generated.memory),
    ):
        axes.plot(hours, given, label="input", linewidth=1.5)
        axes.plot(hours, generated, label=f"generated (warm start on {load.machines:,} machines)", linestyle="--")
        axes.set_xlabel("hours from the input's start")
        axes.set_ylabel(f"requested {resource} of the running tasks\n(in largest machines)")
        axes.set_ylim(bottom=0)
        axes.set_title(f"Requested {resource}")
        axes.legend(fontsize=8)
    save_figure(figure, path, dpi=100)


def write_plots(
    folder: str | Path, fit: ModelFit, fidelity: Fidelity | None = None, load: LoadFidelity | None = None
) -> list[Path]:
    """Write the figures of ``fit`` (and of its ``fidelity`` check and requested ``load``, when
    given) into ``folder`` (created if needed); return their paths."""
    folder = output_folder(folder)
    written = []
    frame = fit.table.frame.filter(fit.table.frame["makespan"].is_not_null())  # lifetimes only
    for c in fit.classes:
        path = folder / f"makespan_{c.name}.png"
        sample = frame.filter(frame["class"] == c.name)["makespan"].to_numpy()
        if not len(sample):  # the resident class: residual lives, not in the table (nor lifetimes)
            continue
        _cdf_figure(path, sample, c.fits, c.best, f"Makespans of {c.name} ({c.tasks} tasks)", "makespan, s")
        written.append(path)
        if c.widths is not None and c.widths.groups:
            rows = frame.filter(frame["class"] == c.name)
            groups = group_names(rows["width"].to_numpy(), c.widths.grouping)
            for group in c.widths.groups:
                path = folder / f"makespan_{c.name}_width_{group.name}.png"
                title = f"Makespans of {c.name}, widths {group.name} ({group.tasks} tasks)"
                _cdf_figure(
                    path,
                    rows["makespan"].to_numpy()[groups == group.name],
                    group.fits,
                    group.best,
                    title,
                    "makespan, s",
                )
                written.append(path)
    profile = fit.arrivals.profile
    path = folder / "interarrival.png"
    unit = "inter-arrival time, s" + (" (normalized time)" if profile is not None else "")
    _cdf_figure(path, fit.arrivals.sample, fit.arrivals.fits, fit.arrivals.best, "Inter-arrival times", unit)
    written.append(path)
    if fit.elbow is not None:
        written += [folder / "elbow.png", folder / "silhouette.png"]
        _elbow(written[-2], fit)
        _silhouette(written[-1], fit)
    if profile is not None:
        written.append(folder / "arrival_profile.png")
        _profile(written[-1], fit)
    if fidelity is not None and fidelity.jobs is not None and fidelity.jobs.original_hourly:
        written.append(folder / "hourly_rates.png")
        _hourly_rates(written[-1], fidelity.jobs)
    if load is not None:
        written.append(folder / "load.png")
        _load(written[-1], load)
    return written
