"""The workload model: arrivals and any number of task classes (Da Costa et al. 2018, Section 6).

A model is plain data, validated once on construction so that every later stage can trust it.
Errors name the offending parameter the way a model file spells it, e.g. ``classes[1].disparity``.

The paper's parameters are the defaults: inter-arrivals follow its Lomax law of mean ``dynamism``
and a class's makespans the log-normal of its ``mass`` and ``disparity``. A fitted model may name
another law instead (``interarrival``, a class's ``makespan``; see :mod:`.distributions`) and a
periodic arrival-rate profile (``arrival_profile``; see :mod:`.arrival_profile`), and a share of
submissions made at the same time as the previous one (``simultaneous``: a job's tasks submitted
together, zero gaps no continuous law has), or job-level arrivals (``jobs``: jobs of tasks, an
extension of the paper's model; see :mod:`.job_arrivals`). A class of
parallel jobs gives its ``width`` (processors per job) as an empirical law and may draw makespans
from separate laws per group of widths (``groups``, ``makespan_by_group``; see :mod:`.widths`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import tomli_w

from batsim_google.errors import ParameterError
from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.job_arrivals import JobArrivals, job_arrivals_from_mapping
from batsim_google.model.laws import Empirical, Law, LogNormal, Lomax, law_from_mapping
from batsim_google.model.priority import draw_class_priorities
from batsim_google.model.vocabulary import GOOGLE_PRIORITY_LEVELS, GROUPINGS, Grouping
from batsim_google.model.widths import group_bounds, group_names, is_group_name
from batsim_google.output_files import write_text
from batsim_google.parameters import MAX_TIME_S, known_keys, number, numbers, read_parameter_file, require, table

#: Shape of the Lomax (Pareto II) inter-arrival law: the paper's ``pareto(4, loc=-1)``, a Lomax(4)
#: of mean 1/3, hence its factor ``3 * dynamism`` (the scale is ``(shape - 1) * dynamism``).
INTERARRIVAL_SHAPE = 4.0


def lognormal_parameters(mass, disparity) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) of the log-normal whose mean is ``mass`` and median ``mass / disparity``.

    The median of a log-normal is exp(mu) and its mean exp(mu + sigma^2 / 2), so
    sigma^2 = 2 ln(mean / median) = 2 ln(disparity).
    """
    mass = np.asarray(mass, dtype=float)
    disparity = np.asarray(disparity, dtype=float)
    return np.log(mass / disparity), np.sqrt(2.0 * np.log(disparity))


__all__ = [
    "KINDS",
    "ClassRequests",
    "Kind",
    "TaskClass",
    "WorkloadModel",
    "in_ranges",
    "load_model",
    "model_from_mapping",
    "save_model",
]

Kind = Literal["task", "service"]
KINDS: tuple[Kind, ...] = ("task", "service")
FREQUENCY_TOLERANCE = 1e-6
#: The width of a class that gives none: every job on one resource.
ONE_RESOURCE = Empirical((1.0,), (1.0,))


@dataclass(frozen=True)
class ClassRequests:
    """A class's own (cpu, memory) request pairs and how often each was seen."""

    cpu: tuple[float, ...]
    memory: tuple[float, ...]
    count: tuple[float, ...]

    def check(self, where: str) -> None:
        for key in ("memory", "count"):
            values = list(getattr(self, key))
            require(f"{where}.{key}", values, len(values) == len(self.cpu) > 0, "one number per cpu request")
        for key in ("cpu", "memory"):
            for index, value in enumerate(getattr(self, key)):
                require(f"{where}.{key}[{index}]", value, 0.0 <= value <= 1.0, "in [0, 1] (of the largest machine)")
        for index, value in enumerate(self.count):
            require(f"{where}.count[{index}]", value, math.isfinite(value) and value > 0.0, "a finite number > 0")

    def to_mapping(self) -> dict[str, list[float]]:
        return {"cpu": list(self.cpu), "memory": list(self.memory), "count": list(self.count)}


@dataclass(frozen=True)
class TaskClass:
    """One class of tasks: its share of the arrivals, makespan law and priority law.

    ``kind`` says whether the class is made of finite *tasks* or long-running *services* (whose
    makespan is a lifetime); ``priority_rate`` is the rate of the truncated exponential priority
    law (spelled ``lambda`` in model files, as in the paper). Makespans are log-normal of mean
    ``mass`` and mean/median ``disparity``, unless ``makespan`` names another law; a class gives
    one or the other.

    ``width`` is the empirical law of the resources (processors) a job takes, one without it.
    With ``groups`` (``"width"`` or ``"pow2"``), a job whose width falls in a group listed in
    ``makespan_by_group`` draws its makespan from that group's law instead, the others from the
    class's law.

    ``cpu_range``, ``memory_range``: ``(low, high)``, the class's CPU and memory requests: its tasks
    draw their requests from their kind's request law restricted to ``low <= cpu < high`` (and the
    same of memory). A cell's running tasks are not a
    sample of its submissions: the long-lived ones, which a cell holds most of, request more. A
    fit splits the class holding the cell into such bands, each with its own lifetime and rate, so
    that each band's rate x mean lifetime holds the tasks and the CPU of its band at the start
    (:mod:`batsim_google.fitting.model_fit`).

    ``requests``: the class's own (cpu, memory) request pairs with their counts, drawn by its
    tasks (the warm start's and the arrivals') instead of the request law's. Within a band of CPU
    requests the tasks a cell holds are not its submissions either: a fit of a trace with a start
    gives each band the requests of the start's tasks in its band and priority group, so that the
    band's stationary tasks hold the start's memory as well as its CPU.

    ``priorities``: the law of the class's Google priorities (an empirical law over the levels
    0-11), drawn instead of the truncated exponential of rate ``priority_rate``, which is then
    not given. Google's priorities are not decreasing in density: a cell holds as many production
    tasks (9-11) as free ones (0-1), few of them submitted but long-lived, which no truncated
    exponential draws; a fit of the trace gives each class (split by priority group) its levels.

    ``per_machine``: a class of *resident* tasks, already running when a workload starts (the
    long-lived services a cell holds): how many there are per machine in the steady state. The warm
    start (:mod:`batsim_google.generation.warm_start`) puts that many per resource at time 0, on
    top of the stationary tasks of the classes' arrivals.
    """

    name: str
    kind: Kind
    frequency: float
    mass: float | None
    disparity: float | None
    priority_rate: float | None
    source: str = field(default="", compare=False)
    makespan: Law | None = None
    width: Empirical | None = None
    groups: Grouping | None = None
    makespan_by_group: Mapping[str, Law] = field(default_factory=dict)
    per_machine: float | None = None
    cpu_range: tuple[float, float] | None = None
    memory_range: tuple[float, float] | None = None
    priorities: Empirical | None = None
    requests: ClassRequests | None = None

    def check(self, where: str) -> None:
        if not self.name or any(c in self.name for c in '"\\!'):
            raise ParameterError(f"{where}.name must be a non-empty string without quotes, '\\' or '!'")
        if self.kind not in KINDS:
            raise ParameterError(f"{where}.kind must be one of {', '.join(KINDS)} (got {self.kind!r})")
        require(f"{where}.frequency", self.frequency, 0.0 <= self.frequency <= 1.0, "in [0, 1]")
        if self.makespan is None:
            require(f"{where}.mass", self.mass, self.mass is not None and self.mass > 0.0, "> 0")
            require(f"{where}.disparity", self.disparity, self.disparity is not None and self.disparity > 1.0, "> 1")
            require(f"{where}.mass", self.mass, self.mass / self.disparity <= MAX_TIME_S, "at most 2^42 s x disparity")
        elif self.mass is not None or self.disparity is not None:
            raise ParameterError(f"{where}: give mass and disparity (log-normal makespans) or makespan, not both")
        else:
            self.makespan.check(f"{where}.makespan")
        if self.priorities is None:
            require(
                f"{where}.lambda",
                self.priority_rate,
                self.priority_rate is not None and self.priority_rate > 0.0,
                "> 0",
            )
        elif self.priority_rate is not None:
            raise ParameterError(f"{where}: give lambda (the truncated exponential) or priorities, not both")
        else:
            self.priorities.check(f"{where}.priorities")
            for index, value in enumerate(self.priorities.values):
                require(
                    f"{where}.priorities.values[{index}]",
                    value,
                    value == int(value) and 0 <= value < GOOGLE_PRIORITY_LEVELS,
                    f"a Google priority, an integer in 0..{GOOGLE_PRIORITY_LEVELS - 1}",
                )
        if self.per_machine is not None:
            require(
                f"{where}.per_machine",
                self.per_machine,
                math.isfinite(self.per_machine) and self.per_machine >= 0.0,
                "a finite number >= 0",
            )
        for key, bounds in (("cpu_range", self.cpu_range), ("memory_range", self.memory_range)):
            if bounds is not None:
                require(
                    f"{where}.{key}", list(bounds), 0.0 <= bounds[0] < bounds[1], "[low, high] with 0 <= low < high"
                )
        if self.requests is not None:
            self.requests.check(f"{where}.requests")
        if self.width is not None:
            self.width.check(f"{where}.width")
            for index, value in enumerate(self.width.values):
                require(f"{where}.width.values[{index}]", value, value >= 1 and value == int(value), "an integer >= 1")
        self._check_groups(where)

    def _check_groups(self, where: str) -> None:
        if self.groups is None:
            if self.makespan_by_group:
                raise ParameterError(f"{where}.makespan_by_group needs {where}.groups")
            return
        if self.groups not in GROUPINGS:
            raise ParameterError(f"{where}.groups must be one of {', '.join(GROUPINGS)} (got {self.groups!r})")
        if self.width is None or not self.makespan_by_group:
            raise ParameterError(f"{where}.groups needs {where}.width and {where}.makespan_by_group")
        present = set(group_names(self.width.values, self.groups))
        for name, law in self.makespan_by_group.items():
            key = f'{where}.makespan_by_group["{name}"]'
            if not is_group_name(name, self.groups):
                example = (
                    'a width such as "12"'
                    if self.groups == "width"
                    else 'a power of 2 ("8") or the widths between two ("9-15")'
                )
                raise ParameterError(f"{key}: not a group of groups = {self.groups!r}: name {example}")
            if name not in present:
                raise ParameterError(f"{key}: no width of {where}.width is in this group")
            law.check(key)

    def width_law(self) -> Empirical:
        """The law of the resources a job takes."""
        return ONE_RESOURCE if self.width is None else self.width

    def makespan_laws(self) -> tuple[Law, ...]:
        """The class's makespan law, then its groups' laws (in ``makespan_by_group`` order)."""
        return (self.makespan_law(), *self.makespan_by_group.values())

    def makespan_law_index(self, widths: np.ndarray) -> np.ndarray:
        """For each width, the position in :meth:`makespan_laws` of the law of its makespan: its
        group's, or the class's (0) when the group has none."""
        if self.groups is None:
            return np.zeros(len(widths), dtype=np.intp)
        firsts = np.array(
            [int(name.split("-")[0]) for name in self.makespan_by_group]
        )  # a group's first width names it
        order = np.argsort(firsts)
        first = group_bounds(widths, self.groups)[0]
        position = np.minimum(np.searchsorted(firsts[order], first), len(firsts) - 1)
        return np.where(firsts[order][position] == first, order[position] + 1, 0)

    def makespan_law(self) -> Law:
        """The law makespans are drawn from."""
        if self.makespan is not None:
            return self.makespan
        mu, sigma = lognormal_parameters(self.mass, self.disparity)
        return LogNormal(float(mu), float(sigma))

    def to_mapping(self) -> dict[str, Any]:
        laws = (
            {"mass": self.mass, "disparity": self.disparity}
            if self.makespan is None
            else {"makespan": self.makespan.to_mapping()}
        )
        mapping = {
            "name": self.name,
            "kind": self.kind,
            "frequency": self.frequency,
            **laws,
        }
        if self.priorities is None:
            mapping["lambda"] = self.priority_rate
        else:
            mapping["priorities"] = {**self.priorities.to_mapping(), "values": [int(v) for v in self.priorities.values]}
        if self.width is not None:
            mapping["width"] = {**self.width.to_mapping(), "values": [int(v) for v in self.width.values]}
        if self.per_machine is not None:
            mapping["per_machine"] = self.per_machine
        if self.cpu_range is not None:
            mapping["cpu_range"] = list(self.cpu_range)
        if self.memory_range is not None:
            mapping["memory_range"] = list(self.memory_range)
        if self.requests is not None:
            mapping["requests"] = self.requests.to_mapping()
        if self.groups is not None:
            mapping["groups"] = self.groups
            mapping["makespan_by_group"] = {name: law.to_mapping() for name, law in self.makespan_by_group.items()}
        return mapping


@dataclass(frozen=True)
class WorkloadModel:
    """Arrivals (``dynamism``, the mean inter-arrival time in seconds, or an ``interarrival``
    law; optionally an arrival-rate profile and a share of ``simultaneous`` submissions) and the
    task classes. With ``jobs``, tasks arrive in jobs drawn from it instead (the task-level law
    stays, describing the stream of tasks)."""

    dynamism: float | None
    classes: tuple[TaskClass, ...]
    name: str = "custom"
    source: str = field(default="", compare=False)
    interarrival: Law | None = None
    arrival_profile: ArrivalProfile | None = None
    #: Share of the gaps between submissions that are 0; the others follow the inter-arrival law.
    simultaneous: float = 0.0
    jobs: JobArrivals | None = None

    def __post_init__(self) -> None:
        if self.interarrival is None:
            require("dynamism", self.dynamism, self.dynamism is not None and self.dynamism > 0.0, "> 0")
        elif self.dynamism is not None:
            raise ParameterError("give dynamism (the paper's Lomax inter-arrivals) or interarrival, not both")
        else:
            self.interarrival.check("interarrival")
        if self.arrival_profile is not None:
            self.arrival_profile.check("arrival_profile")
        require("simultaneous", self.simultaneous, 0.0 <= self.simultaneous < 1.0, "in [0, 1)")
        if not self.classes:
            raise ParameterError("classes must list at least one class")
        for index, task_class in enumerate(self.classes):
            task_class.check(f"classes[{index}]")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ParameterError(f"classes[].name must be unique (got {names})")
        total = math.fsum(c.frequency for c in self.classes)
        if abs(total - 1.0) > FREQUENCY_TOLERANCE:
            raise ParameterError(f"classes[].frequency must sum to 1 (got {total:.9g})")
        if self.jobs is not None:
            self.jobs.check("jobs", len(self.classes))
            if self.jobs.profile is not None:
                self._check_job_profile(self.jobs.profile)

    def _check_job_profile(self, profile: ArrivalProfile) -> None:
        """The jobs' profile divides the task-level one bin by bin: same period, same bins."""
        if self.arrival_profile is None:
            raise ParameterError("jobs.profile needs the model's arrival_profile (the task rates it divides)")
        require(
            "jobs.profile.period",
            profile.period,
            profile.period == self.arrival_profile.period,
            f"arrival_profile's period ({self.arrival_profile.period:g} s)",
        )
        require(
            "jobs.profile.rates",
            f"{len(profile.rates)} rates",
            len(profile.rates) == len(self.arrival_profile.rates),
            f"{len(self.arrival_profile.rates)} rates, one per bin of arrival_profile",
        )

    def interarrival_law(self) -> Law:
        """The law of the time between consecutive submissions (in normalized time with a profile).

        By default the paper's ``pareto(4, loc=-1) * 3 * dynamism``, a Lomax(4) of mean ``dynamism``.
        """
        if self.interarrival is not None:
            return self.interarrival
        return Lomax(INTERARRIVAL_SHAPE, (INTERARRIVAL_SHAPE - 1.0) * self.dynamism)

    def to_mapping(self) -> dict[str, Any]:
        """The model as a model file spells it (the inverse of :func:`model_from_mapping`)."""
        mapping: dict[str, Any] = {} if self.dynamism is None else {"dynamism": self.dynamism}
        if self.interarrival is not None:
            mapping["interarrival"] = self.interarrival.to_mapping()
        if self.arrival_profile is not None:
            mapping["arrival_profile"] = self.arrival_profile.to_mapping()
        if self.simultaneous:
            mapping["simultaneous"] = self.simultaneous
        mapping["classes"] = [c.to_mapping() for c in self.classes]
        if self.jobs is not None:
            mapping["jobs"] = self.jobs.to_mapping()
        return mapping

    def draw_priorities(self, class_index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One priority in ]0, 1] per entry of ``class_index``, from its class's priority law."""
        rates = np.array([np.nan if c.priority_rate is None else c.priority_rate for c in self.classes])
        return draw_class_priorities(rates, [c.priorities for c in self.classes], class_index, rng)

    @property
    def max_width(self) -> int:
        """The most resources a job of this model may take."""
        return int(max(max(c.width_law().values) for c in self.classes))


_CLASS_KEYS = {
    "name",
    "kind",
    "frequency",
    "mass",
    "disparity",
    "lambda",
    "priorities",
    "makespan",
    "width",
    "groups",
    "makespan_by_group",
    "per_machine",
    "cpu_range",
    "memory_range",
    "requests",
}
_MODEL_KEYS = {"dynamism", "classes", "name", "interarrival", "arrival_profile", "simultaneous", "jobs"}


def _optional_number(mapping: Mapping[str, Any], key: str, where: str, needed: bool) -> float | None:
    return number(mapping, key, where) if key in mapping or needed else None


def _empirical(raw: Any, where: str) -> Empirical | None:
    if raw is None:
        return None
    raw = table(raw, where)
    if raw.get("law") != Empirical.name:
        raise ParameterError(
            f"{where}.law must be {Empirical.name!r}, values with their weights (got {raw.get('law')!r})"
        )
    return Empirical.from_mapping(raw, where)


def in_ranges(
    cpu: np.ndarray, memory: np.ndarray, cpu_range: tuple[float, float] | None, memory_range: tuple[float, float] | None
) -> np.ndarray:
    """Which (cpu, memory) requests lie in both half-open ranges (None: any)."""
    kept = np.ones(np.shape(cpu), dtype=bool)
    for values, bounds in ((cpu, cpu_range), (memory, memory_range)):
        if bounds is not None:
            kept &= (np.asarray(values) >= bounds[0]) & (np.asarray(values) < bounds[1])
    return kept


def _range(raw: Any, where: str) -> tuple[float, float] | None:
    if raw is None:
        return None
    key = where.rsplit(".", 1)[-1]
    values = numbers({key: raw}, key, where.removesuffix(key))
    if len(values) != 2:
        raise ParameterError(f"{where} must be [low, high] (got {list(values)})")
    return values[0], values[1]


def _requests(raw: Any, where: str) -> ClassRequests | None:
    if raw is None:
        return None
    raw = table(raw, where)
    known_keys(raw, {"cpu", "memory", "count"}, where)
    return ClassRequests(*(tuple(numbers(raw, key, f"{where}.")) for key in ("cpu", "memory", "count")))


def _laws_by_group(raw: Any, where: str) -> dict[str, Law]:
    if raw is None:
        return {}
    return {str(name): law_from_mapping(law, f'{where}["{name}"]') for name, law in table(raw, where).items()}


def model_from_mapping(data: Mapping[str, Any], source: str = "") -> WorkloadModel:
    """Build and validate a model from the dictionary of a TOML or JSON model file."""
    if not isinstance(data, Mapping):
        raise ParameterError("a model must be a table/object with 'dynamism' and 'classes'")
    unknown = set(data) - _MODEL_KEYS
    if unknown:
        raise ParameterError(f"unknown model key(s): {', '.join(sorted(unknown))}")
    raw_classes = data.get("classes")
    if not isinstance(raw_classes, list):
        raise ParameterError("classes must be a list of tables/objects")
    classes = []
    for index, raw in enumerate(raw_classes):
        where = f"classes[{index}]."
        if not isinstance(raw, Mapping):
            raise ParameterError(f"classes[{index}] must be a table/object")
        known_keys(raw, _CLASS_KEYS, f"classes[{index}]")
        lognormal = "makespan" not in raw
        classes.append(
            TaskClass(
                name=str(raw.get("name", f"class{index}")),
                kind=raw.get("kind", "task"),
                frequency=number(raw, "frequency", where),
                mass=_optional_number(raw, "mass", where, lognormal),
                disparity=_optional_number(raw, "disparity", where, lognormal),
                priority_rate=_optional_number(raw, "lambda", where, "priorities" not in raw),
                priorities=_empirical(raw.get("priorities"), f"classes[{index}].priorities"),
                makespan=None if lognormal else law_from_mapping(raw["makespan"], f"classes[{index}].makespan"),
                width=_empirical(raw.get("width"), f"classes[{index}].width"),
                groups=raw.get("groups"),
                makespan_by_group=_laws_by_group(raw.get("makespan_by_group"), f"classes[{index}].makespan_by_group"),
                per_machine=_optional_number(raw, "per_machine", where, False),
                cpu_range=_range(raw.get("cpu_range"), f"classes[{index}].cpu_range"),
                memory_range=_range(raw.get("memory_range"), f"classes[{index}].memory_range"),
                requests=_requests(raw.get("requests"), f"classes[{index}].requests"),
            )
        )
    interarrival = data.get("interarrival")
    return WorkloadModel(
        dynamism=_optional_number(data, "dynamism", "", interarrival is None),
        classes=tuple(classes),
        name=str(data.get("name", "custom")),
        source=source,
        interarrival=None if interarrival is None else law_from_mapping(interarrival, "interarrival"),
        arrival_profile=(
            None
            if data.get("arrival_profile") is None
            else ArrivalProfile.from_mapping(data["arrival_profile"], "arrival_profile")
        ),
        simultaneous=number(data, "simultaneous", "") if "simultaneous" in data else 0.0,
        jobs=None if data.get("jobs") is None else job_arrivals_from_mapping(data["jobs"], "jobs", len(classes)),
    )


def load_model(path: str | Path) -> WorkloadModel:
    """Load a model from a ``.toml`` or ``.json`` file; errors name the file and the parameter."""
    path = Path(path)
    data = read_parameter_file(path)
    try:
        return model_from_mapping(data, source=str(path))
    except ParameterError as error:
        raise ParameterError(f"{path}: {error}") from error


def save_model(model: WorkloadModel, path: str | Path) -> None:
    """Write ``model`` as a ``.toml`` or ``.json`` model file that :func:`load_model` reads back."""
    path = Path(path)
    data = {"name": model.name, **model.to_mapping()}
    if path.suffix.lower() == ".toml":
        write_text(path, tomli_w.dumps(data))
    elif path.suffix.lower() == ".json":
        write_text(path, json.dumps(data, indent=1) + "\n")
    else:
        raise ParameterError(f"{path}: a model file must end in .toml or .json")
