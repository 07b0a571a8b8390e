"""Job-level arrivals: jobs of tasks, an extension of the model paper's task-level arrivals.

The cell's tasks do not arrive one by one: a *job* of many tasks is submitted, its tasks within
microseconds of each other. Neither the model paper nor Gaevoy et al. model that; this does.
Jobs arrive with their own inter-arrival law (in normalized time when the model has an arrival
profile, as task arrivals do) and a share of ``simultaneous`` job submissions (zero gaps). A job
has a class (the class most of its tasks belong to), drawn with the job classes' ``frequency``;
its class gives the law of its number of tasks (``tasks``, an empirical law) and the classes of
its tasks (``mix``: in the trace a large job mixes tasks ended by FINISH and by KILL). A job's
tasks share one priority, as every job of the trace does. Within a job, the gap between
consecutive task submissions is 0 with probability ``zero_spread``, else drawn from ``spread``.
With a rate profile of their own (``profile``, same bins as the model's task-level
``arrival_profile``), jobs arrive in its normalized time and their sizes follow the ratio of the
two profiles (:mod:`.job_sizes`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batsim_google.errors import ParameterError
from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.laws import Empirical, Law, law_from_mapping
from batsim_google.parameters import known_keys, number, numbers, require, table

__all__ = ["JobArrivals", "JobClass", "job_arrivals_from_mapping"]

SHARE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class JobClass:
    """The jobs whose tasks are mostly of one task class: their share of the jobs, the law of
    their number of tasks, and the shares of their tasks in each task class."""

    frequency: float
    tasks: Empirical
    mix: tuple[float, ...]

    def check(self, where: str, classes: int) -> None:
        require(f"{where}.frequency", self.frequency, 0.0 <= self.frequency <= 1.0, "in [0, 1]")
        self.tasks.check(f"{where}.tasks")
        for index, value in enumerate(self.tasks.values):
            require(f"{where}.tasks.values[{index}]", value, value >= 1 and value == int(value), "an integer >= 1")
        require(f"{where}.mix", list(self.mix), len(self.mix) == classes, f"{classes} shares, one per class")
        for index, share in enumerate(self.mix):
            require(f"{where}.mix[{index}]", share, 0.0 <= share <= 1.0, "in [0, 1]")
        total = math.fsum(self.mix)
        require(f"{where}.mix", f"sum {total:.9g}", abs(total - 1.0) <= SHARE_TOLERANCE, "summing to 1")

    def to_mapping(self) -> dict[str, Any]:
        tasks = {**self.tasks.to_mapping(), "values": [int(v) for v in self.tasks.values]}
        return {"frequency": self.frequency, "tasks": tasks, "mix": list(self.mix)}


@dataclass(frozen=True)
class JobArrivals:
    """Job inter-arrivals, one :class:`JobClass` per task class (same order), and the spread of a
    job's task submissions."""

    interarrival: Law
    classes: tuple[JobClass, ...]
    simultaneous: float = 0.0
    zero_spread: float = 1.0
    spread: Law | None = None
    #: The jobs' own rate profile; None: they arrive in the task-level profile's normalized time.
    profile: ArrivalProfile | None = None

    def check(self, where: str, classes: int) -> None:
        self.interarrival.check(f"{where}.interarrival")
        require(f"{where}.simultaneous", self.simultaneous, 0.0 <= self.simultaneous < 1.0, "in [0, 1)")
        require(f"{where}.zero_spread", self.zero_spread, 0.0 <= self.zero_spread <= 1.0, "in [0, 1]")
        if self.spread is None and self.zero_spread < 1.0:
            raise ParameterError(f"{where}.spread is needed when {where}.zero_spread < 1")
        if self.spread is not None:
            self.spread.check(f"{where}.spread")
        if self.profile is not None:
            self.profile.check(f"{where}.profile")
        if len(self.classes) != classes:
            raise ParameterError(
                f"{where}.classes must list {classes} job classes, one per class (got {len(self.classes)})"
            )
        for index, job_class in enumerate(self.classes):
            job_class.check(f"{where}.classes[{index}]", classes)
        total = math.fsum(c.frequency for c in self.classes)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            raise ParameterError(f"{where}.classes[].frequency must sum to 1 (got {total:.9g})")

    def mean_tasks(self) -> float:
        """The mean number of tasks per job."""
        return math.fsum(c.frequency * c.tasks.mean() for c in self.classes)

    def to_mapping(self) -> dict[str, Any]:
        mapping: dict[str, Any] = {"interarrival": self.interarrival.to_mapping()}
        if self.simultaneous:
            mapping["simultaneous"] = self.simultaneous
        mapping["zero_spread"] = self.zero_spread
        if self.spread is not None:
            mapping["spread"] = self.spread.to_mapping()
        if self.profile is not None:
            mapping["profile"] = self.profile.to_mapping()
        mapping["classes"] = [c.to_mapping() for c in self.classes]
        return mapping


_KEYS = {"interarrival", "simultaneous", "zero_spread", "spread", "profile", "classes"}
_CLASS_KEYS = {"frequency", "tasks", "mix"}


def _job_class(raw: Any, where: str) -> JobClass:
    raw = table(raw, where)
    known_keys(raw, _CLASS_KEYS, where)
    tasks = table(raw.get("tasks"), f"{where}.tasks")
    if tasks.get("law") != Empirical.name:
        raise ParameterError(f"{where}.tasks.law must be {Empirical.name!r} (got {tasks.get('law')!r})")
    return JobClass(
        number(raw, "frequency", f"{where}."),
        Empirical.from_mapping(tasks, f"{where}.tasks"),
        numbers(raw, "mix", f"{where}."),
    )


def job_arrivals_from_mapping(raw: Any, where: str, classes: int) -> JobArrivals:
    """The job arrivals a model file describes at ``where`` for a model of ``classes`` classes."""
    raw: Mapping[str, Any] = table(raw, where)
    known_keys(raw, _KEYS, where)
    if "interarrival" not in raw:
        raise ParameterError(f"{where}.interarrival is missing")
    raw_classes = raw.get("classes")
    if not isinstance(raw_classes, list):
        raise ParameterError(f"{where}.classes must be a list of tables/objects")
    jobs = JobArrivals(
        interarrival=law_from_mapping(raw["interarrival"], f"{where}.interarrival"),
        classes=tuple(_job_class(c, f"{where}.classes[{i}]") for i, c in enumerate(raw_classes)),
        simultaneous=number(raw, "simultaneous", f"{where}.") if "simultaneous" in raw else 0.0,
        zero_spread=number(raw, "zero_spread", f"{where}.") if "zero_spread" in raw else 1.0,
        spread=None if raw.get("spread") is None else law_from_mapping(raw["spread"], f"{where}.spread"),
        profile=None if raw.get("profile") is None else ArrivalProfile.from_mapping(raw["profile"], f"{where}.profile"),
    )
    jobs.check(where, classes)
    return jobs
