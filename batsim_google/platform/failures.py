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

from batsim_google.errors import ParameterError
from batsim_google.parameters import is_number
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES, TRACE_DAYS
from batsim_google.units import DAY, HOUR

if TYPE_CHECKING:
    import numpy as np

    from batsim_google.platform.batsim_events import AvailabilityChanges

#: Machine-related events a day in the 2011 cell, as the model paper cites them (see the module).
GOOGLE_2011_MACHINE_EVENTS_PER_DAY = 870
#: Removals a day if every machine event is half of a REMOVE/ADD pair.
GOOGLE_2011_REMOVALS_PER_DAY = GOOGLE_2011_MACHINE_EVENTS_PER_DAY / 2
DEFAULT_MTBF = GOOGLE_2011_MACHINES / GOOGLE_2011_REMOVALS_PER_DAY * DAY
DEFAULT_MTTR = HOUR
#: Most events one draw may make: 100 times what the whole 2011 cell's machine events amount to
#: over the trace (870 a day for 29 days, about 25,000), an events file of about 150 MB. A law and
#: horizon that draw more (a failure every minute on the whole cell, or an unbounded horizon) are
#: refused rather than left to fill the disk.
MAX_FAILURE_EVENTS = 100 * GOOGLE_2011_MACHINE_EVENTS_PER_DAY * TRACE_DAYS
#: The law's fields by their short names, as the ``failures`` command's options (``--mtbf-shape``)
#: and campaign files (``mtbf_shape``) spell them.
LAW_KEYS = {
    "mtbf": "mean_time_between_failures",
    "mtbf_shape": "time_between_failures_shape",
    "mttr": "mean_repair_time",
    "mttr_shape": "repair_time_shape",
}


@dataclass(frozen=True)
class FailureLaw:
    """Per machine: mean time between failures and mean repair time (s), Weibull shapes."""

    mean_time_between_failures: float = DEFAULT_MTBF
    time_between_failures_shape: float = 1.0
    mean_repair_time: float = DEFAULT_MTTR
    repair_time_shape: float = 1.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            problem = law_value_problem(name, value)
            if problem:
                raise ParameterError(f"{name} {problem}")


def law_value_problem(field: str, value: float) -> str | None:
    """Why ``value`` cannot be the ``field`` of a :class:`FailureLaw` (None if it can); callers
    put the name they give the field (``--mttr-shape``, ``failures.x.mttr_shape``) in front."""
    if not (is_number(value) and value > 0):
        return f"must be a positive number (got {value!r})"
    if field.endswith("_shape"):
        try:
            math.gamma(1.0 + 1.0 / value)
        except OverflowError:
            return f"must be large enough for the Weibull mean to be finite (got {value!r})"
    return None


def weibull_with_mean(mean: float, shape: float, size: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """``size`` Weibull draws of shape ``shape`` scaled so that their mean is ``mean``."""
    return mean / math.gamma(1.0 + 1.0 / shape) * rng.weibull(shape, size)


def check_horizon(horizon: float) -> None:
    """A horizon of drawn failures is a positive finite time (an infinite one never ends)."""
    if not (is_number(horizon) and horizon > 0):
        raise ParameterError(f"horizon must be a positive finite number of seconds (got {horizon!r})")


def draw_failures(machines: int, law: FailureLaw, horizon: float, rng: np.random.Generator) -> AvailabilityChanges:
    """Failures and repairs of ``machines`` machines (Batsim resources 0..machines-1) in [0, horizon[.

    Each round draws a block of up/down periods per machine still before the horizon: as many as
    the law expects to fit, then twice as many each round, so that a law with rare long periods
    and many short ones (a small shape) takes few rounds. More than :data:`MAX_FAILURE_EVENTS`
    events in all are refused.
    """
    import numpy as np  # here, so that the command line reads the default law without numpy

    from batsim_google.platform.batsim_events import availability_changes

    if machines < 1:
        raise ParameterError(f"need at least one machine to fail (got {machines})")
    check_horizon(horizon)
    cycle = law.mean_time_between_failures + law.mean_repair_time
    resources, times, available = [], [], []
    active = np.arange(machines)
    clock = np.zeros(machines)
    block = math.ceil(min(horizon / cycle, MAX_FAILURE_EVENTS)) + 1
    drawn = 0
    while active.size:
        block = min(block, MAX_FAILURE_EVENTS // (2 * active.size) + 1)  # a round holds at most ~MAX values
        up = weibull_with_mean(
            law.mean_time_between_failures, law.time_between_failures_shape, (active.size, block), rng
        )
        down = weibull_with_mean(law.mean_repair_time, law.repair_time_shape, (active.size, block), rng)
        # Per machine: failure, repair, failure, repair... times, increasing along a row.
        changes = clock[active, None] + np.cumsum(np.stack([up, down], axis=2).reshape(active.size, 2 * block), axis=1)
        before = changes < horizon
        rows, columns = np.nonzero(before)
        resources.append(active[rows])
        times.append(changes[rows, columns])
        available.append(columns % 2 == 1)
        drawn += rows.size
        if drawn > MAX_FAILURE_EVENTS:
            raise ParameterError(
                f"the failure law draws more than {MAX_FAILURE_EVENTS:,} events (the most allowed) on {machines} "
                f"machine(s) before the horizon ({horizon:g} s): give a longer mean time between failures "
                "(mtbf) or a shorter horizon"
            )
        going_on = before[:, -1]
        clock[active[going_on]] = changes[going_on, -1]
        active = active[going_on]
        block *= 2
    changes, _ = availability_changes(np.concatenate(resources), np.concatenate(times), np.concatenate(available))
    return changes
