"""Parameter files (TOML or JSON) and the checks their values share.

Every parameter file of the package (workload models with their laws and arrival profiles, energy
figures) is read and checked here, so that all of them accept the same two formats and fail with
messages that name the file and the parameter as the file spells it, e.g.
``classes[1].makespan.rates[0] must be > 0 (got -2.0)``. The files shipped in ``batsim_google/data``
and the JSON request and walltime laws are read here too.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from batsim_google.errors import InputFileError, ParameterError

T = TypeVar("T")

#: The longest simulated time any parameter or workload may give, seconds: 2^42 s (about 139,000
#: years). Batsim aborts on delays of 1e44 s and more; below 2^42 s SimGrid's clock, a double, keeps
#: times to the millisecond (doubles there are at most 2^-10 s apart). Durations, horizons and the
#: times of a workload's jobs beyond it are refused at once (see docs/generating.md).
MAX_TIME_S = float(2**42)
#: The most tasks a command generates: 10^9, 40 times the 2011 trace's month (25 million tasks);
#: more would run for hours and write a workload Batsim could not hold in memory.
MAX_TASKS = 10**9


def read_parameter_file(path: str | Path) -> Any:
    """The data of a ``.toml`` or ``.json`` file; errors are ParameterErrors naming the file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ParameterError(f"{path}: a parameter file must end in .toml or .json")
    try:
        text = path.read_text(encoding="utf-8")
        return tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, OSError) as error:
        raise ParameterError(f"{path}: {error}") from error


def packaged_data(name: str) -> Any:
    """The data of the file ``name`` shipped in ``batsim_google/data`` (TOML or JSON, by its suffix)."""
    from importlib import resources

    text = resources.files("batsim_google.data").joinpath(name).read_text("utf-8")
    return tomllib.loads(text) if name.endswith(".toml") else json.loads(text)


def load_json_law(path: str | Path | None, packaged: str, parse: Callable[[Any, str], T]) -> T:
    """``parse(data, source)`` of the JSON file ``path`` or, without one, of the law shipped as
    ``packaged``; a file that cannot be read or is not JSON is an InputFileError naming it."""
    if path is None:
        return parse(packaged_data(packaged), f"package data {packaged}")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputFileError(f"{path}: {error}") from error
    return parse(data, str(path))


def require(name: str, value: Any, ok: bool, expectation: str) -> None:
    if not ok:
        raise ParameterError(f"{name} must be {expectation} (got {value!r})")


def is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def number(mapping: Mapping[str, Any], key: str, where: str = "") -> float:
    """``mapping[key]`` as a finite float; ``where`` is the prefix naming the table (``classes[0].``)."""
    if key not in mapping:
        raise ParameterError(f"{where}{key} is missing")
    value = mapping[key]
    if not is_number(value):
        raise ParameterError(f"{where}{key} must be a finite number (got {value!r})")
    return float(value)


def numbers(mapping: Mapping[str, Any], key: str, where: str) -> tuple[float, ...]:
    """``mapping[key]`` as a non-empty list of finite floats."""
    if key not in mapping:
        raise ParameterError(f"{where}{key} is missing")
    values = mapping[key]
    if not isinstance(values, (list, tuple)) or not values:
        raise ParameterError(f"{where}{key} must be a non-empty list of numbers (got {values!r})")
    for index, value in enumerate(values):
        if not is_number(value):
            raise ParameterError(f"{where}{key}[{index}] must be a finite number (got {value!r})")
    return tuple(float(value) for value in values)


def table(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ParameterError(f"{name} must be a table/object")
    return value


def known_keys(mapping: Mapping[str, Any], allowed: set[str], name: str) -> None:
    unknown = set(mapping) - allowed
    if unknown:
        raise ParameterError(f"unknown key(s) in {name}: {', '.join(sorted(unknown))}")
