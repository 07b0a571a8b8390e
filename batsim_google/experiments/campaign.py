"""Campaign files: platforms x workloads x failures x scheduler policies, once per seed.

A campaign (TOML) names its inputs in four tables, each entry under a name that is used in
folder names and reports (letters, digits, ``.``, ``_``, ``-``); relative file paths are taken
from the campaign file's folder::

    timeout = 600                  # wall-clock limit of one simulation, seconds (default 3600)
    warmup = 3600                  # metrics from this simulated second on (default 0)
    horizon = 86400                # every policy's scheduler stops here (default none; a policy's
                                   # own horizon wins); the metrics of every scheduler end here too
                                   # (the other kinds run to their end, measured over the same window)
    energy_outputs = true          # Batsim's -E (default true; the platforms need an energy model)
    skip_refused = false           # true: a scheduler is not run with the failures or platform it
                                   # cannot take (e.g. batsched with failures) instead of refusing

    [platforms]
    cell64 = {cell = 64}                        # the 2011 cell scaled to 64 machines, written here
    mine = {file = "my-platform.xml"}           # an existing platform (optional energy = FILE
                                                # for a cell: energy figures, see `platform --energy`)
    [workloads]
    google = {preset = "google", tasks = 1000, seeds = [1, 2, 3]}   # or model = FILE; or duration = S
    trace = {file = "converted.json"}           # an existing workload (one replication)
                                                # generated: optional grain = G, requests = FILE,
                                                # arrival_scale = F or "cell" (see WorkloadSpec),
                                                # walltime = "user-estimate" (generate --walltime),
                                                # warm_start = true (generate --warm-start)
    window = {trace = ["part-00000.csv.gz"], start = 0, end = 3600, seeds = [1]}
                                                # a window of the Google trace replayed on each
                                                # platform's machines (trace convert --sample-cell
                                                # N --seed S, with the initial state; walltime too)
    [failures]                                  # optional; default: none = {}
    none = {}
    drawn = {mtbf = 86400, mttr = 3600, horizon = 172800, seeds = [1]}   # mtbf_shape, mttr_shape too
    real = {file = "failures.jsonl"}            # any Batsim events file (failures, user kills)

    [policies.always-on]                        # options of `batsim-google run` (PolicyConfig fields)
    energy = "always-on"
    [policies.idle-sleep]
    energy = "idle-sleep"
    idle_timeout = 120
    [schedulers.filler]                         # any scheduler kind (see simulation/schedulers.py)
    pybatsim = "fillerSched"

Every combination of platform, workload, failures and scheduler (policies and schedulers) is simulated for every workload
seed x failure seed; a generated workload is written once per seed and machine count, failures
once per seed and platform size, and the policies all run on the same inputs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batsim_google.errors import ParameterError
from batsim_google.experiments.window import window_of
from batsim_google.generation.batsim_json import MAX_GRAIN
from batsim_google.generation.walltime import parse_walltime_mode
from batsim_google.model.presets import PRESETS
from batsim_google.parameters import (
    MAX_ARRIVAL_SCALE,
    MAX_MACHINES,
    MAX_SEED,
    MAX_TASKS,
    MAX_TIME_S,
    is_number,
    known_keys,
    read_parameter_file,
    table,
)
from batsim_google.platform.failures import LAW_KEYS, FailureLaw, law_value_problem
from batsim_google.platform.google_2011 import TRACE_DAYS
from batsim_google.platform.simgrid_xml import energy_model_gap, read_hosts
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.batsched_energy import check_energy_command
from batsim_google.simulation.policy_loader import LOAD_TIMEOUT_S
from batsim_google.simulation.preflight import refusal
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S
from batsim_google.simulation.schedulers import COMMAND, Scheduler, built_in, scheduler_entry, with_horizon
from batsim_google.units import DAY

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: ``arrival_scale = "cell"``: each platform carries the Google cell's load per machine.
CELL_LOAD = "cell"


@dataclass(frozen=True)
class PlatformSpec:
    """A scaled 2011 cell of ``cell`` machines (``energy``: figures file), or a platform ``file``."""

    name: str
    cell: int | None = None
    file: Path | None = None
    energy: Path | None = None


@dataclass(frozen=True)
class WorkloadSpec:
    """A workload ``file``, or one generated from a ``preset`` or ``model`` file, of ``tasks``
    tasks or ``duration`` seconds, once per seed.

    ``arrival_scale`` multiplies the inter-arrival times, as ``generate --arrival-scale`` does;
    ``"cell"`` (:data:`CELL_LOAD`) takes 12,583 / the platform's machines for each platform, so a
    whole-cell model such as the presets loads every platform as the Google cell was loaded.
    """

    name: str
    file: Path | None = None
    preset: str | None = None
    model: Path | None = None
    tasks: int | None = None
    duration: float | None = None
    seeds: tuple[int | None, ...] = (None,)
    grain: float | None = None
    requests: Path | None = None
    arrival_scale: float | str = 1.0
    #: The jobs' walltimes (``generate --walltime``): ``none``, ``exact``, a factor, ``user-estimate``.
    walltime: str = "none"
    #: Start in the model's steady state, the cell already loaded (``generate --warm-start``).
    warm_start: bool = False
    #: A window ``[start, end)`` of these trace parts, replayed on each platform's machines (a
    #: scaled replay, :mod:`batsim_google.trace.sampling`, one machine sample per seed).
    trace: tuple[Path, ...] = ()
    start: float = 0.0
    end: float | None = None


@dataclass(frozen=True)
class FailureSpec:
    """No events, an events ``file``, or failures drawn from ``law`` before ``horizon``, per seed."""

    name: str
    file: Path | None = None
    law: FailureLaw | None = None
    horizon: float = TRACE_DAYS * DAY
    seeds: tuple[int | None, ...] = (None,)


@dataclass(frozen=True)
class Campaign:
    platforms: tuple[PlatformSpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    failures: tuple[FailureSpec, ...]
    policies: tuple[tuple[str, PolicyConfig], ...]
    timeout: float = DEFAULT_TIMEOUT_S
    energy_outputs: bool = True
    #: Start of the metrics' window, simulated seconds (its end: each policy's horizon, or the run's end).
    warmup: float = 0.0
    schedulers: tuple[tuple[str, Scheduler], ...] = ()
    #: End of the metrics' window of the [schedulers.*] entries (a policy's: its own horizon).
    horizon: float | None = None
    #: (scheduler, platform, failures) pairings not run (``skip_refused``).
    skipped: frozenset[tuple[str, str, str]] = frozenset()

    def all_schedulers(self) -> tuple[tuple[str, Scheduler], ...]:
        """The policies as built-in schedulers, then the other schedulers."""
        return tuple((name, built_in(config)) for name, config in self.policies) + self.schedulers


def _path(raw: Mapping[str, Any], key: str, where: str, base: Path) -> Path | None:
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise ParameterError(f"{where}.{key} must be a file path (got {value!r})")
    path = Path(value) if Path(value).is_absolute() else base / value
    if not path.is_file():
        raise ParameterError(f"{where}.{key}: no such file {path}")
    return path.resolve()


def _positive(raw: Mapping[str, Any], key: str, where: str, integer: bool = False, most: float = math.inf) -> Any:
    """``raw[key]``, a positive number (an integer if ``integer``) at most ``most``, or None."""
    value = raw.get(key)
    if value is None:
        return None
    if not is_number(value) or not 0 < value <= most or (integer and not isinstance(value, int)):
        bound = f", at most {most:g}" if math.isfinite(most) else ""
        raise ParameterError(
            f"{where + '.' if where else ''}{key} must be a positive {'integer' if integer else 'number'}{bound} "
            f"(got {value!r})"
        )
    return value


def _machines(raw: Mapping[str, Any], where: str) -> int:
    """A cell's machine count, at most :data:`~batsim_google.parameters.MAX_MACHINES`."""
    return _positive(raw, "cell", where, integer=True, most=MAX_MACHINES)


def _seeds(raw: Mapping[str, Any], where: str) -> tuple[int, ...]:
    seeds = raw.get("seeds", [0])
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds)
    ):
        raise ParameterError(f"{where}.seeds must be a non-empty list of integers in 0..2^64-1 (got {seeds!r})")
    if len(set(seeds)) != len(seeds):
        raise ParameterError(f"{where}.seeds repeats a seed (got {seeds!r})")
    return tuple(seeds)


def _arrival_scale(raw: Mapping[str, Any], where: str) -> float | str:
    value = raw.get("arrival_scale", 1.0)
    if value == CELL_LOAD:
        return CELL_LOAD
    if not is_number(value) or not 0 < value <= MAX_ARRIVAL_SCALE:
        raise ParameterError(
            f'{where}.arrival_scale must be a positive number at most {MAX_ARRIVAL_SCALE:g} or "{CELL_LOAD}" '
            f"(got {value!r})"
        )
    return float(value)


def _one_of(raw: Mapping[str, Any], keys: tuple[str, ...], where: str) -> str:
    given = [key for key in keys if key in raw]
    if len(given) != 1:
        raise ParameterError(f"{where} needs exactly one of {', '.join(keys)} (got {', '.join(given) or 'none'})")
    return given[0]


def _platform(name: str, raw: Mapping[str, Any], where: str, base: Path) -> PlatformSpec:
    known_keys(raw, {"cell", "file", "energy"}, where)
    if _one_of(raw, ("cell", "file"), where) == "file":
        if "energy" in raw:
            raise ParameterError(f"{where}.energy applies to a cell, not to a platform file")
        return PlatformSpec(name, file=_path(raw, "file", where, base))
    return PlatformSpec(name, cell=_machines(raw, where), energy=_path(raw, "energy", where, base))


def _workload(name: str, raw: Mapping[str, Any], where: str, base: Path) -> WorkloadSpec:
    kind = _one_of(raw, ("file", "preset", "model", "trace"), where)
    if kind == "file":
        known_keys(raw, {"file"}, where)
        return WorkloadSpec(name, file=_path(raw, "file", where, base))
    walltime = str(raw.get("walltime", "none"))
    try:
        if parse_walltime_mode(walltime).name == "requested":
            raise ParameterError("requested is for SWF logs (swf convert)")
    except ValueError as error:
        raise ParameterError(f"{where}.walltime: {error}") from error
    if kind == "trace":
        known_keys(raw, {"trace", "start", "end", "seeds", "walltime", "grain"}, where)
        parts = raw["trace"]
        if not isinstance(parts, list) or not parts:
            raise ParameterError(f"{where}.trace must be a non-empty list of task_events part files (got {parts!r})")
        start = raw.get("start", 0)
        if not is_number(start) or start < 0:
            raise ParameterError(f"{where}.start must be a number >= 0 (got {start!r})")
        end = _positive(raw, "end", where)
        if end is not None and end <= start:
            raise ParameterError(f"{where}.end ({end}) must come after start ({start})")
        return WorkloadSpec(
            name,
            trace=tuple(_path({"trace": part}, "trace", where, base) for part in parts),
            start=float(start),
            end=None if end is None else float(end),
            seeds=_seeds(raw, where),
            grain=_positive(raw, "grain", where),
            walltime=walltime,
        )
    known_keys(
        raw,
        {
            "preset",
            "model",
            "tasks",
            "duration",
            "seeds",
            "grain",
            "requests",
            "arrival_scale",
            "walltime",
            "warm_start",
        },
        where,
    )
    warm_start = raw.get("warm_start", False)
    if not isinstance(warm_start, bool):
        raise ParameterError(f"{where}.warm_start must be true or false (got {warm_start!r})")
    if "preset" in raw and raw["preset"] not in PRESETS:
        raise ParameterError(f"{where}.preset must be one of {', '.join(PRESETS)} (got {raw['preset']!r})")
    _one_of(raw, ("tasks", "duration"), where)
    return WorkloadSpec(
        name,
        preset=raw.get("preset"),
        model=_path(raw, "model", where, base),
        tasks=_positive(raw, "tasks", where, integer=True, most=MAX_TASKS),
        duration=_positive(raw, "duration", where, most=MAX_TIME_S),
        seeds=_seeds(raw, where),
        grain=_positive(raw, "grain", where, most=MAX_GRAIN),
        requests=_path(raw, "requests", where, base),
        arrival_scale=_arrival_scale(raw, where),
        walltime=walltime,
        warm_start=warm_start,
    )


def _failures(name: str, raw: Mapping[str, Any], where: str, base: Path) -> FailureSpec:
    if "file" in raw:
        known_keys(raw, {"file"}, where)
        return FailureSpec(name, file=_path(raw, "file", where, base))
    if not raw:
        return FailureSpec(name)
    known_keys(raw, {*LAW_KEYS, "horizon", "seeds"}, where)
    law = {}
    for key, field in LAW_KEYS.items():
        if key in raw:
            problem = law_value_problem(field, raw[key])
            if problem:
                raise ParameterError(f"{where}.{key} {problem}")
            law[field] = float(raw[key])
    horizon = _positive(raw, "horizon", where, most=MAX_TIME_S)
    return FailureSpec(
        name,
        law=FailureLaw(**law),
        horizon=TRACE_DAYS * DAY if horizon is None else float(horizon),
        seeds=_seeds(raw, where),
    )


def _entries(data: Mapping[str, Any], key: str, parse, base: Path | None, required: bool = True) -> tuple:
    if key not in data:
        if required:
            raise ParameterError(f"[{key}] is missing: name at least one")
        return ()
    entries = table(data[key], key)
    if not entries and required:
        raise ParameterError(f"[{key}] is empty: name at least one")
    parsed = []
    for name, raw in entries.items():
        where = f"{key}.{name}"
        if not NAME.match(name):
            raise ParameterError(
                f"{where}: names are letters, digits, '.', '_' and '-', starting with a letter or digit"
            )
        raw = table(raw, where)
        parsed.append(parse(name, raw, where) if base is None else parse(name, raw, where, base))
    return tuple(parsed)


def campaign_from_mapping(data: Mapping[str, Any], base: Path) -> Campaign:
    """Build and check a campaign; relative paths are taken from ``base``."""
    known_keys(
        data,
        {
            "timeout",
            "energy_outputs",
            "warmup",
            "horizon",
            "platforms",
            "workloads",
            "failures",
            "policies",
            "schedulers",
            "skip_refused",
        },
        "the campaign",
    )
    skip_refused = data.get("skip_refused", False)
    if not isinstance(skip_refused, bool):
        raise ParameterError(f"skip_refused must be true or false (got {skip_refused!r})")
    energy_outputs = data.get("energy_outputs", True)
    if not isinstance(energy_outputs, bool):
        raise ParameterError(f"energy_outputs must be true or false (got {energy_outputs!r})")
    timeout = _positive(data, "timeout", "", most=MAX_TIMEOUT_S)
    warmup = 0.0 if data.get("warmup", 0) == 0 else float(_positive(data, "warmup", ""))
    horizon = _positive(data, "horizon", "")
    platforms = _entries(data, "platforms", _platform, base)
    workloads = _entries(data, "workloads", _workload, base)
    failures = _entries(data, "failures", _failures, base, required=False) or (FailureSpec("none"),)
    policies = _entries(
        data, "policies", lambda name, raw, where: (name, PolicyConfig.from_mapping(raw, where)), None, False
    )
    schedulers = _entries(
        data, "schedulers", lambda name, raw, where, base: (name, scheduler_entry(raw, where, base)), base, False
    )
    if not policies and not schedulers:
        raise ParameterError("[policies] and [schedulers] are missing or empty: name at least one scheduler")
    names = [name for name, _ in policies + schedulers]
    if len(set(names)) != len(names):
        raise ParameterError(
            f"a name is both in [policies] and [schedulers]: {sorted(n for n in names if names.count(n) > 1)[0]}"
        )
    if horizon is not None:  # for the built-in scheduler (the others run to their end)
        policies = tuple(
            (name, config if config.horizon else dataclasses.replace(config, horizon=float(horizon)))
            for name, config in policies
        )
        schedulers = tuple((name, with_horizon(scheduler, horizon)) for name, scheduler in schedulers)
    for name, config in policies:
        try:
            window_of(warmup, config.horizon)
        except ValueError as error:
            raise ParameterError(f"policies.{name}: {error}") from error
    try:
        window_of(warmup, horizon)
    except ValueError as error:
        raise ParameterError(str(error)) from error
    campaign = Campaign(
        platforms=platforms,
        workloads=workloads,
        failures=failures,
        policies=policies,
        timeout=DEFAULT_TIMEOUT_S if timeout is None else float(timeout),
        energy_outputs=energy_outputs,
        warmup=warmup,
        schedulers=schedulers,
        horizon=None if horizon is None else float(horizon),
    )
    named = [(f"policies.{name}", name, built_in(config)) for name, config in campaign.policies]
    named += [(f"schedulers.{name}", name, scheduler) for name, scheduler in campaign.schedulers]
    skipped = check_pairings(
        named, campaign.platforms, campaign.failures, campaign.energy_outputs, skip_refused, campaign.timeout
    )
    if campaign.energy_outputs:  # Batsim's -E dies on hosts without power figures
        for platform in campaign.platforms:
            gap = None if platform.file is None else energy_model_gap(read_hosts(platform.file))
            if gap:
                raise ParameterError(
                    f"platforms.{platform.name}: {platform.file} has no energy model ({gap}): set energy_outputs = false"
                )
    return dataclasses.replace(campaign, skipped=skipped)


def load_campaign(path: str | Path) -> Campaign:
    """Read a campaign file (``.toml``, or ``.json`` with the same structure); errors name it."""
    path = Path(path)
    try:
        data = read_parameter_file(path)
        return campaign_from_mapping(table(data, "the campaign"), path.resolve().parent)
    except ValueError as error:
        raise ParameterError(f"{path}: {error}") from error


def check_pairings(
    schedulers, platforms, failures, energy_outputs: bool, skip: bool = False, timeout: float = LOAD_TIMEOUT_S
) -> frozenset[tuple[str, str, str]]:
    """Refuse every pairing of a scheduler (``(where, name, scheduler)``) with failures or a
    platform it cannot run on (:func:`batsim_google.simulation.preflight.refusal`); with ``skip``,
    return them instead, as (scheduler, platform, failures) names, not to be run. A user's policy
    that does not load within ``timeout`` seconds (the campaign's) is refused."""
    skipped = set()
    for where, name, scheduler in schedulers:
        try:
            needs = scheduler.needs(timeout)
        except ParameterError as error:
            raise ParameterError(f"{where}: {error}") from None
        for platform in platforms:
            if scheduler.kind == COMMAND and platform.file is not None:  # batsched's power figures
                try:
                    check_energy_command(scheduler.target, platform.file)
                except ParameterError as error:
                    raise ParameterError(f"{where} on platforms.{platform.name}: {error}") from None
            for spec in failures:
                events = spec.file is not None or spec.law is not None
                reason = refusal(needs, platform.file, events, energy_outputs)
                if reason and not skip:
                    pairing = f"platforms.{platform.name}" + (f" with failures.{spec.name}" if events else "")
                    raise ParameterError(f"{where} on {pairing} refused: {reason}")
                if reason:
                    skipped.add((name, platform.name, spec.name))
    return frozenset(skipped)
