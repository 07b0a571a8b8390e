"""Run Batsim 4.2.1 against a pybatsim scheduler, safely: free port, timeouts, measured memory.

Batsim waits forever for a scheduler that died, so both processes run under a deadline and are
ended (by their own process ids) when it passes. The scheduler binds the port and Batsim connects
to it; ZeroMQ retries the connection, so starting order does not race.

Batsim's peak resident memory is its own rusage (``wait4``). A process keeps in its peak the
memory it had before ``exec``, which for a child of this (large) Python process would be this
process's; so Batsim is started by a minimal launcher (``python -S``, a few MB), the way
``/usr/bin/time`` does it, and the launcher reports its child's peak.
"""

from __future__ import annotations

import os
import shutil
import socket
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: A pybatsim scheduler that handles machine_unavailable/machine_available notifications.
DEFAULT_SCHEDULER = "fillerSchedWithEvents"


@dataclass(frozen=True)
class BatsimRun:
    """Outcome of a run: Batsim's output prefix (files ``PREFIX_jobs.csv``...), wall-clock
    seconds and peak resident memory (bytes) of the Batsim process."""

    prefix: Path
    seconds: float
    peak_rss: int

    def output(self, name: str) -> Path:
        """Batsim output file ``name`` (e.g. ``jobs.csv``): Batsim writes ``PREFIX_name``."""
        return self.prefix.with_name(f"{self.prefix.name}_{name}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def run_batsim(
    platform: str | Path,
    workload: str | Path,
    prefix: str | Path,
    *,
    events: str | Path | None = None,
    energy: bool = False,
    scheduler: str = DEFAULT_SCHEDULER,
    timeout: float = 600.0,
    batsim: str = "batsim",
) -> BatsimRun:
    """Simulate ``workload`` on ``platform``; raise RuntimeError with the logs' end if it fails."""
    executable = shutil.which(batsim)
    if executable is None:
        raise RuntimeError(f"no {batsim!r} on PATH")
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    sched_log = prefix.with_name(f"{prefix.name}_scheduler.log").open("w+")
    batsim_log = prefix.with_name(f"{prefix.name}_batsim.log").open("w+")
    command = [executable, "-p", str(platform), "-w", str(workload), "-e", str(prefix), "-s", f"tcp://localhost:{port}", "-q"]
    if energy:
        command.append("-E")
    if events is not None:
        command += ["--events", str(events)]
    sched = subprocess.Popen(
        [sys.executable, "-m", "batsim.cmds.launcher", scheduler, "-s", f"tcp://*:{port}", "-t", str(int(timeout * 1000))],
        stdout=sched_log, stderr=subprocess.STDOUT,
    )
    peak_file = prefix.with_name(f"{prefix.name}_batsim_peak_rss")
    start = time.perf_counter()
    simulator = subprocess.Popen(
        [sys.executable, "-S", "-c", _LAUNCHER, str(peak_file), *command],
        stdout=batsim_log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    timed_out = False
    try:
        simulator.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(simulator.pid, signal.SIGKILL)  # the launcher's session: it and Batsim
        simulator.wait()
    finally:
        seconds = time.perf_counter() - start
        try:
            # After a failed Batsim, the scheduler would only wait for messages that never come.
            sched.wait(timeout=30 if simulator.returncode == 0 else 0)
        except subprocess.TimeoutExpired:
            sched.kill()
            sched.wait()
    logs = {name: _tail(log) for name, log in (("batsim", batsim_log), ("scheduler", sched_log))}
    if simulator.returncode != 0 or sched.returncode != 0:
        raise RuntimeError(
            (f"batsim killed after {timeout} s; " if timed_out else "")
            + f"batsim exited with {simulator.returncode}, the scheduler with {sched.returncode}\n"
            + "\n".join(f"--- {name}:\n{text}" for name, text in logs.items())
        )
    return BatsimRun(prefix, seconds, int(peak_file.read_text()))


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


def _tail(log, lines: int = 20) -> str:
    log.flush()
    log.seek(0)
    text = log.read().splitlines()[-lines:]
    log.close()
    return "\n".join(text)
