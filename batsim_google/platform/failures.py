"""Machine failures for resilience experiments, drawn from a failure law.

Every machine alternates up and down periods from t = 0, where it is up: it stays up for a time
between failures, then down for a repair time. Both are Weibull laws given by their mean and shape
(shape 1 is the memoryless exponential; a shape below 1 makes failures come in bursts). The
failures of each machine are independent; draws come from the seeded generator given, whole
arrays at a time.

Default law, and where it comes from:

- **mean time between failures, 28.9 days per machine**: the model paper (Da Costa et al. 2018,
  Section 3) cites "over 870 machine-related events on average each day" in the 2011 cell (from
  Liu and Cho 2012). Taking every such event as half of a REMOVE/ADD pair gives 435 removals a day
  over 12,583 machines: 12,583 / 435 days per machine. That is an upper bound on the removal rate
  (some events are UPDATEs) and removals include maintenance, so it overstates failures if
  anything.
- **mean repair time, 1 hour, exponential**: an assumption; no published figure is at hand.

Override any of them (``FailureLaw`` fields, or the ``failures`` command's options).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.units import DAY, HOUR

from batsim_google.errors import ParameterError
if TYPE_CHECKING:
    import numpy as np

    from batsim_google.platform.batsim_events import AvailabilityChanges

#: Machine-related events a day in the 2011 cell, as the model paper cites them (see the module).
GOOGLE_2011_MACHINE_EVENTS_PER_DAY = 870
#: Removals a day if every machine event is half of a REMOVE/ADD pair.
GOOGLE_2011_REMOVALS_PER_DAY = GOOGLE_2011_MACHINE_EVENTS_PER_DAY / 2
DEFAULT_MTBF = GOOGLE_2011_MACHINES / GOOGLE_2011_REMOVALS_PER_DAY * DAY
DEFAULT_MTTR = HOUR


@dataclass(frozen=True)
class FailureLaw:
    """Per machine: mean time between failures and mean repair time (s), Weibull shapes."""

    mean_time_between_failures: float = DEFAULT_MTBF
    time_between_failures_shape: float = 1.0
    mean_repair_time: float = DEFAULT_MTTR
    repair_time_shape: float = 1.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not (math.isfinite(value) and value > 0):
                raise ParameterError(f"{name} must be a positive number (got {value!r})")


def weibull_with_mean(mean: float, shape: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` Weibull draws of shape ``shape`` scaled so that their mean is ``mean``."""
    return mean / math.gamma(1.0 + 1.0 / shape) * rng.weibull(shape, size)


def draw_failures(
    machines: int, law: FailureLaw, horizon: float, rng: np.random.Generator
) -> AvailabilityChanges:
    """Failures and repairs of ``machines`` machines (Batsim resources 0..machines-1) in [0, horizon[."""
    import numpy as np  # here, so that the command line reads the default law without numpy

    from batsim_google.platform.batsim_events import availability_changes

    if machines < 1 or not horizon > 0:
        raise ParameterError(f"need machines >= 1 and horizon > 0 (got {machines}, {horizon})")
    resources, times, available = [], [], []
    active = np.arange(machines)
    clock = np.zeros(machines)
    while active.size:
        failure = clock[active] + weibull_with_mean(
            law.mean_time_between_failures, law.time_between_failures_shape, active.size, rng
        )
        repair = failure + weibull_with_mean(law.mean_repair_time, law.repair_time_shape, active.size, rng)
        failing = failure < horizon
        active, failure, repair = active[failing], failure[failing], repair[failing]
        repaired = repair < horizon
        resources += [active, active[repaired]]
        times += [failure, repair[repaired]]
        available += [np.zeros(active.size, bool), np.ones(repaired.sum(), bool)]
        active = active[repaired]
        clock[active] = repair[repaired]
    changes, _ = availability_changes(np.concatenate(resources), np.concatenate(times), np.concatenate(available))
    return changes
