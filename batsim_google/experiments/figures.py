"""A campaign's figures, as PNG files (matplotlib, no display needed).

- ``energy_vs_waiting.png``: per platform, workload and failures (marker) and policy (colour),
  the mean energy (GJ, MJ... from 0) against the mean waiting time (a log axis, linear below 1 s) over
  the n seeds, with their 95 % bootstrap intervals, and each run as a faint dot; one legend of
  policies, one of scenarios when there are several;
- ``waiting-SCENARIO.png``: the CDFs of the waiting time and bounded slowdown (:mod:`.metrics`)
  of the tasks submitted in each run's measurement window, as the metrics count them, per policy
  (all replications together);
- ``timeline-SCENARIO.png``: CPU utilization over time per policy (machines allocated, for a
  scheduler without the ledger), then each policy's machines by state (Batsim's machine states,
  sleeping ones Batsim labels idle corrected from the scheduler's log, :mod:`.machine_states`;
  unavailable = machines in none of them), for the first
  replication of each policy;
- ``suspension-SCENARIO.png``: the CDF of the time tasks spent suspended (all replications
  together; a symlog axis, linear below 1 s, shows the suspensions of 0 s, their share in the
  legend), and the number of tasks suspended over time (first replication), per policy (the
  ICCP study's Figures 1 and 2); "n/a" for a scheduler without the ledger.

Axes suit their data (:func:`value_scale`): a log axis where values span more than a decade, a
linear one otherwise, a width around a single value; counts have integer ticks.

Runs of different lengths share one time axis, in seconds, hours or days, up to the latest end of
their measurement windows (:func:`common_time_axis`): a long idle tail is left out.

A scenario is a platform, workload and failures combination.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from batsim_google.experiments.machine_states import corrected_machine_states, step_points  # noqa: E402
from batsim_google.experiments.metrics import (  # noqa: E402
    SLOWDOWN_BOUND_S,
    bounded_slowdowns,
    cpu_capacity,
    cpu_utilization_over_time,
    machine_utilization_over_time,
)
from batsim_google.experiments.outputs import RunOutputs  # noqa: E402
from batsim_google.experiments.run_tables import RunTables  # noqa: E402
from batsim_google.experiments.suspension import suspended_over_time, suspension_per_task  # noqa: E402
from batsim_google.experiments.window import Window, submitted_inside  # noqa: E402
from batsim_google.figure_style import MARKERS, curve_style, ecdf_points  # noqa: E402
from batsim_google.output_files import output_folder, save_figure  # noqa: E402
from batsim_google.platform.simgrid_xml import compute_hosts  # noqa: E402
from batsim_google.units import DAY, HOUR, WEEK  # noqa: E402

SCENARIO = ["platform", "workload", "failures"]
#: Energy on the axes: joules per unit, the first whose figures reach 1.
ENERGY_UNITS = ((1e9, "GJ"), (1e6, "MJ"), (1e3, "kJ"), (1.0, "J"))
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


def energy_unit(largest: float) -> tuple[float, str]:
    """Joules per unit and its name for energies up to ``largest`` J (GJ, MJ, kJ or J)."""
    return next(((size, name) for size, name in ENERGY_UNITS if largest >= size), ENERGY_UNITS[-1])


def plural(count: int, noun: str) -> str:
    """``1 run``, ``2 runs``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def count_axis(axis) -> None:
    """Integer ticks on an axis of counts (tasks, machines): never 0.25 of a task."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


#: Values spanning more than this ratio get a log axis.
DECADE = 10.0


def value_scale(ax, values: np.ndarray, *, zero: bool, axis: str = "x") -> None:
    """Scale and limits of an axis of non-negative ``values`` (e.g. waits, slowdowns): a single
    value gets a width around it (matplotlib would warn of identical limits and draw no tick);
    values spanning more than a decade a log axis (``zero``: they may be 0, so symlog, linear below
    1), others a linear one."""
    set_scale, set_limits = (ax.set_xscale, ax.set_xlim) if axis == "x" else (ax.set_yscale, ax.set_ylim)
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return
    low, high = float(values.min()), float(values.max())
    if high - low <= 1e-9 * max(1.0, abs(high)):
        width = max(abs(high) * 0.1, 1.0)
        set_scale("linear")
        set_limits(max(low - width, 0.0 if low >= 0 else low - width), high + width)
        return
    if zero and high > DECADE:
        set_scale("symlog", linthresh=1.0)
        set_limits(-0.5 if low < 1 else low / 2, high * 2)
    elif not zero and low > 0 and high / low > DECADE:
        set_scale("log")
    else:
        set_scale("linear")


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
    from matplotlib.lines import Line2D

    wide = summary.filter(pl.col("metric").is_in(["energy_j", "mean_waiting_s"])).pivot(
        "metric", index=["platform", "workload", "failures", "policy"], values=["mean", "ci_low", "ci_high", "n"]
    )
    policies = runs["policy"].unique(maintain_order=True).to_list()
    colours = {policy: style["color"] for policy, style in _styles(policies).items()}
    scenarios = runs.select(SCENARIO).unique(maintain_order=True).rows(named=True)
    figure, axes = plt.subplots(figsize=(7, 4.8))
    ended = runs.filter(pl.col("status") != "failed")
    joules, unit = energy_unit(float(ended["energy_j"].max() or 0.0))
    counts, waits, drawn = set(), [], set()
    for index, scenario in enumerate(scenarios):
        marker = MARKERS[index % len(MARKERS)]
        for policy in policies:
            match = {**scenario, "policy": policy}
            dots = ended.filter(*[pl.col(k) == v for k, v in match.items()])
            axes.scatter(
                dots["mean_waiting_s"],
                dots["energy_j"] / joules,
                color=colours[policy],
                marker=marker,
                alpha=0.25,
                s=18,
            )
            waits += dots["mean_waiting_s"].drop_nulls().to_list()
            group = wide.filter(*[pl.col(k) == v for k, v in match.items()])
            row = group.row(0, named=True) if group.height else {}
            x, y = row.get("mean_mean_waiting_s"), row.get("mean_energy_j")
            if x is None or y is None:  # no run of the group started a task, or no energy output
                continue
            counts.add(row["n_energy_j"])
            drawn.add(policy)
            xerr = [[x - (row["ci_low_mean_waiting_s"] or x)], [(row["ci_high_mean_waiting_s"] or x) - x]]
            yerr = [[(y - (row["ci_low_energy_j"] or y)) / joules], [((row["ci_high_energy_j"] or y) - y) / joules]]
            axes.errorbar(
                [x], [y / joules], xerr=xerr, yerr=yerr, color=colours[policy], marker=marker, markersize=8, capsize=3
            )
    # a log axis, linear below 1 s (a mean wait may be 0), from 0; energy from 0
    axes.set_xscale("symlog", linthresh=1.0)
    axes.set_xlim(0.0, max([*waits, 1.0]) * 3)
    axes.set_ylim(bottom=0.0, top=axes.get_ylim()[1] * 1.05)
    axes.set_xlabel("mean waiting time (s)")
    axes.set_ylabel(f"energy ({unit})")
    runs_per_point = (
        plural(min(counts), "run") if len(counts) == 1 else f"{min(counts, default=0)}-{max(counts, default=0)} runs"
    )
    axes.set_title(f"Energy against waiting time: mean and 95 % interval over {runs_per_point} (seeds)", fontsize=10)
    axes.grid(alpha=0.3)
    by_policy = [
        Line2D([], [], color=colours[p], marker="o", linestyle="none", label=p) for p in policies if p in drawn
    ]
    first = axes.legend(
        handles=by_policy, title="policy", fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)
    )
    if len(scenarios) > 1:
        axes.add_artist(first)
        by_scenario = [
            Line2D([], [], color="grey", marker=MARKERS[i % len(MARKERS)], linestyle="none", label=scenario_name(sc))
            for i, sc in enumerate(scenarios)
        ]
        axes.legend(
            handles=by_scenario,
            title="scenario",
            fontsize=8,
            title_fontsize=8,
            loc="lower left",
            bbox_to_anchor=(1.01, 0.0),
        )
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


def machine_states_panel(ax, outputs: RunOutputs, machines: int, scale: float, legend: bool = True) -> None:
    """The run's machines by state over time (time divided by ``scale``), stacked; ``legend``:
    the states' legend beside it (once per figure)."""
    states = corrected_machine_states(outputs.machine_states(), outputs.sleeping())
    counted = [name for name, _ in STATES[:-1]]
    states = states.with_columns((machines - pl.sum_horizontal(counted)).alias("unavailable"))
    drawn = step_points(states, [name for name, _ in STATES])  # the same figure from a fraction of the rows
    ax.stackplot(
        drawn["time"] / scale,
        *[drawn[name] for name, _ in STATES],
        labels=[label for _, label in STATES],
        step="post",
    )
    if states["mislabelled"].max():
        ax.set_title(
            f"up to {states['mislabelled'].max()} machines Batsim labels idle shown asleep (scheduler's log)",
            fontsize=8,
        )
    ax.set_ylim(0, machines)
    count_axis(ax.yaxis)
    if legend:  # beside: the stack fills the panel
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


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
    axes[0].set_ylim(bottom=0.0)
    axes[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[0].set_title(f"{scenario_name(first.row(0, named=True))}: first replication of each policy")
    for index, (ax, row) in enumerate(zip(axes[1:], first.iter_rows(named=True))):
        machine_states_panel(ax, RunOutputs(Path(row["directory"])), machines, scale, legend=index == 0)
        ax.set_ylabel(f"machines\n({row['policy']})")
    axes[-1].set_xlabel(f"time ({unit})")
    axes[-1].set_xlim(0, shown_until / scale)
    if "window_start_s" in first.columns and first["window_start_s"].max():
        for ax in axes:  # the warm-up, left out of the metrics
            ax.axvline(float(first["window_start_s"].max()) / scale, color="black", linestyle=":", linewidth=1)
    save_figure(figure, path)


def measured_waits(outputs: RunOutputs, row: dict, tables: RunTables | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The waiting times and bounded slowdowns of the tasks a run's metrics count: those submitted
    in its measurement window (``row``'s ``window_start_s``, ``window_end_s``; the whole run
    without them), so that a CDF agrees with the summary (warm-start tasks, submitted before the
    warm-up, are left out). ``tables``: the run's, when already built."""
    tables = RunTables(outputs) if tables is None else tables
    low, high = row.get("window_start_s"), row.get("window_end_s")
    if low is None or high is None or not high > low:
        window, waits = None, tables.waits
    else:
        window, waits = Window(low, high), tables.waits.filter(submitted_inside("submission_time", low, high))
    slowdowns = bounded_slowdowns(tables.task_ends, tables.makespan, window)
    return waits["waiting_time"].drop_nulls().to_numpy(), slowdowns.drop_nulls().to_numpy()


def waiting(path: Path, runs: pl.DataFrame, tables: Mapping[str, RunTables] | None = None) -> None:
    """``runs``: one scenario's runs; ``tables``: their tables already built, by directory."""
    ended = runs.filter(pl.col("status") != "failed")
    policies = ended["policy"].unique(maintain_order=True).to_list()
    styles = _styles(policies)
    figure, (wait, slow) = plt.subplots(1, 2, figsize=(11, 4.2))
    shown = {wait: [], slow: []}
    for policy in policies:
        rows = ended.filter(pl.col("policy") == policy).to_dicts()
        measured = [
            measured_waits(RunOutputs(Path(row["directory"])), row, _run_tables(row["directory"], tables))
            for row in rows
        ]
        for ax, values in (
            (wait, np.concatenate([waits for waits, _ in measured])),
            (slow, np.concatenate([slowdowns for _, slowdowns in measured])),
        ):
            if values.size == 0:
                ax.plot([], [], label=f"{policy}: no task", **styles[policy])
                continue
            shown[ax].append(values)
            points, shares = ecdf_points(values)
            ax.step(
                np.r_[points[0], points],
                np.r_[0.0, shares],
                where="post",
                label=f"{policy} ({plural(values.size, 'task')}, {plural(len(rows), 'run')})",
                **styles[policy],
            )
    for ax, zero in ((wait, True), (slow, False)):
        if shown[ax]:
            value_scale(ax, np.concatenate(shown[ax]), zero=zero)
        ax.set_ylim(0.0, 1.02)
    wait.set_xlabel("waiting time per task (s)")
    wait.set_title("CDF of waiting time (tasks submitted in the window)", fontsize=10)
    slow.set_xlabel(f"bounded slowdown per task (bound {SLOWDOWN_BOUND_S:g} s)")
    slow.set_title("CDF of bounded slowdown (tasks submitted in the window)", fontsize=10)
    for ax in (wait, slow):
        ax.set_ylabel("share of tasks")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    save_figure(figure, path)


def _run_tables(directory: str, tables: Mapping[str, RunTables] | None) -> RunTables:
    """A run's tables: those of ``tables`` (by directory) when built already, else new ones."""
    known = (tables or {}).get(directory)
    return RunTables(RunOutputs(Path(directory))) if known is None else known


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
    if zeros:
        ax.plot([0.0], [zeros], marker="o", color=style["color"], linestyle="none")


def suspension(path: Path, runs: pl.DataFrame, tables: Mapping[str, RunTables] | None = None) -> None:
    """``runs``: one scenario's runs; ``tables``: their tables already built, by directory."""
    ended = runs.filter(pl.col("status") != "failed")
    policies = ended["policy"].unique(maintain_order=True).to_list()
    styles = _styles(policies)
    figure, (cdf, count) = plt.subplots(1, 2, figsize=(12, 4.5))
    with_ledger = [d for d in ended["directory"] if RunOutputs(Path(d)).has_ledger()]
    intervals = {directory: _run_tables(directory, tables).intervals for directory in with_ledger}  # once each
    for policy in policies:
        directories = ended.filter(pl.col("policy") == policy)["directory"].to_list()
        if not set(directories) <= set(with_ledger):
            cdf.plot([], [], label=f"{policy}: n/a (no ledger)", **styles[policy])
            continue
        totals = np.concatenate([suspension_per_task(intervals[d]).to_numpy() for d in directories])
        if totals.size == 0:
            cdf.plot([], [], label=f"{policy}: no suspension", **styles[policy])
            continue
        suspension_cdf(cdf, totals, policy, styles[policy])
    first = {
        row["policy"]: intervals[row["directory"]]
        for row in _first_replications(ended).iter_rows(named=True)
        if row["directory"] in with_ledger
    }
    last = common_time_axis(ended)  # the measured span, as the timeline's
    scale, unit = time_unit(last)
    for policy, suspensions in first.items():
        steps = suspended_over_time(suspensions)
        count.step(
            np.r_[0.0, steps["time"].to_numpy()] / scale,
            np.r_[0, steps["value"].to_numpy()],
            where="post",
            label=policy,
            **styles[policy],
        )
    drawn = [line.get_xdata() for line in cdf.lines if len(line.get_xdata())]
    if drawn:  # symlog, linear below 1 s, when they span decades: suspensions of 0 s are shown
        value_scale(cdf, np.concatenate(drawn), zero=True)
    cdf.set_ylim(0.0, 1.02)
    cdf.set_xlabel("time suspended per task (s)")
    cdf.set_ylabel("share of suspended tasks")
    several = ended.height > len(policies)  # replications, or one run per policy
    cdf.set_title("CDF of suspension time" + (" (all replications)" if several else ""))
    count.set_xlim(0, last / scale)
    count.set_xlabel(f"time ({unit})")
    count.set_ylabel("tasks suspended")
    count.set_ylim(0, max(1.0, count.get_ylim()[1]) * 1.08)  # the highest count below the frame
    count_axis(count.yaxis)
    count.set_title("Suspended tasks over time" + (" (first replication)" if several else ""))
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
