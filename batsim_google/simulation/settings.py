"""What a simulation is given: its input files, and how to run it.

:class:`RunInputs` are the files Batsim reads (the platform, the workloads, the external events),
checked against each other before launch. :class:`SimulationSettings` is everything else a run
needs besides its scheduler: the wall-clock limit, which Batsim, whether Batsim's energy plugin
runs (``-E``, "energy outputs"; not the scheduler's energy policy, :data:`PolicyConfig.energy
<batsim_google.scheduling.policy_config.PolicyConfig>`), Batsim's log level, the protocol
library, the progress bar, and where what it says and warns of goes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from batsim_google.errors import ParameterError
from batsim_google.simulation.batsim_binary import LOG_LEVELS
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S, FRONTENDS, PYBATSIM_FRONTEND


@dataclass(frozen=True)
class RunInputs:
    """The files of one simulation: a SimGrid platform, Batsim workloads and Batsim events files."""

    platform: Path
    workloads: tuple[Path, ...]
    events: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "platform", Path(self.platform))
        object.__setattr__(self, "workloads", _paths(self.workloads, "workloads"))
        object.__setattr__(self, "events", _paths(self.events, "events"))

    def files(self) -> list[Path]:
        """Every input file (no output may overwrite one)."""
        return [self.platform, *self.workloads, *self.events]


def _paths(value: Sequence[str | Path], name: str) -> tuple[Path, ...]:
    if isinstance(value, str | Path):
        raise ParameterError(f"{name} must be a list of files (got the single {value!r})")
    return tuple(Path(path) for path in value)


@dataclass(frozen=True)
class SimulationSettings:
    """How to run one simulation.

    ``energy_outputs``: Batsim's energy plugin (``-E``), None: where the platform gives its hosts
    power figures (:func:`batsim_google.simulation.preflight.preflight` decides);
    ``frontend``: the protocol library of the built-in scheduler (:data:`~.runner.FRONTENDS`);
    ``stream_workload``: this package's pybatsim front-end registers the workloads' jobs at their
    submission times, Batsim holding only those submitted and not finished, rather than Batsim
    loading the workloads whole (:mod:`.streamed_submissions`; other schedulers load them); None:
    streamed where loaded whole they would take Batsim over half the memory available
    (:func:`.run.streams`);
    ``say``: what is told of the run before it starts (energy measured or not, which Batsim);
    ``warn``: what is told of inputs that run but likely not as meant.
    """

    timeout: float = DEFAULT_TIMEOUT_S
    batsim: str = "batsim"
    energy_outputs: bool | None = None
    batsim_log: str = "warning"
    progress: bool = False
    frontend: str = PYBATSIM_FRONTEND
    stream_workload: bool | None = None
    say: Callable[[str], None] = field(default=lambda line: None, compare=False)
    warn: Callable[[str], None] = field(default=warnings.warn, compare=False)

    def __post_init__(self) -> None:
        if self.frontend not in FRONTENDS:
            raise ParameterError(f"frontend must be one of {', '.join(FRONTENDS)} (got {self.frontend!r})")
        if self.batsim_log not in LOG_LEVELS:
            raise ParameterError(f"batsim_log must be one of {', '.join(LOG_LEVELS)} (got {self.batsim_log!r})")
        if not self.timeout > 0:
            raise ParameterError(f"timeout must be > 0 seconds (got {self.timeout})")
