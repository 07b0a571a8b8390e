"""The workload model: a dynamism and any number of task classes (Da Costa et al. 2018, Section 6).

A model is plain data, validated once on construction so that every later stage can trust it.
Errors name the offending parameter the way a model file spells it, e.g. ``classes[1].disparity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from .config import finite_number, read_parameter_file

Kind = Literal["task", "service"]
KINDS: tuple[Kind, ...] = ("task", "service")
FREQUENCY_TOLERANCE = 1e-6


class ModelError(ValueError):
    """An invalid model parameter; the message names it."""


@dataclass(frozen=True)
class TaskClass:
    """One class of tasks: its share of the arrivals, makespan law and priority law.

    ``kind`` says whether the class is made of finite *tasks* or long-running *services* (whose
    makespan is a lifetime); ``priority_rate`` is the rate of the truncated exponential priority
    law (spelled ``lambda`` in model files, as in the paper).
    """

    name: str
    kind: Kind
    frequency: float
    mass: float
    disparity: float
    priority_rate: float
    source: str = field(default="", compare=False)

    def check(self, where: str) -> None:
        if not self.name or any(c in self.name for c in '"\\!'):
            raise ModelError(f"{where}.name must be a non-empty string without quotes, '\\' or '!'")
        if self.kind not in KINDS:
            raise ModelError(f"{where}.kind must be one of {', '.join(KINDS)} (got {self.kind!r})")
        _require(f"{where}.frequency", self.frequency, 0.0 <= self.frequency <= 1.0, "in [0, 1]")
        _require(f"{where}.mass", self.mass, self.mass > 0.0, "> 0")
        _require(f"{where}.disparity", self.disparity, self.disparity > 1.0, "> 1")
        _require(f"{where}.lambda", self.priority_rate, self.priority_rate > 0.0, "> 0")


@dataclass(frozen=True)
class WorkloadModel:
    """Dynamism (mean inter-arrival time, seconds) and the task classes."""

    dynamism: float
    classes: tuple[TaskClass, ...]
    name: str = "custom"
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _require("dynamism", self.dynamism, self.dynamism > 0.0, "> 0")
        if not self.classes:
            raise ModelError("classes must list at least one class")
        for index, task_class in enumerate(self.classes):
            task_class.check(f"classes[{index}]")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ModelError(f"classes[].name must be unique (got {names})")
        total = math.fsum(c.frequency for c in self.classes)
        if abs(total - 1.0) > FREQUENCY_TOLERANCE:
            raise ModelError(f"classes[].frequency must sum to 1 (got {total:.9g})")

    def to_mapping(self) -> dict[str, Any]:
        """The model as a model file spells it (the inverse of :func:`model_from_mapping`)."""
        return {
            "dynamism": self.dynamism,
            "classes": [
                {
                    "name": c.name,
                    "kind": c.kind,
                    "frequency": c.frequency,
                    "mass": c.mass,
                    "disparity": c.disparity,
                    "lambda": c.priority_rate,
                }
                for c in self.classes
            ],
        }


def _require(name: str, value: Any, ok: bool, expectation: str) -> None:
    if not ok:
        raise ModelError(f"{name} must be {expectation} (got {value!r})")


_CLASS_KEYS = {"name", "kind", "frequency", "mass", "disparity", "lambda"}
_MODEL_KEYS = {"dynamism", "classes", "name"}


def _number(mapping: Mapping[str, Any], key: str, where: str) -> float:
    return finite_number(mapping, key, where, ModelError)


def model_from_mapping(data: Mapping[str, Any], source: str = "") -> WorkloadModel:
    """Build and validate a model from the dictionary of a TOML or JSON model file."""
    if not isinstance(data, Mapping):
        raise ModelError("a model must be a table/object with 'dynamism' and 'classes'")
    unknown = set(data) - _MODEL_KEYS
    if unknown:
        raise ModelError(f"unknown model key(s): {', '.join(sorted(unknown))}")
    raw_classes = data.get("classes")
    if not isinstance(raw_classes, list):
        raise ModelError("classes must be a list of tables/objects")
    classes = []
    for index, raw in enumerate(raw_classes):
        where = f"classes[{index}]."
        if not isinstance(raw, Mapping):
            raise ModelError(f"classes[{index}] must be a table/object")
        unknown = set(raw) - _CLASS_KEYS
        if unknown:
            raise ModelError(f"unknown key(s) in classes[{index}]: {', '.join(sorted(unknown))}")
        name = raw.get("name", f"class{index}")
        classes.append(
            TaskClass(
                name=str(name),
                kind=raw.get("kind", "task"),
                frequency=_number(raw, "frequency", where),
                mass=_number(raw, "mass", where),
                disparity=_number(raw, "disparity", where),
                priority_rate=_number(raw, "lambda", where),
            )
        )
    return WorkloadModel(
        dynamism=_number(data, "dynamism", ""),
        classes=tuple(classes),
        name=str(data.get("name", "custom")),
        source=source,
    )


def load_model(path: str | Path) -> WorkloadModel:
    """Load a model from a ``.toml`` or ``.json`` file; errors name the file and the parameter."""
    path = Path(path)
    try:
        data = read_parameter_file(path)
    except ValueError as error:
        raise ModelError(str(error)) from error
    try:
        return model_from_mapping(data, source=str(path))
    except ModelError as error:
        raise ModelError(f"{path}: {error}") from error
