"""Power figures of platform hosts for Batsim's energy plugin (``batsim -E``).

Each host gets one computing pstate (SimGrid's ``idle:epsilon:full`` watts), one sleep pstate and
the two virtual pstates Batsim goes through to switch a host off and on; a virtual pstate computes
one flop, so its speed, 1 / duration, sets how long the switch takes.

The figures come from ``data/energy.toml`` (its comments give their source) and can be overridden
by a TOML or JSON file of the same shape, key by key: a reference machine whose watts scale with
CPU capacity, and optional tables per platform ID that replace the scaled figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batsim_google.errors import ParameterError
from batsim_google.parameters import known_keys, number, packaged_data, read_parameter_file, table

DEFAULT_FIGURES = "energy.toml"
TIME_KEYS = ("switch_off_seconds", "switch_on_seconds")
#: The longest switch, seconds: a day, far past any machine's boot (SimGrid runs a switch as one
#: flop at 1 / duration flop/s, and Batsim aborts on speeds far below that).
MAX_SWITCH_S = 86_400.0
#: The most watts a machine may draw in any state: a megawatt, far past any server (energies past
#: it would overflow the sums of a long run).
MAX_WATTS = 1e6


@dataclass(frozen=True)
class PowerProfile:
    """Watts of one host in each state, and the durations of its switches (seconds)."""

    idle: float
    epsilon: float
    full: float
    sleep: float
    off: float
    switch_off_seconds: float
    switch_off_watts: float
    switch_on_seconds: float
    switch_on_watts: float

    def scaled(self, factor: float) -> PowerProfile:
        """The same machine with every wattage multiplied by ``factor``; durations unchanged."""
        return PowerProfile(
            **{name: value if name in TIME_KEYS else value * factor for name, value in dataclasses.asdict(self).items()}
        )


KEYS = tuple(field.name for field in dataclasses.fields(PowerProfile))
#: Watts that must not decrease along this tuple: a host off draws no more than asleep, asleep no
#: more than idle; running a job adds epsilon - idle and load adds (full - epsilon) x load
#: (:mod:`batsim_google.experiments.load_energy`), neither of which may be negative.
POWER_ORDER = ("off", "sleep", "idle", "epsilon", "full")


def check_power_order(profile: PowerProfile, where: str) -> None:
    """Refuse figures out of :data:`POWER_ORDER` (``where`` names the table)."""
    for lower, higher in zip(POWER_ORDER, POWER_ORDER[1:]):
        low, high = getattr(profile, lower), getattr(profile, higher)
        if low > high:
            raise ParameterError(f"{where}{lower} ({low!r} W) must be <= {higher} ({high!r} W)")


@dataclass(frozen=True)
class EnergyModel:
    """A reference machine of CPU capacity ``reference_cpu`` and per-platform replacements."""

    reference: PowerProfile
    reference_cpu: float
    platforms: Mapping[str, Mapping[str, float]]
    source: str

    def profile(self, platform_id: str, cpu: float) -> PowerProfile:
        """Figures of a machine: the reference scaled by ``cpu / reference_cpu``, then the
        platform's own figures where it has some."""
        scaled = self.reference.scaled(cpu / self.reference_cpu)
        if platform_id not in self.platforms:
            return scaled
        profile = dataclasses.replace(scaled, **self.platforms[platform_id])
        check_power_order(profile, f"{self.source}: platforms.{platform_id}.")
        return profile


def _figures(given: Any, where: str, complete: bool) -> dict[str, float]:
    figures_table = table(given, where.rstrip("."))
    known_keys(figures_table, set(KEYS), where.rstrip("."))
    figures = {}
    for key in KEYS if complete else sorted(figures_table):
        value = number(figures_table, key, where)
        positive = key in TIME_KEYS
        if value < 0 or (positive and value == 0):
            raise ParameterError(f"{where}{key} must be {'> 0' if positive else '>= 0'} (got {value!r})")
        most, unit = (MAX_SWITCH_S, "s") if positive else (MAX_WATTS, "W")
        if value > most:
            raise ParameterError(f"{where}{key} must be at most {most:g} {unit} (got {value!r})")
        figures[key] = value
    return figures


def energy_model_from_mapping(data: Mapping[str, Any], source: str) -> EnergyModel:
    """Build and validate a complete model (``reference_cpu``, ``reference``, ``platforms``)."""
    unknown = set(data) - {"reference_cpu", "reference", "platforms"}
    if unknown:
        raise ParameterError(f"unknown key(s): {', '.join(sorted(unknown))}")
    reference_cpu = number(data, "reference_cpu")
    if reference_cpu <= 0:
        raise ParameterError(f"reference_cpu must be > 0 (got {reference_cpu!r})")
    platforms = data.get("platforms", {})
    if not isinstance(platforms, Mapping):
        raise ParameterError("platforms must be a table/object of platform IDs")
    reference = PowerProfile(**_figures(data.get("reference"), "reference.", complete=True))
    check_power_order(reference, "reference.")
    return EnergyModel(
        reference=reference,
        reference_cpu=reference_cpu,
        platforms={
            str(platform): _figures(figures, f"platforms.{platform}.", complete=False)
            for platform, figures in platforms.items()
        },
        source=source,
    )


def load_energy_model(path: str | Path | None = None) -> EnergyModel:
    """The default figures, overridden key by key by those of ``path`` when given."""
    data = packaged_data(DEFAULT_FIGURES)
    if path is None:
        return energy_model_from_mapping(data, f"package data {DEFAULT_FIGURES}")
    overrides = read_parameter_file(path)
    try:
        if not isinstance(overrides, Mapping):
            raise ParameterError("an energy file must be a table/object")
        if isinstance(overrides.get("reference"), Mapping):
            overrides = {**overrides, "reference": {**data["reference"], **overrides["reference"]}}
        return energy_model_from_mapping({**data, **overrides}, str(path))
    except ValueError as error:
        raise ParameterError(f"{path}: {error}") from error
