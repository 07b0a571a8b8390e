"""The options of the Google-cell scheduler, checked once; ``run``'s options and campaigns' keys come from here."""

from __future__ import annotations

from dataclasses import dataclass, fields

from batsim_google.model.priority import GOOGLE_PRIORITY_LEVELS
from batsim_google.scheduling.placement import PLACEMENTS

RESTARTS = ("none", "immediate", "delayed")
ENERGY_POLICIES = ("always-on", "idle-sleep")
#: The types an option of :class:`PolicyConfig` accepts, by annotation.
_OPTION_TYPES = {
    "bool": ((bool,), "true or false"), "int": ((int,), "a whole number"), "float": ((int, float), "a number"),
    "str": ((str,), "a string"),
}


@dataclass(frozen=True)
class PolicyConfig:
    """The knobs of the cell; every field is checked, errors name it."""

    placement: str = "best-fit"
    cpu_overcommit: float = 1.0
    preemption: bool = True
    priority_levels: int = GOOGLE_PRIORITY_LEVELS
    restart: str = "immediate"
    restart_delay: float = 0.0
    max_restarts: int = 10
    resume: bool = False
    energy: str = "always-on"
    idle_timeout: float = 300.0
    wake_before_evicting: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):  # values from TOML or JSON options: of the field's type, or named
            value, (kinds, expected) = getattr(self, f.name), _OPTION_TYPES[f.type]
            if (isinstance(value, bool) and f.type != "bool") or not isinstance(value, kinds):
                raise ValueError(f"{f.name} must be {expected} (got {value!r})")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)} (got {self.placement!r})")
        if self.restart not in RESTARTS:
            raise ValueError(f"restart must be one of {', '.join(RESTARTS)} (got {self.restart!r})")
        if self.energy not in ENERGY_POLICIES:
            raise ValueError(f"energy must be one of {', '.join(ENERGY_POLICIES)} (got {self.energy!r})")
        if not self.cpu_overcommit >= 1.0:
            raise ValueError(f"cpu_overcommit must be >= 1 (got {self.cpu_overcommit})")
        if not self.restart_delay >= 0.0:
            raise ValueError(f"restart_delay must be >= 0 seconds (got {self.restart_delay})")
        if self.priority_levels < 0:
            raise ValueError(f"priority_levels must be >= 0 (got {self.priority_levels})")
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0 (got {self.max_restarts})")
        if not self.idle_timeout > 0.0:
            raise ValueError(f"idle_timeout must be > 0 seconds (got {self.idle_timeout})")
