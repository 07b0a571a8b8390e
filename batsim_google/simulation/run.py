"""One simulation with a scheduler of any kind (:mod:`.schedulers`): :func:`run_scheduler`, the one way
every command and the Python API run Batsim.

It checks the inputs against each other and against the scheduler first (:mod:`.preflight`), then
runs Batsim and the scheduler under a time limit (:mod:`.runner`) with a progress bar: the
schedulers of this package's front-end write the simulated time they reached to a small file,
which the bar follows. After the run, their accounting summary tells whether every task ended
exactly once. The built-in scheduler runs through pybatsim (all features) or batsim-py (what it can
do with Batsim 4.2.1, see :mod:`batsim_google.simulation.batsimpy_frontend`).

An output folder that holds an earlier run's files is cleared of them first (only of the files a
run writes, by name, its metrics included), so that no stale file is read as this run's; the file
:data:`INCOMPLETE` then marks the folder until the simulation has ended well, so that an
interrupted or failed run is never read as a complete one (the metrics refuse such a folder).
The folder is locked while the run writes it (:func:`~batsim_google.output_files.locked_folder`),
and the run records its platform there (:mod:`.run_platform`), against which its metrics are checked.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from batsim_google.errors import InputFileError, ParameterError, SimulationError
from batsim_google.fitting.batsim_input import forget_workload_files
from batsim_google.output_files import locked_folder, output_folder, refuse_inputs, write_text
from batsim_google.scheduling.ledger_files import SUMMARY
from batsim_google.scheduling.policy_api import BatsimNeeds
from batsim_google.simulation import googleCell
from batsim_google.simulation.batsched_energy import with_power_figures
from batsim_google.simulation.frontend import FrontEndOptions
from batsim_google.simulation.policy_loader import refuse_while_loading
from batsim_google.simulation.preflight import BATSIM_PY, Preflight, preflight
from batsim_google.simulation.progress_bar import ProgressBar
from batsim_google.simulation.run_inputs import workload_name
from batsim_google.simulation.run_platform import PLATFORM_RECORD, record_platform
from batsim_google.simulation.runner import (
    BATSIM,
    OUTPUT_PREFIX,
    PEAK_RSS_FILE,
    PYBATSIM_FRONTEND,
    SCHEDULER,
    Simulation,
    SimulationResult,
    pybatsim_scheduler,
    run_batsim_launcher,
    run_simulation,
)
from batsim_google.simulation.schedulers import BUILT_IN, COMMAND, OWN_FRONT_END, PYBATSIM, PYTHON, SOCKET, Scheduler
from batsim_google.simulation.settings import RunInputs, SimulationSettings
from batsim_google.simulation.streamed_submissions import write_profile_uses, write_stub_workloads
from batsim_google.simulation.workload_stream import in_submission_order, unstreamable

PROGRESS_FILE = "progress.txt"
#: Part of the name of a streamed run's stub workloads (``out_stub_w0.json``): the first jobs only.
STUB = "stub"
#: A streamed run's file of its workloads' shared profiles (:func:`.streamed_submissions.write_profile_uses`).
PROFILE_USES = f"{OUTPUT_PREFIX}_{STUB}_profile_uses.json"
#: Present in a run's folder while its files are not those of a run that ended well.
INCOMPLETE = "INCOMPLETE"
#: The metrics ``run`` writes beside the outputs once the simulation ended.
METRICS_FILE = "metrics.json"
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
class SimulationRun:
    """A simulation that ended well: its output folder, the scheduler's accounting summary (None
    for a scheduler that keeps no ledger), whether Batsim's energy plugin ran, and the wall time
    and Batsim's memory."""

    output: Path
    summary: dict | None
    energy_outputs: bool
    simulation: SimulationResult


def batsim_options(needs: BatsimNeeds, has_events: bool, streamed: bool = False) -> list[str]:
    """Batsim's options for a scheduler with these needs (events forwarded when it reads kills).
    A ``streamed`` run keeps Batsim's memory to what runs: its jobs register a profile each
    (:mod:`.workload_stream`), which Batsim frees once the job ended without
    ``--enable-profile-reuse``, and it writes no Pajé trace (``_schedule.trace``), whose writer
    keeps a name per job met to the end."""
    options = ["--enable-compute-sharing"] if needs.compute_sharing else []
    if needs.dynamic_jobs:
        options += ["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs"]
        options += [] if streamed else ["--enable-profile-reuse"]
    if streamed:
        options.append("--disable-schedule-tracing")
    if needs.user_kills and has_events:
        options.append("--forward-unknown-events")
    return options


def _own_front_end(
    scheduler: Scheduler, inputs: RunInputs, output: Path, timeout_ms: int, stream: bool = False
) -> Callable:
    """This package's pybatsim front-end (:mod:`.googleCell`) with the built-in policy or a user's
    (``stream``: it registers the workloads' jobs, :mod:`.streamed_submissions`)."""
    options = FrontEndOptions(
        policy=dataclasses.asdict(scheduler.config) if scheduler.kind == BUILT_IN else {},
        policy_class=scheduler.target if scheduler.kind == PYTHON else None,
        policy_options=dict(scheduler.options),
        output=str(output / OUTPUT_PREFIX),
        progress_file=str(output / PROGRESS_FILE),
        platform=str(inputs.platform.resolve()),
        events=[str(path.resolve()) for path in inputs.events],
        stream=[str(path.resolve()) for path in inputs.workloads] if stream else (),
        stream_to_sort=[str(path.resolve()) for path in _to_sort(inputs)] if stream else (),
        stream_profile_uses=str(output / PROFILE_USES) if stream else None,
    )
    return pybatsim_scheduler(googleCell.__file__, options.to_json(), timeout_ms=timeout_ms)


def _command(scheduler: Scheduler, inputs: RunInputs, output: Path) -> Callable[[str], list[str]]:
    """A command's arguments with the endpoint in place of :data:`SOCKET` (batsched's energy
    variants given the platform's power figures)."""
    command = with_power_figures(scheduler.target, inputs.platform, output)
    return lambda endpoint: [part.replace(SOCKET, endpoint) for part in command]


def _pybatsim_target(target: str) -> str:
    """A bundled scheduler's name, or a file's absolute path: pybatsim mistakes ``./x.py`` for a
    relative import."""
    return str(Path(target).resolve()) if "/" in target or target.endswith(".py") else target


#: The scheduler's command line for an endpoint, per kind (the pybatsim front-end).
SCHEDULER_COMMANDS: dict[str, Callable[[Scheduler, RunInputs, Path, int], Callable[[str], list[str]]]] = {
    BUILT_IN: _own_front_end,
    PYTHON: _own_front_end,
    PYBATSIM: lambda scheduler, inputs, output, timeout_ms: pybatsim_scheduler(
        _pybatsim_target(str(scheduler.target)), dict(scheduler.options), timeout_ms=timeout_ms
    ),
    COMMAND: lambda scheduler, inputs, output, timeout_ms: _command(scheduler, inputs, output),
}


def stub_workloads(inputs: RunInputs, output: Path) -> list[Path]:
    """Where a streamed run's stub workloads go (one per workload, for Batsim's workload names)."""
    return [output / f"{OUTPUT_PREFIX}_{STUB}_{workload_name(index)}.json" for index in range(len(inputs.workloads))]


def _to_sort(inputs: RunInputs) -> list[Path]:
    """The workloads whose jobs are not in submission order (a trace window's): a streamed run sorts them."""
    return [path for path in inputs.workloads if not in_submission_order(path)]


def _streamed(simulation: Simulation, inputs: RunInputs, on_poll: Callable[[], None] | None = None):
    """Write the stub workloads Batsim is given and the workloads' profile uses, forget the
    workloads' tables, then run."""
    workloads = [path.resolve() for path in inputs.workloads]
    write_stub_workloads(simulation.workloads, workloads, [path.resolve() for path in _to_sort(inputs)])
    write_profile_uses(simulation.output / PROFILE_USES, workloads)
    forget_workload_files()
    return run_simulation(simulation, on_poll)


def streams(scheduler: Scheduler, inputs: RunInputs, settings: SimulationSettings, machines: int) -> bool:
    """Whether the run streams its workloads: by this package's front-end, each of them
    streamable (else it is loaded whole, with a warning saying why), and asked, or, left to the
    run (``stream_workload`` None), where loaded whole they would take Batsim more memory than this
    machine has available (:func:`loaded_memory_exceeds`, said when it streams)."""
    if (
        settings.stream_workload is False
        or scheduler.kind not in OWN_FRONT_END
        or settings.frontend != PYBATSIM_FRONTEND
    ):
        return False
    if settings.stream_workload is None:
        reason = loaded_memory_exceeds(inputs, machines, settings.batsim)
        if reason is None:
            return False
        settings.say(f"the workloads are streamed (--load-workload loads them): {reason}")
    for path in inputs.workloads:
        reason = unstreamable(path)
        if reason:
            settings.warn(f"the workloads are loaded whole, not streamed: in {path}, {reason}")
            return False
    return True


def warn_if_remembering(settings: SimulationSettings) -> None:
    """A streamed run's patched Batsim built from an earlier version of the patch, without
    ``--forget-ended-jobs``, keeps about 0.24 KB of every job that ended: said, with the fix."""
    from batsim_google.simulation.batsim_binary import FORGET_ENDED_JOBS, batsim_binary

    binary = batsim_binary(settings.batsim)
    if binary.patched and not binary.offers(FORGET_ENDED_JOBS):
        settings.warn(
            f"{binary.path} has no {FORGET_ENDED_JOBS} (built from an earlier engine/batsim-google.patch): "
            "Batsim keeps about 0.24 KB of every job that ended; rebuild it to keep only what runs (docs/batsim.md)"
        )


def loaded_memory_exceeds(inputs: RunInputs, machines: int, batsim: str) -> str | None:
    """Why the workloads loaded whole would not fit (:func:`.cost_model.too_large_to_load`); None
    where they would, or where no prediction is made (jobs other than delay ones, Batsim missing:
    said when the run starts)."""
    from batsim_google.simulation import cost_model
    from batsim_google.simulation.batsim_binary import batsim_binary

    try:
        kind = batsim_binary(batsim).kind
        cost = cost_model.read_workload_cost(*inputs.workloads)
    except (InputFileError, SimulationError):
        return None
    too_large = cost_model.too_large_to_load(cost, machines, kind)
    if too_large is None:
        return None
    needed, available = too_large
    return f"loaded whole, Batsim would need about {needed / 1e9:.1f} GB of the {available / 1e9:.1f} GB available"


def _pybatsim_launch(
    scheduler: Scheduler, inputs: RunInputs, output: Path, settings: SimulationSettings, checked: Preflight
):
    timeout_ms = int(settings.timeout * 1000)
    streamed = streams(scheduler, inputs, settings, checked.machines)
    if streamed:
        warn_if_remembering(settings)
    simulation = Simulation(
        platform=inputs.platform,
        workloads=stub_workloads(inputs, output) if streamed else list(inputs.workloads),
        output=output,
        scheduler=_own_front_end(scheduler, inputs, output, timeout_ms, stream=True)
        if streamed
        else SCHEDULER_COMMANDS[scheduler.kind](scheduler, inputs, output, timeout_ms),
        events=list(inputs.events),
        energy=checked.energy_outputs,
        batsim_options=batsim_options(scheduler.needs(settings.timeout), bool(inputs.events), streamed),
        timeout=settings.timeout,
        batsim=settings.batsim,
        batsim_log=settings.batsim_log,
        scheduler_log=scheduler.kind != PYBATSIM,  # pybatsim's bundled ones print their whole queue (stdout)
        forget_ended_jobs=streamed,
    )
    return partial(_streamed, simulation, inputs) if streamed else partial(run_simulation, simulation)


def _batsim_py_launch(
    scheduler: Scheduler, inputs: RunInputs, output: Path, settings: SimulationSettings, _: Preflight
):
    """batsim-py starts Batsim itself, always with its energy plugin."""
    try:
        from batsim_google.simulation import batsimpy_frontend  # an optional dependency
    except ImportError as error:
        raise ParameterError(
            f"--frontend {BATSIM_PY} needs the batsim-py extra (uv sync --extra batsim-py): {error}"
        ) from error
    environment = batsimpy_frontend.environment(settings.batsim)
    config = dataclasses.asdict(scheduler.config)
    command = batsimpy_frontend.command(inputs.platform, inputs.workloads[0], output, config, output / PROGRESS_FILE)
    return partial(run_batsim_launcher, command, output, settings.timeout, environment, name=BATSIM_PY)


#: How each front-end (:data:`~.runner.FRONTENDS`) launches a simulation.
LAUNCHES = {PYBATSIM_FRONTEND: _pybatsim_launch, BATSIM_PY: _batsim_py_launch}


def run_scheduler(
    scheduler: Scheduler, inputs: RunInputs, output: Path, settings: SimulationSettings = SimulationSettings()
) -> SimulationRun:
    """Run one simulation of ``inputs`` with ``scheduler`` into ``output``; raise SimulationError
    when it fails.

    Inputs that do not fit together, or that the scheduler cannot take, are refused before
    anything starts (:func:`.preflight.preflight`, which says what it found to ``settings.say``
    and ``settings.warn``). A progress bar is shown for the kinds whose scheduler reports its simulated
    time (:data:`~.schedulers.OWN_FRONT_END`).
    """
    refuse_while_loading("a simulation")  # a script's calls, run again as its policy is loaded
    checked = preflight(scheduler, inputs, settings)
    shown = settings.progress and scheduler.kind in OWN_FRONT_END
    if settings.progress and not shown:
        settings.warn(f"no progress bar: a {scheduler.kind} scheduler does not report its simulated time")
    output = output_folder(output, inputs.files())
    launch = LAUNCHES[settings.frontend](scheduler, inputs, output, settings, checked)
    with locked_folder(output):  # a second run into this folder fails at once
        clear_earlier_run(output, inputs.files())
        record_platform(output, inputs.platform, checked.hosts)
        horizon = scheduler.config.horizon if scheduler.kind == BUILT_IN else 0.0
        with ProgressBar(
            output / PROGRESS_FILE, checked.machines, list(inputs.workloads), shown, horizon, settings.batsim
        ) as bar:
            result = launch(on_poll=bar.follow)
        summary_path = output / f"{OUTPUT_PREFIX}_{SUMMARY}"
        if scheduler.kind in OWN_FRONT_END and not summary_path.exists():
            raise SimulationError(f"the scheduler wrote no accounting ({summary_path}); see its log in {output}")
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
        mark_complete(output)
    return SimulationRun(output, summary, checked.energy_outputs, result)
