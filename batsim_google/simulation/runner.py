"""Run one simulation: a scheduler process and Batsim, on loopback, with timeouts on both sides.

The scheduler binds its socket on the loopback interface only (:data:`LOOPBACK`): bound on every
interface, anyone who can reach the machine could talk to it, and one SIMULATION_ENDS from outside
stopped a run. Batsim (a ZeroMQ client) waits forever for a scheduler that died, or that exited
mid-run, and a scheduler waits for a Batsim that crashed, so the runner watches both: when either
exits with an error, when the scheduler has exited and Batsim sits waiting for it, or when the
wall-time limit passes, the other is stopped too. Logs of both go next to Batsim's outputs. Each
process runs in its own process group, stopped as a whole, so that what it started (batsim-py
starts Batsim itself) never outlives it; what left its group (a child that called ``setsid``) is
found by the mark every process of the simulation carries in its environment
(:mod:`.process_sweep`) and ended too.

Batsim's peak resident memory is its own rusage (``wait4``). A process keeps in its peak the
memory it had before ``exec``, which for a child of this (large) Python process would be this
process's; so Batsim is started by a minimal launcher (``python -S``, a few MB), the way
``/usr/bin/time`` does it, which reports its child's peak.

Runs are reproducible: pybatsim's schedulers iterate sets of jobs (fillerSched, ...), whose
order followed the jobs' memory addresses and, once jobs hash by their id
(:mod:`.pybatsim_launcher`), string hashes, which Python draws anew in each process unless
``PYTHONHASHSEED`` is set: every process runs with a fixed one (:data:`SCHEDULER_HASH_SEED`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path

from batsim_google.errors import SimulationError
from batsim_google.simulation.batsim_binary import (
    DISABLE_ENERGY_TRACING,
    FORGET_ENDED_JOBS,
    BatsimBinary,
    batsim_binary,
    log_options,
)
from batsim_google.simulation.parent_death import child_dies_with_this_process
from batsim_google.simulation.process_sweep import (
    RUN_VARIABLE,
    end_marked_processes,
    group_snapshot,
    group_waits,
    new_run_token,
)

#: Batsim's export prefix inside the output folder: it writes ``out_jobs.csv``, ...
OUTPUT_PREFIX = "out"
#: Batsim's peak memory, written by the launcher beside the exports.
PEAK_RSS_FILE = "batsim_peak_rss"
#: The processes of a simulation, each logged to ``output/NAME.log``.
BATSIM, SCHEDULER = "batsim", "scheduler"
POLL_SECONDS = 0.05
STOP_GRACE_SECONDS = 5.0
#: Seconds Batsim may sit idle after its scheduler exited before the run is declared stuck (a
#: Batsim that writes its outputs after the end works, and is left to finish).
STUCK_SECONDS = 2.0
#: The only interface a scheduler listens on, and Batsim connects to.
LOOPBACK = "127.0.0.1"


#: Wall-clock limit of one simulation, seconds, unless told otherwise.
DEFAULT_TIMEOUT_S = 3600.0
#: The longest wall-clock timeout a simulation may be given: 30 days.
MAX_TIMEOUT_S = 30 * 86_400.0
#: ``PYTHONHASHSEED`` of the processes of a simulation (see the module): a run is reproducible.
SCHEDULER_HASH_SEED = "0"
#: The protocol libraries the scheduler can run through, between Batsim and the policy.
PYBATSIM_FRONTEND, BATSIM_PY_FRONTEND = "pybatsim", "batsim-py"
FRONTENDS = (PYBATSIM_FRONTEND, BATSIM_PY_FRONTEND)


def seeded_environment(environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environment`` (None: this process's) with the fixed hash seed of :data:`SCHEDULER_HASH_SEED`."""
    return {**(os.environ if environment is None else environment), "PYTHONHASHSEED": SCHEDULER_HASH_SEED}


def endpoint(port: int) -> str:
    """The ZeroMQ endpoint of a simulation's scheduler: loopback only."""
    return f"tcp://{LOOPBACK}:{port}"


def free_port() -> int:
    """A TCP port free on loopback now (the scheduler binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


@dataclass
class Simulation:
    """What to simulate and with which scheduler.

    ``scheduler`` builds the scheduler's command line from the endpoint it must bind
    (``tcp://127.0.0.1:PORT``, loopback only); Batsim connects to it. ``scheduler_log=False``
    discards the scheduler's standard output, for schedulers that print their whole queue at every
    event (pybatsim's fillerSched wrote 18 GB over 10k jobs here); its errors are logged still. ``energy_sweep``: Batsim's
    ``out_consumed_energy.csv`` (a sum over every machine at every job event); None keeps it with
    a stock binary and turns it off with our patched one, whose power-state changes give the same
    energy. ``batsim_log``: a level of :data:`~.batsim_binary.LOG_LEVELS`. ``forget_ended_jobs``:
    Batsim forgets the jobs that ended, where the binary offers it (our patched one); a streamed
    run asks for it, its jobs' ids and profiles' names being new by construction.
    """

    platform: Path
    workloads: Sequence[Path]
    output: Path
    scheduler: Callable[[str], list[str]]
    events: Sequence[Path] = ()
    energy: bool = False
    batsim_options: Sequence[str] = ()
    timeout: float = DEFAULT_TIMEOUT_S
    batsim: str = "batsim"
    environment: dict[str, str] | None = field(default=None, repr=False)
    scheduler_log: bool = True
    energy_sweep: bool | None = None
    batsim_log: str = "warning"
    forget_ended_jobs: bool = False

    def batsim_command(self, port: int, binary: BatsimBinary) -> list[str]:
        command = [binary.path, "-p", str(self.platform), "-s", endpoint(port)]
        command += ["-e", str(self.output / OUTPUT_PREFIX)]
        for workload in self.workloads:
            command += ["-w", str(workload)]
        for events in self.events:
            command += ["--events", str(events)]
        if self.energy:
            command.append("-E")
            sweep = not binary.patched if self.energy_sweep is None else self.energy_sweep
            if not sweep:
                if not binary.patched:
                    raise SimulationError(f"{binary.describe()} cannot turn off its energy sweep")
                command.append(DISABLE_ENERGY_TRACING)
        if self.forget_ended_jobs and binary.offers(FORGET_ENDED_JOBS):
            command.append(FORGET_ENDED_JOBS)
        return command + log_options(self.batsim_log) + list(self.batsim_options)


#: pybatsim's launcher, with jobs that hash by their id (see the module).
PYBATSIM_LAUNCHER = "batsim_google.simulation.pybatsim_launcher"


def pybatsim_scheduler(
    scheduler: str, options: dict | None = None, timeout_ms: int = 60_000
) -> Callable[[str], list[str]]:
    """Command line of a pybatsim scheduler (a bundled name or a file path) for an endpoint."""

    def command(endpoint: str) -> list[str]:
        line = [sys.executable, "-m", PYBATSIM_LAUNCHER, scheduler, "-s", endpoint, "-v", "warning"]
        return line + ["-t", str(timeout_ms), "-o", json.dumps(options or {})]

    return command


@dataclass(frozen=True)
class SimulationResult:
    """Where Batsim wrote, how long the run took and Batsim's peak resident memory (bytes, when
    measured)."""

    output: Path
    wall_seconds: float
    batsim_peak_rss: int | None

    def path(self, name: str) -> Path:
        """A Batsim output file by its suffix, e.g. ``jobs.csv`` -> ``out_jobs.csv``."""
        return self.output / f"{OUTPUT_PREFIX}_{name}"


#: Runs argv[2:] as a child and writes the child's peak resident memory (bytes) to argv[1].
_LAUNCHER = """
import os, sys
parent = os.getpid()
pid = os.fork()
if pid == 0:
    if sys.platform.startswith("linux"):  # Batsim ends with the launcher (parent_death.py)
        import ctypes
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
        if os.getppid() != parent:
            os._exit(1)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss * 1024))  # kilobytes on Linux
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass  # the whole group already ended


def _stop(process: subprocess.Popen) -> None:
    """Stop a process and its group (what it started), gently first."""
    _signal_group(process, signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(process, signal.SIGKILL)
    process.wait()


def _tail(path: Path, lines: int = 15) -> str:
    """The end of a process's log, where its error is."""
    with path.open("rb") as log:
        log.seek(max(0, log.seek(0, 2) - 8192))
        text = log.read().decode(errors="replace").strip().splitlines()
    return "\n".join(text[-lines:]) if text else "nothing logged"


def _critical(path: Path) -> str | None:
    """Batsim's or SimGrid's own reason for aborting: the first CRITICAL line of the log's end (before
    the settings or backtrace SimGrid prints after it), with SimGrid's ``Did you mean`` if any."""
    with path.open("rb") as log:
        log.seek(max(0, log.seek(0, 2) - (1 << 16)))
        lines = log.read().decode(errors="replace").splitlines()
    for index, line in enumerate(lines):
        before, found, reason = line.partition("/CRITICAL] ")
        if found and not reason.startswith("Current backtrace"):
            after = lines[index + 1].strip() if index + 1 < len(lines) else ""
            return f"CRITICAL {reason.strip()}" + (f" ({after})" if after.startswith("Did you mean") else "")
    return None


def _raise_on_failure(processes: dict[str, subprocess.Popen], logs: dict) -> None:
    for name, process in processes.items():
        if process.poll() not in (None, 0):
            logs[name].flush()
            path = Path(logs[name].name)
            reason = _critical(path) or _tail(path)
            raise SimulationError(f"{name} exited with status {process.returncode}; see {path}:\n{reason}")


def run_simulation(simulation: Simulation, on_poll: Callable[[], None] | None = None) -> SimulationResult:
    """Run ``simulation`` to its end; raise :class:`SimulationError` when either side fails."""
    binary = batsim_binary(simulation.batsim)
    port = free_port()
    peak_file = simulation.output / PEAK_RSS_FILE
    batsim = simulation.batsim_command(port, binary)
    commands = {
        SCHEDULER: simulation.scheduler(endpoint(port)),
        BATSIM: [sys.executable, "-S", "-c", _LAUNCHER, str(peak_file), *batsim],
    }
    quiet = frozenset() if simulation.scheduler_log else frozenset({SCHEDULER})
    wall_seconds = _supervise(commands, simulation.output, simulation.timeout, simulation.environment, on_poll, quiet)
    return SimulationResult(simulation.output, wall_seconds, int(peak_file.read_text()))


def run_batsim_launcher(
    command: list[str],
    output: Path,
    timeout: float,
    environment: dict[str, str] | None = None,
    on_poll: Callable[[], None] | None = None,
    name: str = SCHEDULER,
) -> SimulationResult:
    """Run a scheduler that starts Batsim itself (batsim-py does): one process to watch.

    Batsim runs in the scheduler's process group, so stopping the scheduler stops Batsim too;
    its peak memory is not measured (``None``).
    """
    return SimulationResult(output, _supervise({name: command}, output, timeout, environment, on_poll), None)


class _AbandonedBatsim:
    """Tells a Batsim left waiting by a scheduler that exited mid-run: the scheduler has ended
    (status 0, or its failure would have been raised) and Batsim's processes have neither run nor
    used CPU for :data:`STUCK_SECONDS`."""

    def __init__(self, processes: dict[str, subprocess.Popen]) -> None:
        self.processes = processes
        self.since: float | None = None
        self.snapshot: tuple = ()

    def check(self) -> None:
        scheduler, batsim = self.processes.get(SCHEDULER), self.processes.get(BATSIM)
        if scheduler is None or batsim is None or scheduler.poll() is None or batsim.poll() is not None:
            return
        now = time.monotonic()
        if self.since is not None and now - self.since < STUCK_SECONDS:
            return
        snapshot = group_snapshot(batsim.pid)
        if self.since is not None and group_waits(self.snapshot, snapshot):
            raise SimulationError(
                f"the scheduler exited (status {scheduler.returncode}) before the simulation's end, and Batsim "
                "was left waiting for its answer; stopped"
            )
        self.since, self.snapshot = now, snapshot


def _supervise(
    commands: dict[str, list[str]],
    output: Path,
    timeout: float,
    environment: dict[str, str] | None,
    on_poll: Callable[[], None] | None,
    quiet: Set[str] = frozenset(),
) -> float:
    """Start the commands (logs ``output/NAME.log``; the ``quiet`` ones' standard output is
    discarded, their errors logged) in ``environment`` (None: this process's) with the fixed hash
    seed and this run's mark (:mod:`.process_sweep`), and wait for all; stop all when one fails,
    and every process that carries the mark when the run ends.

    Returns the wall-clock seconds the run took.
    """
    output.mkdir(parents=True, exist_ok=True)
    logs = {name: (output / f"{name}.log").open("w") for name in commands}
    token = new_run_token()
    started = time.monotonic()
    processes: dict[str, subprocess.Popen] = {}
    try:
        for name, command in commands.items():
            processes[name] = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL if name in quiet else logs[name],
                stderr=logs[name] if name in quiet else subprocess.STDOUT,
                env={**seeded_environment(environment), RUN_VARIABLE: token},
                start_new_session=True,
                **child_dies_with_this_process(),  # even if this process is killed (a campaign's worker)
            )
        abandoned = _AbandonedBatsim(processes)
        while any(process.poll() is None for process in processes.values()):
            _raise_on_failure(processes, logs)
            abandoned.check()
            if time.monotonic() - started > timeout:
                raise SimulationError(f"simulation still running after {timeout:g} s; stopped")
            if on_poll is not None:
                on_poll()
            time.sleep(POLL_SECONDS)
        _raise_on_failure(processes, logs)  # the last one may have failed as the loop ended
    finally:
        for process in processes.values():
            _stop(process)
        end_marked_processes(token)
        for log in logs.values():
            log.close()
    return time.monotonic() - started
