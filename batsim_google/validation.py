"""Checks of model-file values whose errors name the parameter as the file spells it.

Shared by the model, its laws and its arrival profile, so that every message reads the same way,
e.g. ``classes[1].makespan.rates[0] must be > 0 (got -2.0)``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping


class ModelError(ValueError):
    """An invalid model parameter; the message names it."""


def require(name: str, value: Any, ok: bool, expectation: str) -> None:
    if not ok:
        raise ModelError(f"{name} must be {expectation} (got {value!r})")


def is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def number(mapping: Mapping[str, Any], key: str, where: str) -> float:
    """``mapping[key]`` as a finite float; ``where`` is the prefix naming the table (``classes[0].``)."""
    if key not in mapping:
        raise ModelError(f"{where}{key} is missing")
    value = mapping[key]
    if not is_number(value):
        raise ModelError(f"{where}{key} must be a finite number (got {value!r})")
    return float(value)


def numbers(mapping: Mapping[str, Any], key: str, where: str) -> tuple[float, ...]:
    """``mapping[key]`` as a non-empty list of finite floats."""
    if key not in mapping:
        raise ModelError(f"{where}{key} is missing")
    values = mapping[key]
    if not isinstance(values, (list, tuple)) or not values:
        raise ModelError(f"{where}{key} must be a non-empty list of numbers (got {values!r})")
    for index, value in enumerate(values):
        if not is_number(value):
            raise ModelError(f"{where}{key}[{index}] must be a finite number (got {value!r})")
    return tuple(float(value) for value in values)


def table(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(f"{name} must be a table/object")
    return value


def known_keys(mapping: Mapping[str, Any], allowed: set[str], name: str) -> None:
    unknown = set(mapping) - allowed
    if unknown:
        raise ModelError(f"unknown key(s) in {name}: {', '.join(sorted(unknown))}")
