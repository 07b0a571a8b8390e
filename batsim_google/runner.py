"""Run one simulation: a scheduler process and Batsim, on loopback, with timeouts on both sides.

Batsim (a ZeroMQ client) waits forever for a scheduler that died, and a scheduler waits for a
Batsim that crashed, so the runner watches both: when either exits with an error, or the wall-time
limit passes, the other is stopped too. Logs of both go next to Batsim's outputs.
"""

from __future__ import annotations

import json
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
    output: Path
    wall_seconds: float

    def path(self, name: str) -> Path:
        """A Batsim output file by its suffix, e.g. ``jobs.csv`` -> ``out_jobs.csv``."""
        return self.output / f"{OUTPUT_PREFIX}_{name}"


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_simulation(simulation: Simulation, on_poll: Callable[[], None] | None = None) -> SimulationResult:
    """Run ``simulation`` to its end; raise :class:`SimulationError` when either side fails."""
    if shutil.which(simulation.batsim) is None:
        raise SimulationError(f"no '{simulation.batsim}' executable on PATH (Batsim 4.2.1 is needed)")
    simulation.output.mkdir(parents=True, exist_ok=True)
    port = free_port()
    logs = {name: (simulation.output / f"{name}.log").open("w") for name in ("scheduler", "batsim")}
    started = time.monotonic()
    scheduler = subprocess.Popen(
        simulation.scheduler(f"tcp://*:{port}"), stdout=logs["scheduler"], stderr=subprocess.STDOUT,
        env=simulation.environment,
    )
    batsim = subprocess.Popen(
        simulation.batsim_command(port), stdout=logs["batsim"], stderr=subprocess.STDOUT,
        env=simulation.environment,
    )
    processes = {"scheduler": scheduler, "batsim": batsim}
    try:
        while any(process.poll() is None for process in processes.values()):
            for name, process in processes.items():
                if process.poll() not in (None, 0):
                    raise SimulationError(
                        f"{name} exited with status {process.returncode}; "
                        f"see {simulation.output / (name + '.log')}"
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
    return SimulationResult(simulation.output, time.monotonic() - started)
