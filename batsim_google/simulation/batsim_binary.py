"""Which Batsim a run uses: the stock 4.2.1 or ours with the patch of ``engine/``, and how loud.

The patch (``engine/batsim-google.patch``) makes a delay job wait on a timer instead of a SimGrid
model action, and adds ``--disable-energy-tracing`` and ``--forget-ended-jobs``; its binary says
so in ``batsim --version`` (``4.2.1+batsim-google``). With it, a run keeps ``-E`` (power states,
sleep) but turns off Batsim's per-event energy sweep, and the metrics compute the same energy from
the power-state changes (:mod:`batsim_google.experiments.pstate_energy`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

from batsim_google.errors import SimulationError

#: What ``batsim --version`` of a binary built with our patch ends with.
PATCH_SUFFIX = "+batsim-google"
#: The patched binary's option that turns off the energy sweep (``out_consumed_energy.csv``).
DISABLE_ENERGY_TRACING = "--disable-energy-tracing"
#: The patched binary's option that forgets an ended job's id and profile name, which Batsim 4.2.1
#: keeps to the end (0.24 KB a job): a streamed run's memory then follows the jobs not yet ended.
FORGET_ENDED_JOBS = "--forget-ended-jobs"
VERSION_TIMEOUT_S = 30.0
#: Each build's command and the environment variable that names another one instead
#: (docs/batsim.md): the stock Batsim is ``batsim``, the name every user has; ours is
#: ``batsim-patched``. Tests and benchmarks that need a given build find it here.
BINARY_NAMES = {"stock": ("BATSIM_STOCK", "batsim"), "patched": ("BATSIM_PATCHED", "batsim-patched")}

#: Batsim's own log categories (``src/batsim.cpp``), each set at every verbosity level.
LOG_CATEGORIES = (
    "root",
    "batsim",
    "workload",
    "job_submitter",
    "redis",
    "jobs",
    "machines",
    "pstate",
    "workflow",
    "jobs_execution",
    "server",
    "export",
    "profiles",
    "machine_range",
    "events",
    "event_submitter",
    "protocol",
    "network",
    "ipp",
    "task_execution",
)
#: ``run --batsim-log`` levels; ``warning`` keeps a full-cell run's log to its warnings (the
#: information level wrote 195 MB for the cell's first hour).
LOG_LEVELS = ("warning", "information", "debug")


@dataclass(frozen=True)
class BatsimBinary:
    """A Batsim executable: its path and the version it prints."""

    path: str
    version: str

    @property
    def patched(self) -> bool:
        return self.version.endswith(PATCH_SUFFIX)

    @property
    def kind(self) -> str:
        """``patched`` or ``stock``: which cost model fits it (:mod:`.cost_model`)."""
        return "patched" if self.patched else "stock"

    def offers(self, option: str) -> bool:
        """Whether this binary takes ``option``: a patched one's ``--help`` lists it (one built from an
        earlier version of the patch lacks the later options); a stock one takes none of ours."""
        return self.patched and option in _help_options(self.path)

    def describe(self) -> str:
        kind = "patched: timer delays, energy from power states" if self.patched else "stock"
        return f"Batsim {self.version} at {self.path} ({kind})"


def binary_name(kind: str) -> str:
    """The command of the ``stock`` or ``patched`` build: its variable's value if set, else its name."""
    variable, name = BINARY_NAMES[kind]
    return os.environ.get(variable) or name


@cache
def batsim_binary(name: str) -> BatsimBinary:
    """The Batsim executable ``name`` (a path or a command on PATH), asked for its version."""
    path = shutil.which(name)
    if path is None:
        raise SimulationError(f"no '{name}' executable on PATH (Batsim 4.2.1 is needed; see docs/batsim.md)")
    return BatsimBinary(path, _ask(path, "--version").splitlines()[-1])


@cache
def _help_options(path: str) -> frozenset[str]:
    """The long options the Batsim at ``path`` lists in its ``--help``."""
    return frozenset(re.findall(r"--[a-z][a-z0-9-]*", _ask(path, "--help")))


def _ask(path: str, option: str) -> str:
    """What ``path option`` prints (Batsim's ``--version`` or ``--help``)."""
    try:
        answer = subprocess.run([path, option], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SimulationError(f"{path} {option}: {error}") from error
    if answer.returncode != 0 or not answer.stdout.strip():
        raise SimulationError(f"{path} {option} failed (status {answer.returncode}): is it Batsim?")
    return answer.stdout.strip()


def log_options(level: str) -> list[str]:
    """Batsim options for a log ``level`` of :data:`LOG_LEVELS` (SimGrid's own logs included)."""
    if level not in LOG_LEVELS:
        raise SimulationError(f"Batsim log level must be one of {', '.join(LOG_LEVELS)} (got {level!r})")
    if level == "information":
        return []  # Batsim's default
    if level == "debug":
        return ["-v", "debug"]
    return ["--sg-log", " ".join(f"{category}.thresh:warning" for category in LOG_CATEGORIES)]
