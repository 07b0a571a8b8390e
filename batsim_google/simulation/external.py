"""Run one simulation with a scheduler of any kind (:mod:`.schedulers`): the built-in one through
:func:`.run.run_google_cell`, the others with the same checks, timeouts and output-folder care.

An incompatible pairing (a scheduler that cannot take failures given failures, a sleeping one on
a platform without sleep states) is refused before launch with the reason, a ParameterError.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from batsim_google.errors import ParameterError
from batsim_google.output_files import locked_folder, output_folder
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.scheduling.ledger_files import SUMMARY
from batsim_google.simulation.progress_bar import ProgressBar
from batsim_google.simulation.run import PROGRESS_FILE, clear_earlier_run, mark_complete, run_google_cell
from batsim_google.simulation.run_inputs import check_run_inputs
from batsim_google.simulation.run_platform import record_platform
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S, OUTPUT_PREFIX, SimulationResult, run_simulation
from batsim_google.simulation.schedulers import REPORTS_PROGRESS, Scheduler, external_simulation, refusal


@dataclass(frozen=True)
class SchedulerRun:
    """The ledger's summary (None for a scheduler without one) and the simulation."""

    summary: dict | None
    simulation: SimulationResult


def check_pairing(
    scheduler: Scheduler, platform: Path, events: list[Path], energy: bool, timeout: float = DEFAULT_TIMEOUT_S
) -> None:
    """Refuse, before launch, a scheduler that cannot run on these inputs (the reason named; a
    user's policy is loaded within ``timeout`` seconds)."""
    reason = refusal(scheduler.needs(timeout), Path(platform), bool(events), energy)
    if reason:
        raise ParameterError(f"{scheduler.kind} scheduler {scheduler.target!r} refused: {reason}")


def run_scheduler(
    scheduler: Scheduler,
    platform: Path,
    workloads: list[Path],
    output: Path,
    *,
    events: list[Path] = (),
    timeout: float = DEFAULT_TIMEOUT_S,
    batsim: str = "batsim",
    energy: bool = True,
    progress: bool = False,
    warn: Callable[[str], None] = warnings.warn,
    batsim_log: str = "warning",
) -> SchedulerRun:
    """Run one simulation with ``scheduler`` (raises SimulationError on failure); ``progress``
    shows a bar for the kinds whose scheduler reports its simulated time (:data:`REPORTS_PROGRESS`)."""
    check_pairing(scheduler, platform, events, energy, timeout)
    if scheduler.kind == "policy":
        run = run_google_cell(
            platform,
            workloads,
            output,
            dict(scheduler.target),
            events=events,
            timeout=timeout,
            batsim=batsim,
            energy=energy,
            progress=progress,
            warn=warn,
            batsim_log=batsim_log,
        )
        return SchedulerRun(run.summary, run.simulation)
    hosts = compute_hosts(platform)
    for warning in check_run_inputs(len(hosts), Path(platform), workloads, events):
        warn(warning)
    inputs = [Path(platform), *map(Path, workloads), *map(Path, events)]
    output = output_folder(output, inputs)
    simulation = external_simulation(
        scheduler,
        platform,
        workloads,
        output,
        events,
        output / PROGRESS_FILE,
        timeout=timeout,
        batsim=batsim,
        energy=energy,
        batsim_log=batsim_log,
    )
    with locked_folder(output):  # a second run into this folder fails at once
        clear_earlier_run(output, inputs)
        record_platform(output, platform, hosts)
        shown = progress and scheduler.kind in REPORTS_PROGRESS
        with ProgressBar(output / PROGRESS_FILE, len(hosts), [Path(w) for w in workloads], shown, batsim=batsim) as bar:
            result = run_simulation(simulation, on_poll=bar.follow)
        summary_path = output / f"{OUTPUT_PREFIX}_{SUMMARY}"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
        mark_complete(output)
    return SchedulerRun(summary, result)
