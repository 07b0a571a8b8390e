"""The options of the Google-cell scheduler, declared and checked once.

Each field carries what ``run`` declares its command-line option with (help, flags, choices,
range) and what a policy of a campaign or of ``validate --policy`` is checked against.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any

from batsim_google.errors import ParameterError
from batsim_google.model.vocabulary import GOOGLE_PRIORITY_LEVELS
from batsim_google.parameters import MAX_SEED, MAX_TIME_S, known_keys

#: The placement policies, by name (:data:`batsim_google.scheduling.placement.PLACEMENTS`).
PLACEMENT_NAMES = ("first-fit", "best-fit")
RESTARTS = ("none", "immediate", "delayed")
#: The energy policies: machines always on, or idle ones put to sleep (:mod:`.power`).
ALWAYS_ON, IDLE_SLEEP = "always-on", "idle-sleep"
ENERGY_POLICIES = (ALWAYS_ON, IDLE_SLEEP)
#: The types an option of :class:`PolicyConfig` accepts, by annotation.
_OPTION_TYPES = {
    "bool": ((bool,), "true or false"),
    "int": ((int,), "a whole number"),
    "float": ((int, float), "a number"),
    "str": ((str,), "a string"),
}


def _option(
    default: Any,
    help: str | None = None,
    *,
    flags: tuple[str, ...] = (),
    choices: tuple[str, ...] = (),
    min: float | None = None,
    min_open: bool = False,
    max: float | None = None,
    least: float | None = None,
    unit: str = "",
) -> Any:
    """A field of :class:`PolicyConfig` and how it is offered: ``flags`` on the command line
    (default: ``--field-name``), ``choices``, values ``>= min`` (``> min`` if ``min_open``) and
    ``<= max`` in ``unit``, and, when ``least`` is given, 0 or at least ``least``; a time in
    seconds is at most :data:`~batsim_google.parameters.MAX_TIME_S`. Numbers are finite."""
    return field(
        default=default,
        metadata={
            "help": help,
            "flags": flags,
            "choices": choices,
            "min": min,
            "min_open": min_open,
            "max": MAX_TIME_S if max is None and unit == "seconds" else max,
            "least": least,
            "unit": unit,
        },
    )


@dataclass(frozen=True)
class PolicyConfig:
    """The knobs of the cell; every field is checked, errors name it.

    The defaults behave like Borg: the placement latency, the preemption delay, the free tier's room,
    over-commit and reclaims, and the groups' eviction rates are calibrated on the trace's shared parts
    (docs/faithful-replay.md, "Calibration"); 0 (or ``--no-free-tier-room``, an over-commit of 1) turns
    each off.
    """

    placement: str = _option(
        "best-fit",
        "Machine a task starts on: the first that fits, or the one it fills best.",
        choices=PLACEMENT_NAMES,
    )
    cpu_overcommit: float = _option(
        1.0, "CPU over-commit ratio (memory never is).", flags=("--overcommit",), min=1.0, max=100.0
    )
    placement_latency: float = _option(
        2.0,
        "Seconds from a task's (re)submission to the first time it can be placed: Borg's scheduling delay.",
        min=0,
        unit="seconds",
    )
    pass_tasks: int = _option(
        850,
        "Tasks (re)submitted within a pass (0.76 s from its first) that Borg placed within the placement latency; "
        "past them, the whole pass waits one more second per --pass-rate tasks (bench/borg_bursts.py).",
        min=0,
        max=10**9,
    )
    pass_rate: float = _option(
        641.0,
        "Tasks per second past --pass-tasks at which a pass's placement is delayed: in the trace, a pass's first "
        "placements came 1.54 s + max(0, tasks - 850) / 641 s after it, fitted on the 189 passes of 100+ tasks of "
        "every hour (docs/faithful-replay.md, 'Bursts and preemption'); 0 (or a placement latency of 0): no limit.",
        min=0,
    )
    reclaim_rate: float = _option(
        0.0,
        "Evictions of free-tier tasks (Google priorities 0-1) per 1,000 task-hours running, besides "
        "preemption: Borg reclaiming resources, which requests do not show; 0: none.",
        min=0,
    )
    reclaim_on_placement: float = _option(
        0.0,
        "Free-tier tasks evicted, on average, from the machine where the scheduler starts a task above "
        "the free tier (a seeded Poisson draw among those running there): Borg making room on the "
        "machine it chose; 0: none.",
        min=0,
    )
    free_tier_room: bool = _option(
        True,
        "Place a task above the free tier as if the free tier's requests were free room, past the "
        "machine's capacity: Borg runs the free tier on what it reclaims.",
        flags=("--free-tier-room/--no-free-tier-room",),
    )
    free_tier_overcommit: float = _option(
        1.48,
        "CPU over-commit up to which the free tier (Google priorities 0-1) is placed: a machine's requests, "
        "all tiers, within this times its CPU capacity (memory within its capacity), each free-tier task on "
        "the machine its requests fill least, spread as Borg spread it; Borg let the 99th percentile machine "
        "hold 1.48 times its CPU (bench/borg_overcommit.py). A warm start's tiers are all spread so. 1: the free "
        "tier is placed as the tiers above, within capacity, and a warm start by --placement.",
        min=1.0,
        max=100.0,
    )
    preempt_memory: float = _option(
        0.05,
        "Memory request (of the largest machine's) above which a task placed beside free-tier tasks may have "
        "to preempt them (see --preempt-share): Borg's machines seldom had such a hole free.",
        min=0,
    )
    preempt_share: float = _option(
        0.54,
        "Share of the placements of such tasks, above the free tier and beside free-tier tasks, that "
        "preempt: they wait the preemption delay, then evict free-tier tasks there (lowest priority "
        "first) until their memory request is freed; 0: none.",
        min=0,
        max=1,
    )
    free_tier_preempt_share: float = _option(
        0.82,
        "Share of the placements of free-tier tasks of its upper priority (Google 1) in a burst (tasks of one "
        "shape submitted within a second) asking more memory than CPU, beside tasks of its lower (Google 0), "
        "that preempt them: they wait the preemption delay, then evict those tasks there until their memory "
        "request is freed. In the trace, 81.8 % of 5,576 such placements evicted (docs/faithful-replay.md, "
        "'Bursts and preemption'); 0: none.",
        min=0,
        max=1,
    )
    free_tier_preempt_share_cpu: float = _option(
        0.090,
        "The same for those in a burst asking no more memory than CPU: 9.0 % of 4,131 in the trace; 0: none.",
        min=0,
        max=1,
    )
    free_tier_preempt_share_alone: float = _option(
        0.062,
        "The same for those submitted alone: 6.2 % of 689 in the trace, 3.3 to 7.8 % every hour; 0: none.",
        min=0,
        max=1,
    )
    pay_for_room: bool = _option(
        False,
        "With the free tier's room: a task above the free tier starts where it fits without evicting if it can, "
        "else in the free tier's room, evicting free-tier tasks there (lowest priority first) until the "
        "machine's requests are back within its capacity. Off by default: on the replays, requests against "
        "the published capacities do not say when Borg preempted (docs/faithful-replay.md, 'Bursts').",
        flags=("--pay-for-room/--no-pay-for-room",),
    )
    preemption_delay: float = _option(
        26.0,
        "Seconds a task that can start only by evicting waits (the median) before it evicts and starts: in the "
        "trace, Borg's placements that evicted came a median 28.2 s after their submission (with the placement "
        "latency), the others 1.9 s; 0: at once.",
        min=0,
        unit="seconds",
    )
    preemption_delay_spread: float = _option(
        0.0,
        "Scale of the logistic law each held task's preemption delay is drawn from (a seeded draw, at least 0), "
        "around --preemption-delay: Borg's placements that evicted (bursts under 100 tasks, waits 2 to 122 s) "
        "waited 18.7 / 28.0 / 38.6 s (10th / 50th / 90th percentile), 2 s + a logistic law of location 25.8 s "
        "and scale 5.1 s, nearer than a constant to each hour left out. 0 (the default): the constant delay; "
        "at 5.1, hour 3's free-tier median wait is missed on the whole cell and a sample, where the constant "
        "delay's single preemption instant makes its victims one pass that waits as Borg's did "
        "(docs/faithful-replay.md, 'Bursts and preemption').",
        min=0,
        unit="seconds",
    )
    machines_by_load: bool = _option(
        False,
        "A replay's machines of the trace get the cell's machines by rank, the most loaded (requested "
        "memory, then CPU) the largest, or in the order they first appear: the trace has no capacities.",
        flags=("--machines-by-load/--no-machines-by-load",),
    )
    eviction_rate_normal: float = _option(
        1.6,
        "Evictions of normal tasks (Google priorities 2-8) per 1,000 task-hours running, besides "
        "preemption: the trace's single evictions of them, which no placement explains; 0: none.",
        min=0,
    )
    eviction_rate_production: float = _option(
        0.32,
        "The same for production tasks (Google priority 9); 0: none.",
        min=0,
    )
    reclaim_seed: int = _option(0, "Seed of the reclaim evictions' draws.", min=0, max=MAX_SEED)
    preemption: bool = _option(
        True,
        "Evict lower priorities for a task that fits nowhere.",
        flags=("--preemption/--no-preemption",),
    )
    priority_levels: int = _option(
        GOOGLE_PRIORITY_LEVELS,
        "Evict only tasks of a lower level of ]0,1] cut in this many bands (Google's 12); 0: any lower priority.",
        min=0,
        max=1000,
    )
    restart: str = _option("immediate", "What evicted tasks do.", choices=RESTARTS)
    restart_delay: float = _option(0.0, "Seconds suspended before a 'delayed' restart.", min=0, unit="seconds")
    max_restarts: int = _option(
        10, "Restarts of a task at most; past them it is abandoned (not_restarted).", min=0, max=10**9
    )
    resume: bool = _option(False, "Restart with the work left, or all of it.", flags=("--resume/--from-scratch",))
    energy: str = _option(
        ALWAYS_ON,
        "Machines always on, or idle ones put to sleep (needs sleep pstates).",
        choices=ENERGY_POLICIES,
    )
    idle_timeout: float = _option(
        300.0,
        "Seconds idle before a machine sleeps (idle-sleep).",
        min=0,
        min_open=True,
        unit="seconds",
    )
    wake_before_evicting: bool = _option(
        True,
        "idle-sleep: a task that fits nowhere awake waits for a sleeping machine to wake, or evicts at once "
        "as the Google cell (which never sleeps) does.",
        flags=("--wake-before-evicting/--evict-before-waking",),
    )

    horizon: float = _option(
        0.0,
        "Simulated second at which the scheduler stops: running tasks are killed, the others rejected, "
        "all counted as censored; 0: none. A horizon below 1 s measures nothing (and Batsim aborts on one "
        "before its first step).",
        min=0,
        least=1.0,
        unit="seconds",
    )

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], where: str) -> PolicyConfig:
        """The policy of a table of its fields (a campaign's, ``validate --policy``'s); errors name
        ``where``."""
        known_keys(raw, {f.name for f in fields(cls)}, where)
        try:
            return cls(**raw)
        except (TypeError, ValueError) as error:
            raise ParameterError(f"{where}: {error}") from error

    def __post_init__(self) -> None:
        for f in fields(self):  # values from TOML or JSON options: of the field's type, or named
            value, (kinds, expected) = getattr(self, f.name), _OPTION_TYPES[f.type]
            if (isinstance(value, bool) and f.type != "bool") or not isinstance(value, kinds):
                raise ParameterError(f"{f.name} must be {expected} (got {value!r})")
        for f in fields(self):
            check_value(f, getattr(self, f.name))


def check_value(f: Field, value: Any) -> None:
    """Refuse a value of the field ``f`` (of its type) out of its choices or range, naming the field."""
    option = f.metadata
    unit = f" {option['unit']}" if option["unit"] else ""
    if option["choices"] and value not in option["choices"]:
        raise ParameterError(f"{f.name} must be one of {', '.join(option['choices'])} (got {value!r})")
    if f.type == "float" and not math.isfinite(value):
        raise ParameterError(f"{f.name} must be a finite number (got {value})")
    if option["min"] is not None and not (value > option["min"] if option["min_open"] else value >= option["min"]):
        raise ParameterError(
            f"{f.name} must be {'>' if option['min_open'] else '>='} {option['min']:g}{unit} (got {value})"
        )
    if option["max"] is not None and not value <= option["max"]:
        raise ParameterError(f"{f.name} must be <= {option['max']:.4g}{unit} (got {value})")
    if option["least"] is not None and 0 < value < option["least"]:
        raise ParameterError(f"{f.name} must be 0 (none) or >= {option['least']:g}{unit} (got {value:g})")
