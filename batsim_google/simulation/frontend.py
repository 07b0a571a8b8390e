"""What the pybatsim and batsim-py front-ends share: Batsim's descriptions in the policy's terms.

Both libraries hand over the same Batsim JSON (a job's extra fields, walltime and profile; a
machine's platform properties; a job's final state by name), so reading it lives here once, with
the progress file that ``batsim-google run`` follows. A field that is not what the policy reads (a
CPU request "abc", a capacity of -1) is an InputFileError naming the job or the machine and the
field, not a bare ValueError from deep inside the scheduler.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.platform.simgrid_xml import compute_hosts, sleep_pstates
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_api import BatsimNeeds, Policy
from batsim_google.scheduling.policy_config import ALWAYS_ON, PolicyConfig
from batsim_google.scheduling.switch_guard import SwitchGuard, failure_times, switch_seconds
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.simulation.policy_loader import load_policy_class

#: Batsim's final job states (by name, the same in pybatsim and batsim-py) -> the policy's statuses.
END_STATUS = {
    "COMPLETED_SUCCESSFULLY": "success",
    "COMPLETED_WALLTIME_REACHED": "walltime",
    "COMPLETED_KILLED": "killed",
    "COMPLETED_FAILED": "failed",
}
PROGRESS_PERIOD_S = 1.0


class BatsimPyUnsupported(ParameterError):
    """A run that batsim-py 1.0.5 cannot drive in Batsim 4.2.1; the message says why."""


def end_status(state_name: str) -> str:
    """How the policy reads a job's end; any other final state is a failure."""
    return END_STATUS.get(state_name, "failed")


def job_request(
    job_id: str, subtime: float, fields: Mapping, walltime: float, delay: float, machines: int = 1
) -> JobRequest:
    """The policy's view of a workload job, from its extra fields (defaults when absent or null:
    a job without a CPU or memory request takes none, e.g. a converted SWF log's).

    A task's work is its profile's ``delay``; a service's is its lifetime, its ``walltime``.
    """
    kind = fields.get("kind") or "task"

    def given(name: str, default: float, low: float = -math.inf) -> float:
        value = fields.get(name)
        if value is None:
            return default
        if type(value) is float and math.isfinite(value) and value >= low:  # the usual case, at once
            return value
        return _number(value, f"workload job {job_id}", name, low)

    trace_machine = fields.get("trace_machine")
    if trace_machine is not None:
        number = _number(trace_machine, f"workload job {job_id}", "trace_machine", 0.0)
        if not number.is_integer():
            raise InputFileError(
                f"workload job {job_id}: trace_machine must be a machine number (got {trace_machine!r})"
            )
        trace_machine = int(number)
    return JobRequest(
        job_id=job_id,
        subtime=float(subtime),
        kind=kind,
        priority=given("priority", 0.5),
        cpu=given("cpu", 0.0, low=0.0),
        memory=given("memory", 0.0, low=0.0),
        work=float(walltime if kind == "service" else delay),
        machines=int(machines),
        trace_machine=trace_machine,
        initial=fields.get("initial") is not None,
        running_at_start=fields.get("initial") == "running",
    )


def _number(value, owner: str, field: str, low: float = -math.inf, above: bool = False) -> float:
    """``value`` of ``owner``'s ``field`` as a finite number, at least ``low`` (above it, if
    ``above``); otherwise an InputFileError naming both."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < low or (above and number == low):
        bound = "" if low == -math.inf else f" {'above' if above else 'at least'} {low:g}"
        raise InputFileError(f"{owner}: {field} must be a finite number{bound} (got {value!r})")
    return number


def machine_capacities(properties: Sequence[Mapping]) -> tuple[np.ndarray, np.ndarray]:
    """Each machine's ``cpu_capacity`` and ``memory_capacity`` (default 1, the largest machine), in
    resource-id order; a value that is not a positive finite number names the machine."""
    cpu, memory = [], []
    for machine, props in enumerate(properties):
        owner = f"machine {machine} of Batsim's platform{_host_name(props)}"
        cpu.append(_number(props.get("cpu_capacity", 1.0), owner, "cpu_capacity", 0.0, above=True))
        memory.append(_number(props.get("memory_capacity", 1.0), owner, "memory_capacity", 0.0, above=True))
    return np.array(cpu), np.array(memory)


def _host_name(properties: Mapping) -> str:
    name = properties.get("name") if isinstance(properties, Mapping) else None
    return f" ({name})" if name else ""


def sleep_pstate(properties: Mapping) -> int | None:
    """The sleep pstate of a machine (first of Batsim's ``sleep_pstates``), None without one."""
    pstates = sleep_pstates(properties)
    return None if pstates is None else pstates[0]


def require_sleep_pstates(properties: Sequence[Mapping], energy: str, where: str) -> None:
    """An energy policy switches machines to sleep: every host needs Batsim's ``sleep_pstates``."""
    if energy == ALWAYS_ON:
        return
    missing = [index for index, props in enumerate(properties) if sleep_pstates(props) is None]
    if missing:
        raise ParameterError(
            f"{where}: energy policy {energy!r} needs a sleep_pstates property on every host "
            f"({len(missing)} without, e.g. host {missing[0]})"
        )


def cell_policy(
    properties: Sequence[Mapping],
    config: PolicyConfig,
    platform: str | Path | None = None,
    events: Sequence[str | Path] = (),
) -> CellPolicy:
    """The policy over machines described by their platform properties, in resource-id order.

    ``cpu_capacity`` and ``memory_capacity`` default to 1 (the largest machine). With the
    ``platform`` file and the ``events`` files Batsim replays, the power manager starts no switch
    that a failure would interrupt (see :mod:`batsim_google.scheduling.switch_guard`).
    """
    cpu, memory = machine_capacities(properties)
    guard = None
    if platform is not None and events and config.energy != ALWAYS_ON:
        hosts = compute_hosts(platform)
        if len(hosts) != len(properties):
            raise InputFileError(f"{platform}: {len(hosts)} compute hosts, but Batsim has {len(properties)} machines")
        switch_on, switch_off = switch_seconds(hosts)
        guard = SwitchGuard(failure_times(events, len(properties)), switch_on, switch_off)
    return CellPolicy(cpu, memory, config, guard)


def user_policy(properties: Sequence[Mapping], spec: str, options: Mapping) -> Policy:
    """A user's policy (``module:Class`` or ``file.py:Class``) over the machines, with its options."""
    cpu, memory = machine_capacities(properties)
    try:
        return load_policy_class(spec)(cpu, memory, **options)
    except TypeError as error:
        raise ParameterError(f"policy {spec!r}: {error}") from error


@dataclass(frozen=True)
class FrontEndOptions:
    """The options of this package's pybatsim front-end (the JSON of pybatsim's ``-o``), written by
    the parent process and read by the scheduler's: ``policy`` (the built-in's PolicyConfig fields)
    or ``policy_class`` (``module:Class`` or ``file.py:Class``) with its ``policy_options``;
    ``output`` (prefix of the accounting files), ``progress_file`` (the simulated time reached, for
    progress bars), ``platform`` and ``events`` (the files Batsim replays: see :func:`cell_policy`),
    ``stream`` (the workloads a streamed run registers job by job, Batsim given stubs of their first
    jobs: :mod:`.streamed_submissions`), ``stream_to_sort`` (those of them not in submission
    order) and ``stream_profile_uses`` (the file of their profiles' uses, so that each is forgotten
    after its last job), ``verbose`` (pybatsim's own log)."""

    policy: Mapping = field(default_factory=dict)
    policy_class: str | None = None
    policy_options: Mapping = field(default_factory=dict)
    output: str | None = None
    progress_file: str | None = None
    platform: str | None = None
    events: Sequence[str] = ()
    stream: Sequence[str] = ()
    stream_to_sort: Sequence[str] = ()
    stream_profile_uses: str | None = None
    verbose: bool = False

    def to_json(self) -> dict:
        """The options as pybatsim passes them on (``-o``): the fields not left at their default."""
        default = FrontEndOptions()
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }

    @classmethod
    def from_mapping(cls, raw: Mapping) -> FrontEndOptions:
        """The options pybatsim hands the scheduler (any other key, pybatsim's own, is left out)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in raw.items() if name in names})

    def make_policy(self, properties: Sequence[Mapping]) -> Policy:
        """The policy over the machines Batsim describes: the user's class, or the built-in one."""
        if self.policy_class is not None:
            return user_policy(properties, self.policy_class, self.policy_options)
        config = PolicyConfig(**self.policy)
        require_sleep_pstates(properties, config.energy, "Batsim's platform")
        return cell_policy(properties, config, self.platform, self.events)


def missing_batsim_options(needs: BatsimNeeds, compute_sharing: bool, dynamic_jobs: bool) -> str | None:
    """What Batsim was not started with that the policy ``needs``, None if nothing."""
    if needs.compute_sharing and not compute_sharing:
        return "run Batsim with --enable-compute-sharing: tasks share machines"
    if needs.dynamic_jobs and not dynamic_jobs:
        return (
            "run Batsim with --enable-dynamic-jobs --acknowledge-dynamic-jobs --enable-profile-reuse: "
            "evicted and failed tasks come back as new jobs"
        )
    return None


class ProgressFile:
    """Writes the simulated time reached, at most once per second of wall time, for progress bars."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self._last = 0.0

    def report(self, now: float, final: bool = False) -> None:
        """Write ``now`` if a period has passed since the last write, or at the ``final`` one."""
        if self.path and (final or time.monotonic() - self._last >= PROGRESS_PERIOD_S):
            self._last = time.monotonic()
            self.path.write_text(f"{now}\n")
