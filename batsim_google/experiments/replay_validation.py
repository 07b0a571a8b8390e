"""``validate-replay``: replay a window of the trace and check it against what Borg did.

The window is converted as a faithful replay (:mod:`batsim_google.trace.eviction_chains`) with the
cell's state at its start, on the whole cell or a sampled one; it is run in Batsim with the
Google-cell scheduler, stopped at the window's end (the policy's horizon); both the trace and the
run are reduced to one table of attempts (:mod:`.replay_attempts`) and compared by the same
definitions (:mod:`.replay_fidelity`). Outputs in the folder: the workload and platform, the run
(``run/``), ``replay_validation.json`` and the figures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from batsim_google.errors import ParameterError
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.replay_attempts import real_attempts, simulated_attempts
from batsim_google.experiments.replay_fidelity import BANDS, compare, cpu_per_minute, equal_rates_p_value, targets
from batsim_google.output_files import output_folder, save_figure, write_text
from batsim_google.platform.cell import google_2011_cell
from batsim_google.platform.energy import load_energy_model
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.platform.simgrid_xml import write_platform
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S
from batsim_google.trace.convert import Selection, convert_trace
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample
from batsim_google.trace.vocabulary import END_EVENT_NAMES

WORKLOAD = "workload.json"
PLATFORM = "platform.xml"
RUN = "run"
REPORT = "replay_validation.json"
#: The shortest window: CPU in use is compared minute by minute (:func:`.replay_fidelity.cpu_per_minute`).
MIN_WINDOW_S = 60.0
ATTEMPTS = {"real": "real_attempts.parquet", "simulated": "simulated_attempts.parquet"}


def validate_replay(
    trace: Path,
    start: float,
    end: float,
    output: Path,
    policy: dict,
    *,
    sample_cell: int | None = None,
    seed: int = 0,
    place_again: bool = False,
    batsim: str = "batsim",
    timeout: float = DEFAULT_TIMEOUT_S,
    workers: int = 1,
    progress: bool = False,
    say: Callable[[str], None] = lambda line: None,
) -> dict:
    """Convert, run, compare; returns the report (also written as ``replay_validation.json``)."""
    from batsim_google.simulation.run import run_google_cell

    if not 0 <= start < end or not math.isfinite(end):
        raise ParameterError(f"the window must be 0 <= --start < --end, both finite (got {start}, {end})")
    if end - start < MIN_WINDOW_S:
        raise ParameterError(
            f"the window [--start, --end) must last at least {MIN_WINDOW_S:g} s (got {end - start:g} s): CPU in use "
            "is compared minute by minute"
        )
    output = output_folder(output)
    duration = end - start
    if policy.get("horizon", 0.0) not in (0.0, duration):
        raise ParameterError(f"--horizon is the window's length here ({duration:g} s); leave it out")
    policy = {**policy, "horizon": duration}
    PolicyConfig(**policy)  # checked before anything runs
    sample = None if sample_cell is None else MachineSample(sample_cell, seed)
    machines = GOOGLE_2011_MACHINES if sample is None else sample.machines
    selection = Selection(
        start=start,
        end=end,
        end_events=END_EVENT_NAMES,
        initial_state=True,
        sample=sample,
        faithful=True,
        pin_running=not place_again,
    )
    workload, platform = output / WORKLOAD, output / PLATFORM
    jobs = convert_trace([trace], workload, selection, RowAccount(), nb_res=machines, workers=workers)
    say(f"wrote {jobs.written} jobs to {workload} ({jobs.summary('attempt')})")
    write_platform(platform, google_2011_cell(None if sample is None else machines), load_energy_model())
    run = run_google_cell(
        platform, [workload], output / RUN, policy, timeout=timeout, batsim=batsim, energy=False, progress=progress
    )
    say(f"simulated {run.summary['submitted']} tasks ({'balanced' if run.summary['balanced'] else 'NOT balanced'})")
    real = real_attempts([trace], start, end, RowAccount(), sample=sample, workers=workers)
    simulated = simulated_attempts(RunOutputs(output / RUN), workload)
    for name, table in (("real", real), ("simulated", simulated)):
        table.write_parquet(output / ATTEMPTS[name])
    report = {
        **compare(real, simulated, duration),
        "window": {"start": start, "end": end},
        "cell": {"machines": machines, "sampled": sample is not None, "seed": seed if sample else None},
        "policy": policy,
        "initial_running_placed": "again" if place_again else "on the trace's machines",
    }
    report["targets"] = targets(report)
    write_text(output / REPORT, json.dumps(report, indent=1) + "\n")
    for path in draw_figures(real, simulated, duration, output):
        say(f"wrote {path}")
    return report


def report_lines(report: dict) -> Iterable[str]:
    """The report as a table: per band, real against simulated."""
    header = "band         side       tasks  median wait  p90 wait  started<=60s  evictions/1000 h  never started"
    yield header
    for band in BANDS:
        for side in ("real", "simulated"):
            f = report["bands"][band][side]
            yield (
                f"{band if side == 'real' else '':<12} {side:<9} {f['tasks']:>6}  {_fmt(f['median_wait_s'], 's'):>11}"
                f"  {_fmt(f['p90_wait_s'], 's'):>8}  {_fmt(f['share_started_60s'], '%'):>12}"
                f"  {_fmt(f['evictions_per_1000_task_hours'], ''):>16}  {f['never_started']:>13}"
            )
    cpu = report["cpu_in_use"]
    yield (
        f"CPU in use, simulated / real: mean {_fmt(cpu['mean_ratio'], 'x')}, "
        f"worst minute {_fmt(cpu['worst_ratio'], 'x')}"
    )
    missed = [
        f"{group} {name}" for group, met in report.get("targets", {}).items() for name, ok in met.items() if not ok
    ]
    yield "targets (groups of 100 real tasks or more): " + ("all met" if not missed else "missed: " + ", ".join(missed))
    for group, met in report.get("targets", {}).items():
        if met.get("evictions") is False:
            real, simulated = (report["bands"][group][side] for side in ("real", "simulated"))
            p_value = equal_rates_p_value(real, simulated)
            yield (
                f"  {group} evictions, counts behind the rates: real {real['evictions']} in "
                f"{real['task_hours']:,.1f} task-hours, simulated {simulated['evictions']} in "
                f"{simulated['task_hours']:,.1f}"
                + ("" if p_value is None else f"; at equal rates, counts this far apart: p = {p_value:.2f}")
            )


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "%":
        return f"{100 * value:.1f} %"
    if unit == "x":
        return f"{value:.3f}"
    return f"{value:.1f}{' ' + unit if unit else ''}"


def draw_figures(real: pl.DataFrame, simulated: pl.DataFrame, duration: float, folder: Path) -> list[Path]:
    """Wait CDFs per band and CPU in use per minute, real and simulated, as PNG files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    paths = []
    figure, axes = plt.subplots(1, len(BANDS), figsize=(4 * len(BANDS), 3.4), sharey=True)
    for axis, band in zip(axes, BANDS):
        for name, table, style in (("real", real, "-"), ("simulated", simulated, "--")):
            rows = table if band == "all" else table.filter(pl.col("group") == band)
            rows = rows.filter((pl.col("submit") >= 0) & (pl.col("submit") < duration))
            waits = np.sort((rows["start"] - rows["submit"]).fill_null(math.inf).to_numpy())
            if waits.size:
                shown = np.clip(waits, 0.1, None)
                axis.step(shown, np.arange(1, waits.size + 1) / waits.size, style, where="post", label=name)
        axis.set_xscale("log")
        axis.set_title(band)
        axis.set_xlabel("wait (s)")
    axes[0].set_ylabel("share of attempts started")
    axes[0].legend()
    paths.append(save_figure(figure, folder / "wait_cdf.png", dpi=100))
    figure, axis = plt.subplots(figsize=(7, 3.4))
    for name, table, style in (("real", real, "-"), ("simulated", simulated, "--")):
        cpu = cpu_per_minute(table, duration)
        axis.plot(np.arange(cpu.size) + 0.5, cpu, style, label=name)
    axis.set_xlabel("minute of the window")
    axis.set_ylabel("CPU requested by running tasks")
    axis.set_ylim(bottom=0)
    axis.legend()
    paths.append(save_figure(figure, folder / "cpu_in_use.png", dpi=100))
    return paths
