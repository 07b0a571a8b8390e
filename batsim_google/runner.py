"""Run one simulation: a scheduler process and Batsim, on loopback, with timeouts on both sides.

Batsim (a ZeroMQ client) waits forever for a scheduler that died, and a scheduler waits for a
Batsim that crashed, so the runner watches both: when either exits with an error, or the wall-time
limit passes, the other is stopped too. Logs of both go next to Batsim's outputs.

Batsim's peak resident memory is its own rusage (``wait4``). A process keeps in its peak the
memory it had before ``exec``, which for a child of this (large) Python process would be this
process's; so Batsim is started by a minimal launcher (``python -S``, a few MB), the way
``/usr/bin/time`` does it, which reports its child's peak.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

#: Batsim's export prefix inside the output folder: it writes ``out_jobs.csv``, ...
OUTPUT_PREFIX = "out"
POLL_SECONDS = 0.05
STOP_GRACE_SECONDS = 5.0


#: Batsim options the Google-cell scheduler needs: tasks share machines, stopped tasks come back
#: as new jobs that may share a profile (resubmitted services).
GOOGLE_CELL_BATSIM_OPTIONS = (
    "--enable-compute-sharing", "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse",
)


class SimulationError(RuntimeError):
    """The simulation failed or timed out; the message says which side and where its log is."""


def free_port() -> int:
    """A TCP port free on loopback now (the scheduler binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Simulation:
    """What to simulate and with which scheduler.

    ``scheduler`` builds the scheduler's command line from the endpoint it must bind
    (``tcp://*:PORT``); Batsim connects to ``tcp://localhost:PORT``.
    """

    platform: Path
    workloads: Sequence[Path]
    output: Path
    scheduler: Callable[[str], list[str]]
    events: Sequence[Path] = ()
    energy: bool = False
    batsim_options: Sequence[str] = ()
    timeout: float = 3600.0
    batsim: str = "batsim"
    environment: dict[str, str] | None = field(default=None, repr=False)

    def batsim_command(self, port: int) -> list[str]:
        command = [self.batsim, "-p", str(self.platform), "-s", f"tcp://localhost:{port}"]
        command += ["-e", str(self.output / OUTPUT_PREFIX)]
        for workload in self.workloads:
            command += ["-w", str(workload)]
        for events in self.events:
            command += ["--events", str(events)]
        if self.energy:
            command.append("-E")
        return command + list(self.batsim_options)


def pybatsim_scheduler(scheduler: str, options: dict | None = None, timeout_ms: int = 60_000) -> Callable[[str], list[str]]:
    """Command line of a pybatsim scheduler (a bundled name or a file path) for an endpoint."""

    def command(endpoint: str) -> list[str]:
        line = [sys.executable, "-m", "batsim.cmds.launcher", scheduler, "-s", endpoint, "-v", "warning"]
        return line + ["-t", str(timeout_ms), "-o", json.dumps(options or {})]

    return command


@dataclass(frozen=True)
class SimulationResult:
    """Where Batsim wrote, how long the run took and Batsim's peak resident memory (bytes)."""

    output: Path
    wall_seconds: float
    batsim_peak_rss: int

    def path(self, name: str) -> Path:
        """A Batsim output file by its suffix, e.g. ``jobs.csv`` -> ``out_jobs.csv``."""
        return self.output / f"{OUTPUT_PREFIX}_{name}"


#: Runs argv[2:] as a child and writes the child's peak resident memory (bytes) to argv[1].
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss * 1024))  # kilobytes on Linux
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _stop(process: subprocess.Popen) -> None:
    """End a process and its session (the launcher and Batsim under it)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def run_simulation(simulation: Simulation, on_poll: Callable[[], None] | None = None) -> SimulationResult:
    """Run ``simulation`` to its end; raise :class:`SimulationError` when either side fails."""
    executable = shutil.which(simulation.batsim)
    if executable is None:
        raise SimulationError(f"no '{simulation.batsim}' executable on PATH (Batsim 4.2.1 is needed)")
    simulation.output.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_paths = {name: simulation.output / f"{name}.log" for name in ("scheduler", "batsim")}
    logs = {name: path.open("w") for name, path in log_paths.items()}
    peak_file = simulation.output / "batsim_peak_rss"
    started = time.monotonic()
    scheduler = subprocess.Popen(
        simulation.scheduler(f"tcp://*:{port}"), stdout=logs["scheduler"], stderr=subprocess.STDOUT,
        env=simulation.environment, start_new_session=True,
    )
    batsim_command = [executable, *simulation.batsim_command(port)[1:]]
    batsim = subprocess.Popen(
        [sys.executable, "-S", "-c", _LAUNCHER, str(peak_file), *batsim_command],
        stdout=logs["batsim"], stderr=subprocess.STDOUT, env=simulation.environment, start_new_session=True,
    )
    processes = {"scheduler": scheduler, "batsim": batsim}
    try:
        while any(process.poll() is None for process in processes.values()):
            for name, process in processes.items():
                if process.poll() not in (None, 0):
                    logs[name].flush()
                    raise SimulationError(
                        f"{name} exited with status {process.returncode}; see {log_paths[name]}:\n"
                        + _tail(log_paths[name])
                    )
            if time.monotonic() - started > simulation.timeout:
                raise SimulationError(f"simulation still running after {simulation.timeout:g} s; stopped")
            if on_poll is not None:
                on_poll()
            time.sleep(POLL_SECONDS)
    finally:
        for process in processes.values():
            _stop(process)
        for log in logs.values():
            log.close()
    return SimulationResult(simulation.output, time.monotonic() - started, int(peak_file.read_text()))
