"""The power figures batsched's energy variants plan with, derived from the platform.

batsched's ``energy_bf`` family reads one machine's figures from its ``--variant_options`` JSON
(batsched 1.4.0, ``EnergyBackfilling::generate_machine_informations``) and assumes every machine
alike: ``pstate_compute`` and ``pstate_sleep``, the pstates it switches machines to;
``power_compute``, ``power_idle`` and ``power_sleep``, the watts of a machine computing, idle and
asleep; ``time_switch_on``/``time_switch_off`` and ``energy_switch_on``/``energy_switch_off``, the
seconds and joules of a switch. All must be > 0. The platform says them all (:func:`host_figures`):

- the computing pstate is the host's lowest pstate not among its ``sleep_pstates``; its
  ``wattage_per_state`` gives ``power_idle`` (idle) and ``power_compute`` (full);
- the sleep pstate is the first of ``sleep_pstates`` (sleep:switch-off:switch-on); its idle
  watts are ``power_sleep``;
- a switch computes one flop on one core in its virtual pstate (as Batsim does it): it lasts
  1 / speed seconds and draws epsilon + (full - epsilon) / cores watts, the energy
  :mod:`batsim_google.experiments.pstate_energy` bills.

On a platform of several machine types the figures are those of its most common one (ties: the
first in resource order); Batsim still bills each machine its own. The monitoring variants also
need ``monitoring_period``, ``output_dir`` and (inertial, idle sleeper) ``trace_output_filename``:
by default the built-in scheduler's ``idle_timeout`` as period and idle time before sleeping, and
the run's folder for batsched's files. Power figures the user gives must be one machine type's of
the platform (:func:`check_power_figures`); other options pass as given. Options in a file
(``--variant_options_filepath``, which batsched reads instead) are checked, and the file used as
it is.
"""

from __future__ import annotations

import collections
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from batsim_google.errors import ParameterError
from batsim_google.parameters import parse_text
from batsim_google.platform.simgrid_xml import PlatformHost, compute_hosts, pstate_watts, sleep_pstates
from batsim_google.scheduling.policy_config import PolicyConfig

#: batsched's variants that plan with the machines' power figures.
ENERGY_VARIANTS = frozenset(
    {
        "energy_bf",
        "energy_bf_dicho",
        "energy_bf_monitoring",
        "energy_bf_monitoring_inertial",
        "energy_bf_idle_sleeper",
        "energy_bf_subpart_sleeper",
    }
)
#: Those of them with a monitoring period, and those that also write a trace.
MONITORING = frozenset(ENERGY_VARIANTS - {"energy_bf", "energy_bf_dicho"})
TRACING = frozenset(MONITORING - {"energy_bf_monitoring"})
POWER_FIELDS = (
    "power_compute",
    "power_idle",
    "power_sleep",
    "pstate_compute",
    "pstate_sleep",
    "time_switch_on",
    "time_switch_off",
    "energy_switch_on",
    "energy_switch_off",
)
OPTIONS_FLAG = "--variant_options"
OPTIONS_FILE_FLAG = "--variant_options_filepath"
#: batsched's trace of the inertial variants, in the run's folder.
TRACE_FILE = "batsched_trace.csv"
#: Relative tolerance of a given figure against the platform's: figures written with 5 digits pass.
TOLERANCE = 1e-4


def host_figures(host: PlatformHost) -> dict[str, float | int]:
    """batsched's power figures of one host (see the module); a host batsched cannot plan with
    (no sleep state, no power figures, a figure of 0) is a ParameterError naming it."""
    watts, sleeping = pstate_watts(host), sleep_pstates(host.properties)
    if watts is None or sleeping is None:
        raise ParameterError(
            f"host {host.name}: batsched's energy variants need wattage_per_state and sleep_pstates on every machine"
        )
    sleep, off, on = sleeping
    computing = next((p for p in range(len(watts)) if p not in sleeping), None)
    if computing is None or max(sleeping) >= min(len(watts), len(host.speeds)):
        raise ParameterError(f"host {host.name}: its sleep_pstates {sleeping} leave no computing pstate, or name none")

    def switch(pstate: int) -> tuple[float, float]:
        idle, epsilon, full = watts[pstate]
        seconds = 1.0 / host.speeds[pstate]
        return seconds, seconds * (epsilon + (full - epsilon) / host.cores)

    time_on, energy_on = switch(on)
    time_off, energy_off = switch(off)
    figures = {
        "power_compute": watts[computing][2],
        "power_idle": watts[computing][0],
        "power_sleep": watts[sleep][0],
        "pstate_compute": computing,
        "pstate_sleep": sleep,
        "time_switch_on": time_on,
        "time_switch_off": time_off,
        "energy_switch_on": energy_on,
        "energy_switch_off": energy_off,
    }
    zero = next(
        (name for name, value in figures.items() if name.startswith(("power", "time", "energy")) and not value > 0),
        None,
    )
    if zero:
        raise ParameterError(f"host {host.name}: batsched needs {zero} > 0, the platform gives {figures[zero]!r}")
    return figures


def power_figures(hosts: Sequence[PlatformHost]) -> dict[str, float | int]:
    """batsched's power figures of the most common machine type of ``hosts`` (see the module)."""
    if not hosts:
        raise ParameterError("batsched's energy variants need a platform with compute hosts")
    kinds = [tuple(host_figures(host).items()) for host in hosts]
    return dict(collections.Counter(kinds).most_common(1)[0][0])


def _matches(given: Mapping, figures: Mapping) -> bool:
    return all(math.isclose(float(given[name]), float(figures[name]), rel_tol=TOLERANCE) for name in given)


def check_power_figures(given: Mapping, hosts: Sequence[PlatformHost], platform: str | Path) -> None:
    """Refuse power figures (some of :data:`POWER_FIELDS`) that are no machine type's of the
    platform, in one line."""
    stated = {name: given[name] for name in POWER_FIELDS if name in given}
    bad = next((n for n, v in stated.items() if isinstance(v, bool) or not isinstance(v, int | float)), None)
    if bad:
        raise ParameterError(f"{OPTIONS_FLAG}: {bad} must be a number (got {stated[bad]!r})")
    kinds = {tuple(host_figures(host).items()) for host in hosts}
    if stated and not any(_matches(stated, dict(kind)) for kind in kinds):
        expected = power_figures(hosts)
        differing = ", ".join(
            f"{name} {stated[name]!r} (platform: {expected[name]!r})"
            for name in stated
            if not math.isclose(float(stated[name]), float(expected[name]), rel_tol=TOLERANCE)
        )
        raise ParameterError(
            f"{OPTIONS_FLAG}: the power figures are no machine's of {platform}: {differing}; "
            "leave them out to have them derived from the platform"
        )


def _options_file(command: Sequence[str]) -> Path | None:
    """The file ``--variant_options_filepath`` names in ``command`` (batsched reads it instead of
    ``--variant_options``), None without one."""
    for index, part in enumerate(command):
        if part == OPTIONS_FILE_FLAG and index + 1 < len(command):
            return Path(command[index + 1])
        if part.startswith(OPTIONS_FILE_FLAG + "="):
            return Path(part.partition("=")[2])
    return None


def _given_options(command: Sequence[str]) -> tuple[dict, int | None]:
    """The JSON of ``--variant_options`` (or of the file ``--variant_options_filepath`` names) in
    ``command`` and the index of its value (None: absent, or in a file)."""
    path = _options_file(command)
    if path is not None:
        try:
            options = parse_text(path.read_text(), ".json")
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ParameterError(f"{OPTIONS_FILE_FLAG} {path}: {error}") from None
        if not isinstance(options, dict):
            raise ParameterError(f"{OPTIONS_FILE_FLAG} {path} must hold a JSON object")
        return options, None
    for index, part in enumerate(command):
        if part == OPTIONS_FLAG and index + 1 < len(command):
            value, at = command[index + 1], index + 1
        elif part.startswith(OPTIONS_FLAG + "="):
            value, at = part.partition("=")[2], index
        else:
            continue
        try:
            options = parse_text(value, ".json")
        except ValueError as error:
            raise ParameterError(f"{OPTIONS_FLAG}: not JSON ({error})") from None
        if not isinstance(options, dict):
            raise ParameterError(f"{OPTIONS_FLAG} must be a JSON object (got {value!r})")
        return options, at
    return {}, None


def energy_variant(command: Sequence[str]) -> str | None:
    """The batsched energy variant ``command`` runs, None if it runs none."""
    from batsim_google.simulation.preflight import batsched_algorithm  # polars: only when a run is set up

    algorithm = batsched_algorithm(list(command))
    return algorithm if algorithm in ENERGY_VARIANTS else None


def variant_options(command: Sequence[str], platform: str | Path, output: Path) -> dict:
    """The ``--variant_options`` a batsched energy ``command`` runs with on ``platform``, its
    files in ``output``: the user's, checked, completed from the platform (see the module)."""
    variant = energy_variant(command)
    given, _ = _given_options(command)
    hosts = compute_hosts(platform)
    check_power_figures(given, hosts, platform)
    options = {name: value for name, value in power_figures(hosts).items() if name not in given}
    if variant in MONITORING:
        idle = PolicyConfig().idle_timeout
        options |= {"monitoring_period": idle, "output_dir": str(output)}
    if variant in TRACING:
        options |= {"idle_time_to_sedate": idle, "trace_output_filename": str(Path(output) / TRACE_FILE)}
    return options | given


def check_energy_command(command: Sequence[str], platform: str | Path) -> None:
    """Refuse, before launch, a batsched energy ``command`` whose power figures the platform
    contradicts or cannot give (nothing to check for another command)."""
    with_power_figures(command, platform, Path())


def with_power_figures(command: Sequence[str], platform: str | Path, output: Path) -> tuple[str, ...]:
    """``command`` with the :func:`variant_options` of its batsched energy variant in place of
    those given (unchanged if it runs none)."""
    if energy_variant(command) is None:
        return tuple(command)
    if _options_file(command) is not None:  # the user's file, checked: batsched reads it as it is
        variant_options(command, platform, output)  # figures the platform contradicts, first
        given, _ = _given_options(command)
        missing = [name for name in POWER_FIELDS if name not in given]
        if missing:
            raise ParameterError(
                f"{OPTIONS_FILE_FLAG} {_options_file(command)}: no {', '.join(missing)} (batsched needs them all); "
                f"leave them to be derived from the platform by giving {OPTIONS_FLAG} instead"
            )
        return tuple(command)
    text = json.dumps(variant_options(command, platform, output), sort_keys=True)
    _, at = _given_options(command)
    if at is None:
        return (*command[:1], OPTIONS_FLAG, text, *command[1:])
    replaced = list(command)
    replaced[at] = f"{OPTIONS_FLAG}={text}" if replaced[at].startswith(OPTIONS_FLAG + "=") else text
    return tuple(replaced)
