"""The figures of one run, drawn by ``run`` into its output folder (PNG, matplotlib).

- ``timeline.png``: over a time axis in seconds, hours or days that ends with the measurement
  window (a drain long after it would squeeze the measured span into a sliver; the title says
  when the run went on), with the window's ends dotted: CPU utilization, for any scheduler as the
  ``utilization`` metric counts it, and its mean over the window (the metric); Batsim's power (``-E``: idle,
  sleep and switching power, none of the load's, which the metrics' ``load_energy_j`` adds; from
  ``out_pstate_changes.csv`` when the patched Batsim wrote no ``out_consumed_energy.csv``); the
  machines by state; each task's waiting time at its submission and their median per time slice
  (a gap where a slice holds none);
- ``waiting.png``: the CDFs of the tasks' waiting time and bounded slowdown (the campaign's
  figure, :func:`.figures.waiting`);
- ``suspension.png``, when the ledger counts suspended tasks: the CDF of the time tasks spent
  suspended, its zeros shown, and the tasks suspended over time (:func:`.figures.suspension`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from batsim_google.experiments.figures import (  # noqa: E402
    machine_states_panel,
    suspension,
    time_unit,
    value_scale,
    waiting,
)
from batsim_google.experiments.metrics import allocated_cpu_over_time  # noqa: E402
from batsim_google.experiments.outputs import RunOutputs  # noqa: E402
from batsim_google.experiments.run_tables import RunTables  # noqa: E402
from batsim_google.output_files import save_figure  # noqa: E402
from batsim_google.platform.simgrid_xml import compute_hosts  # noqa: E402
from batsim_google.simulation.run import RUN_FIGURES  # noqa: E402

TIMELINE, WAITING, SUSPENSION = RUN_FIGURES
#: Time slices of the waiting times' median.
WAIT_SLICES = 60
KW = 1e3


def power_over_time(records: pl.DataFrame) -> pl.DataFrame:
    """Watts between Batsim's cumulative energy records (``time``, ``energy``), as a step function
    (``time``, ``value``): constant between two records, the energy's slope."""
    times = np.concatenate([[0.0], records["time"].to_numpy()])
    energy = np.concatenate([[0.0], records["energy"].to_numpy()])
    spans = np.diff(times)
    kept = spans > 0
    watts = np.diff(energy)[kept] / spans[kept]
    return pl.DataFrame({"time": times[:-1][kept], "value": watts})


def sliced_median(times: np.ndarray, values: np.ndarray, end: float, slices: int = WAIT_SLICES) -> tuple:
    """The median of ``values`` per slice of ``[0, end]`` by their ``times``: every slice's middle
    and median, NaN for a slice that holds none (so that a line drawn through them breaks there
    rather than bridging a gap)."""
    edges = np.linspace(0.0, end, slices + 1)
    index = np.clip(np.searchsorted(edges, times, side="right") - 1, 0, slices - 1)
    medians = np.full(slices, np.nan)
    for slice_index in np.unique(index):
        medians[slice_index] = float(np.median(values[index == slice_index]))
    return (edges[:-1] + edges[1:]) / 2, medians


def _time(value: float) -> str:
    """A time in the title: whole numbers with thousands separators, others to 3 digits."""
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:.3g}"


def timeline(path: Path, metrics: dict, platform: Path, tables: RunTables) -> None:
    low, high, makespan = metrics["window_start_s"], metrics["window_end_s"], metrics["makespan_s"]
    shown = high if high > 0 else max(makespan, 1.0)  # a run in which no job ran has an empty window
    hosts = compute_hosts(platform)
    scale, unit = time_unit(shown)
    figure, (usage, power, states, waits) = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
    # the utilization metric's accounting
    steps = allocated_cpu_over_time(tables.outputs, hosts, rows=tables.machine_rows)
    usage.step(steps["time"] / scale, steps["value"], where="post", color="tab:blue")
    if metrics["utilization"] is not None:
        usage.axhline(metrics["utilization"], color="tab:blue", linestyle="--", linewidth=1)
        usage.set_title(f"mean over the window: {metrics['utilization']:.3g}", fontsize=9)
    usage.set_ylabel("CPU utilization")
    usage.set_ylim(bottom=0.0)
    records = tables.outputs.energy_records(hosts, tables.makespan)  # Batsim's, or from its power-state changes
    if records is None or records.height == 0:
        power.text(0.5, 0.5, "energy not measured (run with --energy-outputs)", ha="center", transform=power.transAxes)
        power.set_yticks([])
    else:
        watts = power_over_time(records)
        until = np.r_[watts["time"].to_numpy(), records["time"][-1]]  # the last level holds to the last record
        power.step(
            until / scale, np.r_[watts["value"].to_numpy(), watts["value"][-1]] / KW, where="post", color="tab:red"
        )
        power.set_ylim(0.0, max(float(watts["value"].max()) / KW, 1e-3) * 1.1)
        power.set_title("Batsim's power: idle, sleep and switching (the load adds load_energy_j)", fontsize=9)
    power.set_ylabel("power (kW)")
    machine_states_panel(states, tables.outputs, len(hosts), scale)
    states.set_ylabel("machines")
    submitted, waited = tables.waits["submission_time"].to_numpy(), tables.waits["waiting_time"].to_numpy()
    waits.scatter(submitted / scale, waited, s=8, alpha=0.4, color="tab:grey", label="a task's first wait")
    if submitted.size:
        middles, medians = sliced_median(submitted, waited, shown)
        waits.plot(
            middles / scale,
            medians,
            color="black",
            marker="o",
            markersize=3,
            linewidth=1,
            label="median per time slice",
        )
    if waited.size:
        value_scale(waits, waited, zero=True, axis="y")
    waits.set_ylabel("waiting time (s)")
    waits.set_xlabel(f"time of submission or simulated time ({unit})")
    waits.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for ax in (usage, power, states, waits):
        ax.grid(alpha=0.3)
        for edge in (low, high):
            ax.axvline(edge / scale, color="black", linestyle=":", linewidth=1)
    waits.set_xlim(0, shown / scale)
    went_on = f"; the run went on to {_time(makespan / scale)} {unit} (not shown)" if makespan > high * 1.001 else ""
    figure.suptitle(
        f"Measurement window {_time(low / scale)}-{_time(high / scale)} {unit} (dotted){went_on}", fontsize=11
    )
    save_figure(figure, path)


def write_run_figures(
    outputs: RunOutputs,
    metrics: dict,
    platform: Path,
    workloads: Sequence[Path] = (),
    tables: RunTables | None = None,
) -> list[Path]:
    """Draw the run's figures (see the module) into its folder; the paths written. ``workloads``:
    those the run simulated (the jobs' CPU requests, as the metrics read them); ``tables``: the
    run's (:class:`.run_tables.RunTables`), when its metrics built them."""
    tables = RunTables(outputs, workloads) if tables is None else tables
    directory = Path(outputs.directory)
    written = [directory / TIMELINE, directory / WAITING]
    timeline(written[0], metrics, platform, tables)
    runs = pl.DataFrame(  # a campaign's table of runs, of this one
        {
            "policy": ["this run"],
            "status": ["done"],
            "directory": [str(directory)],
            "workload_seed": [None],
            "failure_seed": [None],
            "window_start_s": [metrics["window_start_s"]],
            "window_end_s": [metrics["window_end_s"]],
        }
    )
    shared = {str(directory): tables}
    waiting(written[1], runs, shared)
    if metrics.get("suspended_tasks"):  # the ledger's, null for other schedulers
        written.append(directory / SUSPENSION)
        suspension(written[-1], runs, shared)
    return written
