"""Scheduler kinds: the built-in Google-cell policy, a pybatsim scheduler, any executable speaking
Batsim's protocol, or a user's policy on the core; what each needs of Batsim, and running one.

- ``policy``: the Google-cell scheduler with these :class:`PolicyConfig` options;
- ``pybatsim``: a pybatsim 3.2.1 scheduler, bundled (``fillerSched``, ``easyBackfill``,
  ``fcfsSchedSleep``, ...) or a file, with its ``options`` (the JSON of pybatsim's ``-o``);
- ``command``: an executable and its arguments; :data:`SOCKET` in them is replaced by the
  endpoint it must bind (e.g. ``["batsched", "-v", "easy_bf", "-s", "{socket}"]``);
- ``python``: a :class:`batsim_google.scheduling.policy_api.Policy` subclass
  (``module:Class`` or ``file.py:Class``) with its keyword ``options``, run through the pybatsim
  front-end like the built-in one (its ledger is written too).

What a scheduler needs (:class:`BatsimNeeds`) is the built-in's or the user policy's own
``needs``, known for the bundled pybatsim schedulers (:data:`PYBATSIM_NEEDS`), and declared by a
``needs`` table otherwise (by default: no compute sharing, no dynamic jobs, no sleep states, and
no failures: a scheduler is not trusted to kill what runs on a failed machine unless it says so).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from batsim_google.errors import ParameterError
from batsim_google.platform.simgrid_xml import compute_hosts, sleep_pstates
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_api import BatsimNeeds
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation import googleCell
from batsim_google.simulation.policy_loader import LOAD_TIMEOUT_S, policy_needs
from batsim_google.simulation.runner import OUTPUT_PREFIX, Simulation, pybatsim_scheduler

KINDS = ("policy", "pybatsim", "command", "python")
#: In a ``command``, replaced by the endpoint the scheduler binds (``tcp://127.0.0.1:PORT``, loopback only).
SOCKET = "{socket}"
#: What the bundled pybatsim schedulers need (others declare it). fillerSchedWithEvents is the
#: one that leaves failed machines alone; fcfsSchedSleep puts idle machines to sleep.
PYBATSIM_NEEDS = {
    "fillerSched": BatsimNeeds(failures=False),
    "fillerSchedWithEvents": BatsimNeeds(failures=True),
    "easyBackfill": BatsimNeeds(failures=False),
    "schedEasySjfBackfill": BatsimNeeds(failures=False),
    "fcfsSchedSleep": BatsimNeeds(sleep_states=True, failures=False),
}
NEEDS_KEYS = tuple(f.name for f in dataclasses.fields(BatsimNeeds))


@dataclass(frozen=True)
class Scheduler:
    """One scheduler of a kind (:data:`KINDS`): ``target`` is the PolicyConfig fields (policy),
    the scheduler's name or file (pybatsim), the command line (command) or ``module:Class``
    (python); ``declared`` the ``needs`` table given, if any."""

    kind: str
    target: object
    options: Mapping = field(default_factory=dict)
    declared: BatsimNeeds | None = None

    def label(self) -> str:
        """How the scheduler is named in a fingerprint: its kind, target and options."""
        return json.dumps([self.kind, self.target, self.options], sort_keys=True, default=str)

    def needs(self, timeout: float = LOAD_TIMEOUT_S) -> BatsimNeeds:
        """What it needs of Batsim (a user's policy's, read by loading it in a child process within
        ``timeout`` seconds: :func:`.policy_loader.policy_needs`)."""
        if self.kind == "policy":
            energy = self.target.get("energy", "always-on") != "always-on"
            return dataclasses.replace(CellPolicy.needs, sleep_states=energy)
        if self.kind == "python":
            return policy_needs(self.target, timeout)
        if self.declared is not None:
            return self.declared
        if self.kind == "pybatsim" and self.target in PYBATSIM_NEEDS:
            return PYBATSIM_NEEDS[self.target]
        return BatsimNeeds(failures=False)


def declared_needs(raw: Mapping, where: str) -> BatsimNeeds:
    """A ``needs`` table (BatsimNeeds fields, true or false); errors name ``where``."""
    unknown = sorted(set(raw) - set(NEEDS_KEYS))
    if unknown:
        raise ParameterError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(NEEDS_KEYS)})")
    for key, value in raw.items():
        if not isinstance(value, bool):
            raise ParameterError(f"{where}.{key} must be true or false (got {value!r})")
    return BatsimNeeds(**{"failures": False, **raw})  # not trusted with failures unless it says so


def refusal(needs: BatsimNeeds, platform: Path | None, has_events: bool, energy_outputs: bool) -> str | None:
    """Why a scheduler with these ``needs`` cannot run on these inputs, None if it can
    (``platform`` None: a generated cell, whose hosts all have sleep states)."""
    if has_events and not needs.failures:
        return "it cannot take machine failures (it would run jobs on failed machines): give it no failure scenario"
    if needs.sleep_states:
        if not energy_outputs:
            return "it switches machines to sleep: it needs Batsim's energy plugin (energy outputs on)"
        hosts = [] if platform is None else compute_hosts(platform)
        missing = [host.name for host in hosts if sleep_pstates(host.properties) is None]
        if missing:
            return f"it switches machines to sleep, but {platform} has hosts without sleep_pstates (e.g. {missing[0]})"
    return None


def batsim_options(needs: BatsimNeeds, has_events: bool) -> list[str]:
    """Batsim's options for a scheduler with these needs (events forwarded when it reads kills)."""
    options = ["--enable-compute-sharing"] if needs.compute_sharing else []
    if needs.dynamic_jobs:
        options += ["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse"]
    if needs.user_kills and has_events:
        options.append("--forward-unknown-events")
    return options


#: Kinds whose scheduler writes the simulated time it reached (the policy API's front-end does).
REPORTS_PROGRESS = frozenset({"policy", "python"})


def scheduler_command(
    scheduler: Scheduler, output: Path, progress_file: Path, timeout: float
) -> Callable[[str], list[str]]:
    """The scheduler's command line for an endpoint (not for the built-in kind: ``run`` does it)."""
    if scheduler.kind == "command":
        return lambda endpoint: [part.replace(SOCKET, endpoint) for part in scheduler.target]
    if scheduler.kind == "pybatsim":
        target = str(scheduler.target)
        if "/" in target or target.endswith(".py"):  # a file: pybatsim mistakes "./x.py" for a relative import
            target = str(Path(target).resolve())
        return pybatsim_scheduler(target, dict(scheduler.options), timeout_ms=int(timeout * 1000))
    options = {
        "policy_class": scheduler.target,
        "policy_options": dict(scheduler.options),
        "output": str(output / OUTPUT_PREFIX),
        "progress_file": str(progress_file),
    }
    return pybatsim_scheduler(googleCell.__file__, options, timeout_ms=int(timeout * 1000))


def external_simulation(
    scheduler: Scheduler,
    platform: Path,
    workloads: Sequence[Path],
    output: Path,
    events: Sequence[Path],
    progress_file: Path,
    *,
    timeout: float,
    batsim: str,
    energy: bool,
    batsim_log: str = "warning",
) -> Simulation:
    """The simulation of a scheduler of a kind other than the built-in one."""
    needs = scheduler.needs()
    return Simulation(
        platform=Path(platform),
        workloads=[Path(w) for w in workloads],
        output=output,
        scheduler=scheduler_command(scheduler, output, progress_file, timeout),
        events=[Path(e) for e in events],
        energy=energy,
        batsim_options=batsim_options(needs, bool(events)),
        timeout=timeout,
        batsim=batsim,
        batsim_log=batsim_log,
        scheduler_log=scheduler.kind != "pybatsim",  # pybatsim's bundled ones print their whole queue (stdout)
    )


def policy_scheduler(config: PolicyConfig) -> Scheduler:
    """The built-in kind with these options."""
    return Scheduler("policy", dataclasses.asdict(config))
