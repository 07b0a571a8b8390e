"""``batsim-google run``: Batsim and the Google-cell scheduler together, with a progress bar.

The scheduler writes the simulated time it reached to a small file; the progress bar follows it.
After the run, the scheduler's accounting summary tells whether every task ended exactly once.
The scheduler runs through pybatsim (all features) or batsim-py (what it can do with Batsim 4.2.1,
see :mod:`batsim_google.simulation.batsimpy_frontend`).

An output folder that holds an earlier run's files is cleared of them first (only of the files a
run writes, by name, its metrics included), so that no stale file is read as this run's; the file
:data:`INCOMPLETE` then marks the folder until the simulation has ended well, so that an
interrupted or failed run is never read as a complete one (the metrics refuse such a folder).
The folder is locked while the run writes it (:func:`~batsim_google.output_files.locked_folder`),
and the run records its platform there (:mod:`.run_platform`), against which its metrics are checked.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from batsim_google.errors import ParameterError, SimulationError
from batsim_google.output_files import locked_folder, output_folder, refuse_inputs, write_text
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.scheduling.ledger_files import SUMMARY
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation import googleCell
from batsim_google.simulation.frontend import require_sleep_pstates
from batsim_google.simulation.progress_bar import ProgressBar
from batsim_google.simulation.run_inputs import check_run_inputs
from batsim_google.simulation.run_platform import PLATFORM_RECORD, record_platform
from batsim_google.simulation.runner import (
    BATSIM,
    DEFAULT_TIMEOUT_S,
    FRONTENDS,
    GOOGLE_CELL_BATSIM_OPTIONS,
    OUTPUT_PREFIX,
    PEAK_RSS_FILE,
    SCHEDULER,
    Simulation,
    SimulationResult,
    pybatsim_scheduler,
    run_batsim_launcher,
    run_simulation,
)

PROGRESS_FILE = "progress.txt"
#: Present in a run's folder while its files are not those of a run that ended well.
INCOMPLETE = "INCOMPLETE"
#: The metrics ``run`` writes beside the outputs once the simulation ended.
METRICS_FILE = "metrics.json"
#: The process that runs the scheduler and, inside it, Batsim, with the batsim-py front-end.
BATSIM_PY = "batsim-py"
#: Files of a run besides Batsim's and the scheduler's ``OUTPUT_PREFIX_*``.
RUN_FILES = (
    PROGRESS_FILE,
    PEAK_RSS_FILE,
    METRICS_FILE,
    INCOMPLETE,
    PLATFORM_RECORD,
    *(f"{name}.log" for name in (BATSIM, SCHEDULER, BATSIM_PY)),
)
#: The figures ``run`` draws beside its outputs (:mod:`batsim_google.experiments.run_figures`),
#: an earlier run's cleared like its files.
RUN_FIGURES = ("timeline.png", "waiting.png", "suspension.png")


def earlier_run_files(output: Path) -> list[Path]:
    """The files an earlier run left in ``output``: those a run writes, by name; no other file."""
    if not output.is_dir():
        return []
    return sorted(
        path
        for path in output.iterdir()
        if path.is_file() and (path.name.startswith(f"{OUTPUT_PREFIX}_") or path.name in RUN_FILES + RUN_FIGURES)
    )


def clear_earlier_run(output: Path, inputs: list[Path]) -> None:
    """Remove an earlier run's files from ``output``; refuse if one of them is an input."""
    stale = earlier_run_files(output)
    for path in stale:
        refuse_inputs(path, inputs)
    for path in stale:
        path.unlink()
    write_text(
        output / INCOMPLETE, "A run is under way here, or was interrupted or failed: these files are not complete.\n"
    )


def mark_complete(output: Path) -> None:
    """The run in ``output`` ended well: its files are complete (see :data:`INCOMPLETE`)."""
    (output / INCOMPLETE).unlink(missing_ok=True)


@dataclass(frozen=True)
class GoogleCellRun:
    """The scheduler's accounting summary and the simulation's wall time and memory."""

    summary: dict
    simulation: SimulationResult


def run_google_cell(
    platform: Path,
    workloads: list[Path],
    output: Path,
    policy: dict,
    *,
    events: list[Path] = (),
    timeout: float = DEFAULT_TIMEOUT_S,
    batsim: str = "batsim",
    energy: bool = True,
    progress: bool = False,
    frontend: str = "pybatsim",
    warn: Callable[[str], None] = warnings.warn,
    batsim_log: str = "warning",
) -> GoogleCellRun:
    """Run one simulation (raises SimulationError on failure); ``energy``: Batsim's ``-E``
    (batsim-py always passes it); ``batsim_log``: Batsim's log level (pybatsim front-end).

    Inputs that do not fit together are refused before anything starts (an InputFileError naming
    the file and line, :mod:`batsim_google.simulation.run_inputs`); a workload made for another
    machine count is only reported to ``warn``, since Batsim runs it.

    With ``frontend="batsim-py"``, what batsim-py cannot run raises ``BatsimPyUnsupported`` (a
    ValueError) before anything starts, and an ImportError without the batsim-py extra.
    """
    if frontend not in FRONTENDS:
        raise ParameterError(f"frontend must be one of {', '.join(FRONTENDS)} (got {frontend!r})")
    hosts = compute_hosts(platform)
    for warning in check_run_inputs(len(hosts), Path(platform), workloads, events):
        warn(warning)
    energy_policy = policy.get("energy", "always-on")
    if energy_policy != "always-on":  # refused before launch, not by the scheduler once Batsim runs
        require_sleep_pstates([host.properties for host in hosts], energy_policy, str(platform))
    inputs = [Path(platform), *map(Path, workloads), *map(Path, events)]
    output = output_folder(output, inputs)
    progress_file = output / PROGRESS_FILE
    if frontend == "batsim-py":
        from batsim_google.simulation import batsimpy_frontend  # an optional dependency

        batsimpy_frontend.check_supported(PolicyConfig(**policy), workloads, events, platform)
        environment = batsimpy_frontend.environment(batsim)
        command = batsimpy_frontend.command(Path(platform), Path(workloads[0]), output, policy, progress_file)
        launch = partial(run_batsim_launcher, command, output, timeout, environment, name=BATSIM_PY)
    else:
        options = {
            "policy": policy,
            "output": str(output / OUTPUT_PREFIX),
            "progress_file": str(progress_file),
            "platform": str(Path(platform).resolve()),
            "events": [str(Path(e).resolve()) for e in events],
        }
        batsim_options = list(GOOGLE_CELL_BATSIM_OPTIONS) + (["--forward-unknown-events"] if events else [])
        simulation = Simulation(
            platform=Path(platform),
            workloads=[Path(w) for w in workloads],
            output=output,
            scheduler=pybatsim_scheduler(googleCell.__file__, options, timeout_ms=int(timeout * 1000)),
            events=[Path(e) for e in events],
            energy=energy,
            batsim_options=batsim_options,
            timeout=timeout,
            batsim=batsim,
            batsim_log=batsim_log,
        )
        launch = partial(run_simulation, simulation)
    with locked_folder(output):  # a second run into this folder fails at once
        clear_earlier_run(output, inputs)
        record_platform(output, platform, hosts)
        horizon = float(policy.get("horizon", 0.0))
        with ProgressBar(progress_file, len(hosts), [Path(w) for w in workloads], progress, horizon, batsim) as bar:
            result = launch(on_poll=bar.follow)
        summary_path = output / f"{OUTPUT_PREFIX}_{SUMMARY}"
        if not summary_path.exists():
            raise SimulationError(f"the scheduler wrote no accounting ({summary_path}); see its log in {output}")
        summary = json.loads(summary_path.read_text())
        mark_complete(output)
    return GoogleCellRun(summary, result)
