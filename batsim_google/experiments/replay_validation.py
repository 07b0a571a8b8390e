"""``validate-replay``: replay a window of the trace and check it against what Borg did.

The window is converted as a faithful replay (:mod:`batsim_google.trace.eviction_chains`) with the
cell's state at its start, on the whole cell or a sampled one; it is run in Batsim with the
Google-cell scheduler, stopped at the window's end (the policy's horizon); both the trace and the
run are reduced to one table of attempts (:mod:`.replay_attempts`) and compared by the same
definitions (:mod:`.replay_fidelity`), bursts included (:mod:`.replay_bursts`). Outputs in the
folder: the workload and platform, the run (``run/``), ``replay_validation.json`` and the figures.
On a sampled cell, the scheduler's passes count the sample's share of Borg's (:func:`sampled_policy`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batsim_google.errors import ParameterError
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.replay_attempts import real_attempts, simulated_attempts
from batsim_google.experiments.replay_bursts import bursts
from batsim_google.experiments.replay_fidelity import (
    BANDS,
    EQUAL_RATES_ALPHA,
    compare,
    eviction_p_values,
    evictions_met,
    targets,
)
from batsim_google.experiments.replay_figures import draw_figures
from batsim_google.output_files import output_folder, write_text
from batsim_google.platform.cell import google_2011_cell
from batsim_google.platform.energy import load_energy_model
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.platform.simgrid_xml import write_platform
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.schedulers import built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings
from batsim_google.trace.convert import Selection, convert_trace
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample
from batsim_google.trace.vocabulary import END_EVENT_NAMES

if TYPE_CHECKING:
    import polars as pl

WORKLOAD = "workload.json"
PLATFORM = "platform.xml"
RUN = "run"
REPORT = "replay_validation.json"
#: The shortest window: CPU in use is compared minute by minute (:func:`.replay_fidelity.cpu_per_minute`).
MIN_WINDOW_S = 60.0
ATTEMPTS = {"real": "real_attempts.parquet", "simulated": "simulated_attempts.parquet"}


@dataclass(frozen=True)
class ReplayWindow:
    """What is replayed: ``[start, end)`` of the trace, on the whole cell or a ``sample`` of its
    machines, the tasks running at the start on the trace's machines or, with ``place_again``,
    placed anew by the scheduler."""

    start: float
    end: float
    sample: MachineSample | None = None
    place_again: bool = False


def window_policy(policy: PolicyConfig, start: float, end: float) -> PolicyConfig:
    """The scheduler's options for the window ``[start, end)``: ``policy`` with the window's length
    as its horizon; a window or options that cannot run are refused (:class:`ParameterError`)."""
    if not 0 <= start < end or not math.isfinite(end):
        raise ParameterError(f"the window must be 0 <= --start < --end, both finite (got {start}, {end})")
    duration = end - start
    if duration < MIN_WINDOW_S:
        raise ParameterError(
            f"the window [--start, --end) must last at least {MIN_WINDOW_S:g} s (got {duration:g} s): CPU in use "
            "is compared minute by minute"
        )
    if policy.horizon not in (0.0, duration):
        raise ParameterError(f"--horizon is the window's length here ({duration:g} s); leave it out")
    return dataclasses.replace(policy, horizon=duration)


def sampled_policy(policy: PolicyConfig, sample: MachineSample | None) -> PolicyConfig:
    """``policy`` for a replay on ``sample``: Borg's passes held the whole cell's tasks, a sampled
    replay's hold the sample's fraction of them, so the pass's counts (``pass_tasks``, ``pass_rate``)
    scale by that fraction and a replayed pass waits as the whole cell's pass it stands for did."""
    if sample is None:
        return policy
    return dataclasses.replace(
        policy,
        pass_tasks=round(policy.pass_tasks * sample.fraction),
        pass_rate=policy.pass_rate * sample.fraction,
    )


def simulate(
    policy: PolicyConfig, platform: Path, workload: Path, folder: Path, settings: SimulationSettings
) -> tuple[pl.DataFrame, dict]:
    """Run ``workload`` on ``platform`` in ``folder`` with the built-in scheduler (``settings``,
    Batsim's energy plugin off); the run's attempts and the scheduler's summary."""
    quiet = dataclasses.replace(settings, energy_outputs=False, say=lambda line: None)
    run = run_scheduler(built_in(policy), RunInputs(platform, [workload]), folder, quiet)
    return simulated_attempts(RunOutputs(folder), workload), run.summary


def validate_replay(
    trace: Path,
    window: ReplayWindow,
    output: Path,
    policy: PolicyConfig = PolicyConfig(),
    *,
    settings: SimulationSettings = SimulationSettings(),
    workers: int = 1,
    say: Callable[[str], None] = lambda line: None,
) -> dict:
    """Convert, run (with ``settings``, Batsim's energy plugin off), compare; returns the report
    (also written as ``replay_validation.json``)."""
    start, end, sample = window.start, window.end, window.sample
    policy = sampled_policy(window_policy(policy, start, end), sample)  # checked before anything runs
    output = output_folder(output)
    duration = end - start
    machines = GOOGLE_2011_MACHINES if sample is None else sample.machines
    selection = Selection(
        start=start,
        end=end,
        end_events=END_EVENT_NAMES,
        initial_state=True,
        sample=sample,
        faithful=True,
        pin_running=not window.place_again,
    )
    workload, platform = output / WORKLOAD, output / PLATFORM
    jobs = convert_trace([trace], workload, selection, RowAccount(), nb_res=machines, workers=workers)
    say(f"wrote {jobs.written} jobs to {workload} ({jobs.summary('attempt')})")
    write_platform(platform, google_2011_cell(None if sample is None else machines), load_energy_model())
    simulated, summary = simulate(policy, platform, workload, output / RUN, settings)
    say(f"simulated {summary['submitted']} tasks ({'balanced' if summary['balanced'] else 'NOT balanced'})")
    real = real_attempts([trace], start, end, RowAccount(), sample=sample, workers=workers)
    for name, table in (("real", real), ("simulated", simulated)):
        table.write_parquet(output / ATTEMPTS[name])
    report = {
        **compare(real, simulated, duration),
        "window": {"start": start, "end": end},
        "cell": {"machines": machines, "sampled": sample is not None, "seed": sample.seed if sample else None},
        "policy": dataclasses.asdict(policy),
        "initial_running_placed": "again" if window.place_again else "on the trace's machines",
        "bursts": bursts(real, simulated, duration),
    }
    report["eviction_p_values"] = eviction_p_values(report)
    report["targets"] = targets(report)
    write_text(output / REPORT, json.dumps(report, indent=1) + "\n")
    for path in draw_figures(real, simulated, duration, output, report["bursts"]):
        say(f"wrote {path}")
    return report


def report_lines(report: dict) -> Iterable[str]:
    """The report as a table: per band, real against simulated; the evictions' counts where the
    rates are not within 2x, with their equal-rates test; the bursts."""
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
    yield from _eviction_tests(report)
    yield from _burst_lines(report.get("bursts"))
    missed = [
        f"{group} {name}" for group, met in report.get("targets", {}).items() for name, ok in met.items() if not ok
    ]
    yield "targets (groups of 100 real tasks or more): " + ("all met" if not missed else "missed: " + ", ".join(missed))


def _eviction_tests(report: dict) -> Iterable[str]:
    """Per group held to the targets whose eviction rates are not within 2x: the counts behind
    them and whether equal rates explain them (the target's rule)."""
    for group, p_value in report.get("eviction_p_values", {}).items():
        real, simulated = (report["bands"][group][side] for side in ("real", "simulated"))
        if evictions_met(real, simulated, None):
            continue
        verdict = (
            "no test"
            if p_value is None
            else f"p = {p_value:.2f}, "
            + ("met: equal rates explain them" if p_value >= EQUAL_RATES_ALPHA else "missed")
        )
        yield (
            f"  {group} evictions, rates not within 2x; counts behind them: real {real['evictions']} in "
            f"{real['task_hours']:,.1f} task-hours, simulated {simulated['evictions']} in "
            f"{simulated['task_hours']:,.1f}; at equal rates, counts this far apart: {verdict}"
        )


def _burst_lines(bursts: dict | None) -> Iterable[str]:
    if not bursts:
        return
    per_minute = bursts["evictions_per_minute"]
    sides = []
    for side in ("real", "simulated"):
        counts = per_minute[side]
        peak = max(range(len(counts)), key=counts.__getitem__) if counts else None
        sides.append("-" if peak is None else f"{sum(counts):,} in all, peak {counts[peak]:,} in minute {peak}")
    yield f"evictions per minute, real: {sides[0]}; simulated: {sides[1]}"
    if not bursts["largest_jobs"]:
        return
    yield "largest jobs (tasks submitted in the window), real / simulated:"
    yield "  job            group       tasks   median wait        p90 wait           never started"
    for job in bursts["largest_jobs"]:
        real, simulated = job["real"], job["simulated"]
        yield (
            f"  {job['job']:<14} {job['group'] or '-':<10} {job['tasks']:>6}"
            f"   {_fmt(real['median_wait_s'], 's') + ' / ' + _fmt(simulated['median_wait_s'], 's'):<17}"
            f"  {_fmt(real['p90_wait_s'], 's') + ' / ' + _fmt(simulated['p90_wait_s'], 's'):<17}"
            f"  {real['never_started']} / {simulated['never_started']}"
        )


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "%":
        return f"{100 * value:.1f} %"
    if unit == "x":
        return f"{value:.3f}"
    return f"{value:.1f}{' ' + unit if unit else ''}"
