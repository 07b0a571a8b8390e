"""Every check before a simulation starts, in one place: what cannot run is refused in one line,
what runs but likely not as meant is said.

Batsim itself takes any workload of its documented profile types, but a scheduler may reject some
of its jobs without a word: the Google-cell scheduler gives each task one machine (or a share of
it) and rejects jobs asking for several; batsched's planners (``easy_bf``, ``conservative_bf``,
``energy_bf*``) plan with walltimes and reject jobs without one. Users then see a run whose jobs
were all rejected. So the workloads are read first (streamed, they may hold millions of jobs) and
what will not run is said, with a scheduler that can run it. What Batsim would abort on (a profile
type it does not know, a platform without a master host, a platform SimGrid 3.32 does not load,
events of machines or jobs the inputs lack: :mod:`.run_inputs`) is refused in one line, and so is a
scheduler paired with inputs it cannot take (failures it would ignore, sleep states the platform
lacks) or with a front-end that cannot drive it (batsim-py).

Energy: Batsim's energy plugin (``-E``) needs power figures on every compute host; on a platform
without them Batsim dies with a backtrace. It is turned on by default only where the platform has
them, and an explicit request on a platform without them is refused.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from batsim_google.errors import InputFileError, ParameterError, SimulationError
from batsim_google.fitting.batsim_input import STORAGE_TYPES, read_workload_file
from batsim_google.platform.simgrid_xml import (
    PlatformHost,
    check_master,
    check_simgrid_accepts,
    energy_model_gap,
    in_batsim_order,
    read_hosts,
    sleep_pstates,
)
from batsim_google.scheduling.policy_api import BatsimNeeds
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.batsched_energy import check_energy_command
from batsim_google.simulation.batsim_binary import batsim_binary
from batsim_google.simulation.frontend import BatsimPyUnsupported
from batsim_google.simulation.run_inputs import check_run_inputs
from batsim_google.simulation.runner import FRONTENDS
from batsim_google.simulation.schedulers import BUILT_IN, COMMAND, OWN_FRONT_END, Scheduler
from batsim_google.simulation.settings import RunInputs, SimulationSettings

#: The front-end that starts Batsim itself (:mod:`.batsimpy_frontend`).
BATSIM_PY = FRONTENDS[1]

#: The profile types Batsim 4.2.1 executes (its documentation and profiles.cpp).
BATSIM_PROFILE_TYPES = frozenset(
    {
        "delay",
        "parallel",
        "parallel_homogeneous",
        "parallel_homogeneous_total",
        "composed",
        "parallel_homogeneous_pfs",
        "data_staging",
        "send",
        "recv",
        "smpi",
        "usage_trace",
    }
)
#: batsched's algorithms that plan with walltimes (they reject jobs without one).
BATSCHED_PLANNERS = frozenset(
    {
        "easy_bf",
        "easy_bf_fast",
        "easy_bf_plot_liquid_load_horizon",
        "conservative_bf",
        "energy_bf",
        "energy_bf_dicho",
        "energy_bf_idle_sleeper",
        "energy_bf_monitoring",
        "energy_bf_monitoring_inertial",
        "energy_bf_subpart_sleeper",
    }
)
#: batsched's default algorithm (no ``-v``).
BATSCHED_DEFAULT = "filler"
#: What to suggest for jobs on several machines.
SUGGEST_WIDE = "--scheduler command='batsched -v easy_bf -s {socket}' runs jobs on several machines (with walltimes)"
SUGGEST_NO_WALLTIME = (
    "the built-in scheduler (no --scheduler) or --scheduler command='batsched -v filler -s {socket}' "
    "run jobs without walltimes"
)


@dataclass
class WorkloadShape:
    """What a scheduler's limits depend on, counted over every job of the workloads."""

    jobs: int = 0
    #: jobs per resources requested (``res``)
    widths: collections.Counter = field(default_factory=collections.Counter)
    without_walltime: int = 0
    #: jobs on one machine without a ``cpu`` request (the Google-cell scheduler's share of a machine)
    without_cpu: int = 0
    #: jobs per profile type (``?`` for a profile the workload lacks)
    profile_types: collections.Counter = field(default_factory=collections.Counter)

    def wider_than(self, machines: int) -> int:
        return sum(count for res, count in self.widths.items() if res > machines)

    @property
    def widest(self) -> int:
        return max(self.widths, default=0)


def workload_shape(paths: Iterable[Path]) -> WorkloadShape:
    """Count the jobs of ``paths`` by width, walltime and profile type."""
    shape = WorkloadShape()
    for path in map(Path, paths):
        read = read_workload_file(path)
        res = pl.col("res")
        jobs = read.jobs.select(
            pl.when(res.is_not_null() & (res == res.floor())).then(res).otherwise(1.0).cast(pl.Int64).alias("width"),
            (pl.col("walltime").is_null() | (pl.col("walltime") <= 0)).alias("without_walltime"),
            "cpu",
            "profile",
        ).join(read.profiles.select("profile", "type"), on="profile", how="left")
        shape.jobs += jobs.height
        shape.widths.update(dict(jobs["width"].value_counts().iter_rows()))
        shape.without_walltime += int(jobs["without_walltime"].sum())
        shape.without_cpu += jobs.filter((pl.col("width") == 1) & pl.col("cpu").is_null()).height
        shape.profile_types.update(dict(jobs["type"].fill_null("?").value_counts().iter_rows()))
    return shape


def batsched_algorithm(command: Sequence[str]) -> str | None:
    """The algorithm a batsched command line runs (``-v NAME``, ``--variant NAME`` or
    ``--variant=NAME``; batsched's default without one), or None if it is not batsched."""
    if not command or not Path(command[0]).name.startswith("batsched"):
        return None
    for index, part in enumerate(command):
        if part in ("-v", "--variant") and index + 1 < len(command):
            return command[index + 1]
        if part.startswith("--variant="):
            return part.partition("=")[2]
    return BATSCHED_DEFAULT


def check_workloads(shape: WorkloadShape) -> None:
    """Refuse what Batsim 4.2.1 aborts on or cannot run at all, in one line."""
    unknown = sorted(set(shape.profile_types) - BATSIM_PROFILE_TYPES - {"?"})
    if unknown:
        raise InputFileError(
            f"{shape.profile_types[unknown[0]]} job(s) use profiles of type {unknown[0]!r}, which Batsim 4.2.1 does "
            f"not know (it takes {', '.join(sorted(BATSIM_PROFILE_TYPES))})"
        )
    if shape.profile_types["?"]:
        raise InputFileError(f"{shape.profile_types['?']} job(s) name a profile their workload does not define")


def check_storage(kind: str, shape: WorkloadShape, storage_hosts: int) -> None:
    """Refuse jobs of I/O profiles (or composed of them) that Batsim would abort on: on a platform
    without storage hosts, and for a scheduler that maps no storage labels unless Batsim can map
    them itself (``parallel_homogeneous_pfs`` with a single storage host)."""
    storage = {name: shape.profile_types[name] for name in STORAGE_TYPES if shape.profile_types[name]}
    if storage and not storage_hosts:
        raise InputFileError(
            f"{sum(storage.values())} of {shape.jobs} jobs have I/O profiles ({', '.join(storage)}), and the platform "
            "has no storage host (role storage): Batsim aborts on them"
        )
    automatic = storage_hosts == 1 and "data_staging" not in storage
    if storage and kind in OWN_FRONT_END and not automatic:
        kinds = ", ".join(f"{count} {name}" for name, count in storage.items())
        raise InputFileError(
            f"{sum(storage.values())} of {shape.jobs} jobs have I/O profiles ({kinds}): Batsim aborts unless the "
            "scheduler maps their storage labels to storage hosts, which this package's front-end does not; "
            "give a workload without them, or a scheduler that maps storage"
        )


def scheduler_limits(kind: str, target: object, shape: WorkloadShape, machines: int) -> list[str]:
    """Lines saying which jobs the scheduler will reject and what can run them."""
    if shape.jobs == 0:
        return [
            "the workloads hold no job: nothing to schedule (jobs a scheduler registers at run time, dynamic jobs, are its own)"
        ]
    lines = []
    if shape.wider_than(machines):
        lines.append(
            f"{shape.wider_than(machines)} of {shape.jobs} jobs ask for more machines than the platform's {machines} "
            f"(up to {shape.widest}): every scheduler rejects them; give a platform of {shape.widest} machines or more"
        )
    if kind == BUILT_IN and shape.wider_than(1):
        lines.append(
            f"{shape.wider_than(1)} of {shape.jobs} jobs ask for more than one machine (up to {shape.widest}): the "
            f"Google-cell scheduler rejects them (a task takes one machine or a share of it); {SUGGEST_WIDE}"
        )
    if kind == BUILT_IN and shape.without_cpu:
        lines.append(
            f"{shape.without_cpu} of {shape.jobs} jobs on one machine have no cpu request: the Google-cell scheduler places them "
            "without taking a share of a machine (they may share one), and the utilization counts only requested CPU"
        )
    algorithm = batsched_algorithm(list(target)) if kind == COMMAND else None
    if algorithm in BATSCHED_PLANNERS and shape.without_walltime:
        lines.append(
            f"{shape.without_walltime} of {shape.jobs} jobs have no walltime: batsched's {algorithm} rejects them; "
            + SUGGEST_NO_WALLTIME
        )
    return lines


def energy_choice(hosts: list[PlatformHost], requested: bool | None, platform: Path) -> tuple[bool, str]:
    """Whether Batsim's energy plugin runs (``requested`` None: where the platform has an energy
    model), and the line that says so; an explicit request on a platform without one is refused."""
    gap = energy_model_gap(hosts)
    if requested and gap:
        raise ParameterError(
            f"--energy-outputs: {platform} has no energy model ({gap}); leave the option out, or give its "
            "hosts wattage_per_state and wattage_off properties"
        )
    if requested is None:
        requested = gap is None
    if requested:
        return True, f"energy: measured by Batsim's energy plugin ({platform} gives its hosts power figures)"
    why = f"{platform}: {gap}" if gap else "--no-energy-outputs"
    return False, f"energy: not measured ({why})"


def sleep_states_gap(hosts: Sequence[PlatformHost]) -> str | None:
    """Which compute hosts lack Batsim's ``sleep_pstates`` (``"N without, e.g. NAME"``), None if none does."""
    missing = [host.name for host in hosts if host.computes and sleep_pstates(host.properties) is None]
    return f"{len(missing)} without, e.g. {missing[0]}" if missing else None


def refusal(needs: BatsimNeeds, platform: Path | None, has_events: bool, energy_outputs: bool) -> str | None:
    """Why a scheduler with these ``needs`` cannot run on these inputs, None if it can
    (``platform`` None: a generated cell, whose hosts all have sleep states)."""
    if has_events and not needs.failures:
        return "it cannot take machine failures (it would run jobs on failed machines): give it no failure scenario"
    if needs.sleep_states:
        gap = None if platform is None else sleep_states_gap(read_hosts(platform))
        if gap:
            return (
                f"it switches machines to sleep, and {platform} has hosts without sleep_pstates: it needs a "
                f"sleep_pstates property on every host ({gap})"
            )
        if not energy_outputs:
            return "it switches machines to sleep: it needs Batsim's energy plugin (energy outputs on)"
    return None


def check_batsim_py(config: PolicyConfig | None, inputs: RunInputs) -> None:
    """Refuse what batsim-py 1.0.5 cannot drive in Batsim 4.2.1 (:mod:`.batsimpy_frontend`;
    ``config``: the built-in policy's, None for a user's policy)."""
    if config is not None and config.restart != "none":
        raise BatsimPyUnsupported(
            f"restart {config.restart!r}: evicted tasks come back as new Batsim jobs (dynamic job "
            "registration), which batsim-py cannot do; use restart 'none' with batsim-py"
        )
    if inputs.events:
        raise BatsimPyUnsupported(
            "external events: after a failed machine's tasks are killed batsim-py raises on its "
            "machine_available event, and it never passes --forward-unknown-events (user kills)"
        )
    if len(inputs.workloads) != 1:
        raise BatsimPyUnsupported(f"batsim-py starts Batsim with exactly one workload (got {len(inputs.workloads)})")
    for path in (inputs.platform, *inputs.workloads):
        if any(character.isspace() for character in str(path)):
            raise BatsimPyUnsupported(f"{path}: batsim-py splits Batsim's command line on spaces")


@dataclass(frozen=True)
class Preflight:
    """What the checks found: whether Batsim's energy plugin runs, and the compute hosts (in
    Batsim's resource order)."""

    energy_outputs: bool
    hosts: tuple[PlatformHost, ...]

    @property
    def machines(self) -> int:
        return len(self.hosts)


def preflight(scheduler: Scheduler, inputs: RunInputs, settings: SimulationSettings) -> Preflight:
    """Refuse what cannot run at all (an InputFileError naming the file and line, a
    ParameterError naming the option), before anything is written; say whether energy is
    measured and which Batsim runs (``settings.say``), and warn of what the scheduler will reject
    and of inputs made for another platform (``settings.warn``)."""
    platform = inputs.platform
    hosts = read_hosts(platform)
    gap = energy_model_gap(hosts)
    if settings.frontend == BATSIM_PY and gap:  # it always runs Batsim with -E
        raise ParameterError(
            f"--frontend batsim-py runs Batsim with its energy plugin (-E), and {platform} has no energy model "
            f"({gap}): use --frontend pybatsim"
        )
    energy, line = energy_choice(hosts, settings.energy_outputs, platform)
    shape = workload_shape(inputs.workloads)
    check_simgrid_accepts(platform, smpi=shape.profile_types["smpi"] > 0)
    check_master(platform, hosts)
    check_workloads(shape)
    check_storage(scheduler.kind, shape, sum("storage" in host.roles for host in hosts))
    computing = tuple(in_batsim_order(hosts))
    machines = len(computing)
    settings.say(line)
    for limit in scheduler_limits(scheduler.kind, scheduler.target, shape, machines):
        settings.warn(limit)
    with contextlib.suppress(SimulationError):  # a missing binary is said when the simulation starts
        settings.say(batsim_binary(settings.batsim).describe())
    for warning in check_run_inputs(machines, platform, inputs.workloads, inputs.events):
        settings.warn(warning)
    reason = refusal(
        scheduler.needs(settings.timeout), platform, bool(inputs.events), energy or settings.frontend == BATSIM_PY
    )
    if reason:
        raise ParameterError(f"{describe(scheduler)} refused: {reason}")
    if scheduler.kind == COMMAND:  # batsched's energy variants: power figures the platform's
        check_energy_command(scheduler.target, platform)
    if settings.frontend == BATSIM_PY:
        if scheduler.kind != BUILT_IN:
            raise BatsimPyUnsupported(
                f"the {BATSIM_PY} front-end runs the built-in scheduler here, not a {scheduler.kind} one"
            )
        check_batsim_py(scheduler.config, inputs)
    return Preflight(energy, computing)


def describe(scheduler: Scheduler) -> str:
    """How a refusal names the scheduler."""
    if scheduler.kind == BUILT_IN:
        return f"the built-in scheduler (energy policy {scheduler.config.energy!r})"
    return f"{scheduler.kind} scheduler {scheduler.target!r}"
