"""A campaign's figures, as PNG files (matplotlib, no display needed).

- ``energy_vs_waiting.png``: per platform, workload and failures (marker) and policy (colour),
  the mean energy (GJ) against the mean waiting time over the n seeds, with their 95 % bootstrap
  intervals, and each run as a faint dot;
- ``waiting-SCENARIO.png``: the CDFs of the tasks' waiting time and bounded slowdown
  (:mod:`.metrics`), per policy (all replications together);
- ``timeline-SCENARIO.png``: CPU utilization over time per policy (machines allocated, for a
  scheduler without the ledger), then each policy's machines by state (Batsim's machine states,
  sleeping ones Batsim labels idle corrected from the scheduler's log, :mod:`.machine_states`;
  unavailable = machines in none of them), for the first
  replication of each policy;
- ``suspension-SCENARIO.png``: the CDF of the time tasks spent suspended (all replications
  together; a symlog axis, linear below 1 s, shows the suspensions of 0 s, their share in the
  legend), and the number of tasks suspended over time (first replication), per policy (the
  ICCP study's Figures 1 and 2); "n/a" for a scheduler without the ledger.

Runs of different lengths share one time axis, in seconds, hours or days, up to the latest end of
their measurement windows (:func:`common_time_axis`): a long idle tail is left out.

A scenario is a platform, workload and failures combination.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from batsim_google.experiments.machine_states import corrected_machine_states  # noqa: E402
from batsim_google.experiments.metrics import (  # noqa: E402
    SLOWDOWN_BOUND_S,
    bounded_slowdowns,
    cpu_capacity,
    cpu_utilization_over_time,
    machine_utilization_over_time,
    waiting_times,
)
from batsim_google.experiments.outputs import RunOutputs, started_jobs  # noqa: E402
from batsim_google.experiments.suspension import suspended_over_time, suspension_intervals, suspension_per_task  # noqa: E402
from batsim_google.fitting.fit_figures import MARKERS, curve_style, ecdf_points  # noqa: E402
from batsim_google.output_files import output_folder, save_figure  # noqa: E402
from batsim_google.platform.simgrid_xml import compute_hosts  # noqa: E402
from batsim_google.units import DAY, HOUR, WEEK  # noqa: E402

SCENARIO = ["platform", "workload", "failures"]
#: Energy on the axes: joules per gigajoule.
GJ = 1e9
STATES = (
    ("nb_computing", "computing"),
    ("nb_idle", "idle"),
    ("nb_switching_on", "switching on"),
    ("nb_switching_off", "switching off"),
    ("nb_sleeping", "sleeping"),
    ("unavailable", "unavailable"),
)
#: Time axis units: the first whose span limit exceeds the run's length.
TIME_UNITS = ((2 * HOUR, 1.0, "s"), (WEEK, HOUR, "h"), (np.inf, DAY, "days"))


def time_unit(span: float) -> tuple[float, str]:
    return next((scale, name) for limit, scale, name in TIME_UNITS if span <= limit)


def scenario_name(row: dict) -> str:
    return "-".join(str(row[key]) for key in SCENARIO)


def _styles(policies: list[str]) -> dict[str, dict]:
    """Colour and line style per policy (styles differ so that equal curves stay visible)."""
    return {
        policy: {k: v for k, v in curve_style(i).items() if k in ("color", "linestyle")}
        for i, policy in enumerate(policies)
    }


def energy_vs_waiting(path: Path, runs: pl.DataFrame, summary: pl.DataFrame) -> None:
    wide = summary.filter(pl.col("metric").is_in(["energy_j", "mean_waiting_s"])).pivot(
        "metric", index=["platform", "workload", "failures", "policy"], values=["mean", "ci_low", "ci_high", "n"]
    )
    policies = runs["policy"].unique(maintain_order=True).to_list()
    colours = {policy: style["color"] for policy, style in _styles(policies).items()}
    scenarios = runs.select(SCENARIO).unique(maintain_order=True).rows(named=True)
    figure, axes = plt.subplots(figsize=(8, 5.5))
    ended = runs.filter(pl.col("status") != "failed")
    for index, scenario in enumerate(scenarios):
        marker = MARKERS[index % len(MARKERS)]
        for policy in policies:
            match = {**scenario, "policy": policy}
            dots = ended.filter(*[pl.col(k) == v for k, v in match.items()])
            axes.scatter(
                dots["mean_waiting_s"], dots["energy_j"] / GJ, color=colours[policy], marker=marker, alpha=0.25, s=18
            )
            group = wide.filter(*[pl.col(k) == v for k, v in match.items()])
            row = group.row(0, named=True) if group.height else {}
            x, y = row.get("mean_mean_waiting_s"), row.get("mean_energy_j")
            if x is None or y is None:  # no run of the group started a task, or no energy output
                continue
            xerr = [[x - (row["ci_low_mean_waiting_s"] or x)], [(row["ci_high_mean_waiting_s"] or x) - x]]
            yerr = [[(y - (row["ci_low_energy_j"] or y)) / GJ], [((row["ci_high_energy_j"] or y) - y) / GJ]]
            axes.errorbar(
                [x],
                [y / GJ],
                xerr=xerr,
                yerr=yerr,
                color=colours[policy],
                marker=marker,
                markersize=8,
                capsize=3,
                label=f"{policy} ({scenario_name(scenario)}, n = {row['n_energy_j']})",
            )
    axes.set_xlabel("mean waiting time (s)")
    axes.set_ylabel("energy (GJ)")
    axes.set_title("Energy against waiting time: mean and 95 % interval over seeds")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    save_figure(figure, path)


def _first_replications(runs: pl.DataFrame) -> pl.DataFrame:
    """Per policy of a scenario, its run of the smallest seeds."""
    return (
        runs.filter(pl.col("status") != "failed")
        .sort("workload_seed", "failure_seed", nulls_last=True)
        .unique("policy", keep="first", maintain_order=True)
    )


def common_time_axis(runs: pl.DataFrame) -> float:
    """Where the time axis of runs of different lengths ends: the latest end of their measurement
    windows (``window_end_s``; the makespan without a window), so that a run with a long idle tail
    (or Batsim's states after a horizon) does not squeeze the measured span into a sliver."""
    column = "window_end_s" if "window_end_s" in runs.columns else "makespan_s"
    return float(runs[column].max() or runs["makespan_s"].max() or 1.0)


def machine_states_panel(ax, outputs: RunOutputs, machines: int, scale: float) -> None:
    """The run's machines by state over time (time divided by ``scale``), stacked."""
    states = corrected_machine_states(outputs.machine_states(), outputs.sleeping())
    counted = [name for name, _ in STATES[:-1]]
    states = states.with_columns((machines - pl.sum_horizontal(counted)).alias("unavailable"))
    ax.stackplot(
        states["time"] / scale,
        *[states[name] for name, _ in STATES],
        labels=[label for _, label in STATES],
        step="post",
    )
    if states["mislabelled"].max():
        ax.set_title(
            f"up to {states['mislabelled'].max()} machines Batsim labels idle shown asleep (scheduler's log)",
            fontsize=8,
        )
    ax.set_ylim(0, machines)
    ax.legend(fontsize=7, loc="upper right", ncols=3)


def timeline(path: Path, runs: pl.DataFrame, platform_file: Path) -> None:
    """``runs``: one scenario's runs."""
    first = _first_replications(runs)
    capacity, machines = cpu_capacity(platform_file), len(compute_hosts(platform_file))
    styles = _styles(first["policy"].to_list())
    shown_until = common_time_axis(first)
    scale, unit = time_unit(shown_until)
    figure, axes = plt.subplots(1 + first.height, 1, figsize=(9, 2.6 * (1 + first.height)), sharex=True)
    for row in first.iter_rows(named=True):
        outputs = RunOutputs(Path(row["directory"]))
        if outputs.has_ledger():
            usage, label = cpu_utilization_over_time(outputs, capacity), row["policy"]
        else:
            usage, label = machine_utilization_over_time(outputs, machines), f"{row['policy']} (machines allocated)"
        axes[0].step(usage["time"] / scale, usage["value"], where="post", label=label, **styles[row["policy"]])
    axes[0].set_ylabel("CPU utilization")
    axes[0].legend(fontsize=8)
    axes[0].set_title(f"{scenario_name(first.row(0, named=True))}: first replication of each policy")
    for ax, row in zip(axes[1:], first.iter_rows(named=True)):
        machine_states_panel(ax, RunOutputs(Path(row["directory"])), machines, scale)
        ax.set_ylabel(f"machines\n({row['policy']})")
    axes[-1].set_xlabel(f"time ({unit})")
    axes[-1].set_xlim(0, shown_until / scale)
    if "window_start_s" in first.columns and first["window_start_s"].max():
        for ax in axes:  # the warm-up, left out of the metrics
            ax.axvline(float(first["window_start_s"].max()) / scale, color="grey", linestyle=":", linewidth=1)
    save_figure(figure, path)


def waiting(path: Path, runs: pl.DataFrame) -> None:
    """``runs``: one scenario's runs."""
    ended = runs.filter(pl.col("status") != "failed")
    policies = ended["policy"].unique(maintain_order=True).to_list()
    styles = _styles(policies)
    figure, (wait, slow) = plt.subplots(1, 2, figsize=(12, 4.5))
    for policy in policies:
        outputs = [RunOutputs(Path(d)) for d in ended.filter(pl.col("policy") == policy)["directory"]]
        for ax, values in (
            (wait, np.concatenate([waiting_times(o.jobs()).drop_nulls().to_numpy() for o in outputs])),
            (slow, np.concatenate([bounded_slowdowns(o).drop_nulls().to_numpy() for o in outputs])),
        ):
            if values.size == 0:
                ax.plot([], [], label=f"{policy}: no task", **styles[policy])
                continue
            points, shares = ecdf_points(values)
            ax.step(
                points,
                shares,
                where="post",
                label=f"{policy} ({values.size} tasks, {len(outputs)} runs)",
                **styles[policy],
            )
    wait.set_xscale("symlog", linthresh=1.0)
    wait.set_xlabel("waiting time per task (s)")
    wait.set_title("CDF of waiting time (all replications)")
    slow.set_xscale("log")
    slow.set_xlabel(f"bounded slowdown per task (bound {SLOWDOWN_BOUND_S:g} s)")
    slow.set_title("CDF of bounded slowdown (all replications)")
    for ax in (wait, slow):
        ax.set_ylabel("share of tasks")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(figure, path)


def _intervals(directory: str) -> pl.DataFrame:
    outputs = RunOutputs(Path(directory))
    jobs = started_jobs(outputs)
    return suspension_intervals(jobs, outputs.tasks(), float(jobs["finish_time"].max() or 0.0))


def suspension_cdf(ax, totals: np.ndarray, label: str, style: dict) -> None:
    """The CDF of the tasks' times suspended (non-empty ``totals``), from 0: a task evicted and
    restarted at once was suspended 0 s, a point mass drawn as a dot at 0 and counted in the label
    (on a symlog axis, linear below 1 s, so that 0 has a place)."""
    zeros = float(np.mean(totals == 0))
    values, shares = ecdf_points(totals)
    ax.step(
        np.r_[0.0, values],
        np.r_[0.0, shares],
        where="post",
        label=f"{label} ({totals.size} tasks, {zeros:.0%} at 0 s)",
        **style,
    )
    ax.plot([0.0], [zeros], marker="o", color=style["color"], linestyle="none")


def suspension(path: Path, runs: pl.DataFrame) -> None:
    """``runs``: one scenario's runs."""
    ended = runs.filter(pl.col("status") != "failed")
    policies = ended["policy"].unique(maintain_order=True).to_list()
    styles = _styles(policies)
    figure, (cdf, count) = plt.subplots(1, 2, figsize=(12, 4.5))
    with_ledger = [d for d in ended["directory"] if RunOutputs(Path(d)).has_ledger()]
    for policy in policies:
        directories = ended.filter(pl.col("policy") == policy)["directory"].to_list()
        if not set(directories) <= set(with_ledger):
            cdf.plot([], [], label=f"{policy}: n/a (no ledger)", **styles[policy])
            continue
        totals = np.concatenate([suspension_per_task(_intervals(d)).to_numpy() for d in directories])
        if totals.size == 0:
            cdf.plot([], [], label=f"{policy}: no suspension", **styles[policy])
            continue
        suspension_cdf(cdf, totals, policy, styles[policy])
    first = {
        row["policy"]: _intervals(row["directory"])
        for row in _first_replications(ended).iter_rows(named=True)
        if row["directory"] in with_ledger
    }
    last = max((float(intervals["end"].max()) for intervals in first.values() if intervals.height), default=1.0)
    last = min(last, common_time_axis(ended))  # the suspensions, in the measured span
    scale, unit = time_unit(last)
    for policy, intervals in first.items():
        steps = suspended_over_time(intervals)
        count.step(
            np.r_[0.0, steps["time"].to_numpy()] / scale,
            np.r_[0, steps["value"].to_numpy()],
            where="post",
            label=policy,
            **styles[policy],
        )
    cdf.set_xscale("symlog", linthresh=1.0)  # linear below 1 s: suspensions of 0 s are shown
    if any(len(line.get_xdata()) for line in cdf.lines):
        cdf.set_xlim(left=-0.5)
    cdf.set_xlabel("time suspended per task (s)")
    cdf.set_ylabel("share of suspended tasks")
    cdf.set_title("CDF of suspension time (all replications)")
    count.set_xlim(0, last / scale)
    count.set_xlabel(f"time ({unit})")
    count.set_ylabel("tasks suspended")
    count.set_title("Suspended tasks over time (first replication)")
    for ax in (cdf, count):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(figure, path)


def write_plots(output: Path, runs: pl.DataFrame, summary: pl.DataFrame, platform_files: dict[str, Path]) -> list[Path]:
    """All figures of the module in ``output``; ``platform_files``: platform name -> file."""
    output_folder(output)
    written = []
    if {"energy_j", "mean_waiting_s"} <= set(summary["metric"]):  # no energy without Batsim's -E
        written.append(output / "energy_vs_waiting.png")
        energy_vs_waiting(written[0], runs, summary)
    ended = runs.filter(pl.col("status") != "failed")
    for scenario in ended.select(SCENARIO).unique(maintain_order=True).rows(named=True):
        scenario_runs = ended.filter(*[pl.col(k) == v for k, v in scenario.items()])
        name = scenario_name(scenario)
        written.append(output / f"timeline-{name}.png")
        timeline(written[-1], scenario_runs, platform_files[scenario["platform"]])
        written.append(output / f"suspension-{name}.png")
        suspension(written[-1], scenario_runs)
        written.append(output / f"waiting-{name}.png")
        waiting(written[-1], scenario_runs)
    return written
