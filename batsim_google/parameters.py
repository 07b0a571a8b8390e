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
import re
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
#: The most machines a platform or cell may have: 10^6, 80 times the 2011 cell (12,583); a platform
#: of more would take gigabytes to write and SimGrid more to load.
MAX_MACHINES = 10**6
#: The largest ``arrival_scale`` (the factor of inter-arrival times): 10^6 stretches the whole cell's
#: arrivals onto one machine 80 times over; past it the first submissions would pass 2^42 s.
MAX_ARRIVAL_SCALE = 1e6
#: The largest seed: seeds are unsigned 64-bit integers (numpy's and polars' generators take them).
MAX_SEED = 2**64 - 1
#: The deepest nesting of arrays and objects a JSON or TOML input may have. The package's files nest
#: a few levels; a parser's memory or stack grows with the depth (a JSON stream's keeps the path
#: to each value), so a file of thousands of ``[`` is refused before it is parsed.
MAX_DEPTH = 64


class _BadJSON(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of a JSON text, refusing a key given twice (``json`` would keep the last one)."""
    data = dict(pairs)
    if len(data) < len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _BadJSON(f"key {repeated!r} is given twice in one object")
    return data


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects (tables) of a JSON or TOML text nest, brackets inside strings
    included: an upper bound, enough to refuse what would exhaust a parser's stack."""
    depth = deepest = 0
    for bracket in re.findall(r"[\[\]{}]", text):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_text(text: str, suffix: str) -> Any:
    """The data of a JSON (``suffix`` ``.json``) or TOML text, as every reader of the package takes
    them: no key given twice, no nesting past :data:`MAX_DEPTH`, integers only where a float can
    hold them. Errors are ValueErrors whose message the caller prefixes with the file."""
    if nesting_depth(text) > MAX_DEPTH:
        raise ValueError(f"arrays or objects nested more than {MAX_DEPTH} deep")
    try:
        if suffix == ".toml":
            return tomllib.loads(text)
        return json.loads(text, object_pairs_hook=_unique_keys, parse_int=_json_integer)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, _BadJSON) as error:
        raise ValueError(str(error)) from None


def _json_integer(text: str) -> int:
    value = int(text)
    if not _fits_a_float(value):
        raise _BadJSON(f"integer {text[:20]}{'...' if len(text) > 20 else ''} is too large for a number")
    return value


def _fits_a_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def read_parameter_file(path: str | Path) -> Any:
    """The data of a ``.toml`` or ``.json`` file (:func:`parse_text`); errors are ParameterErrors
    naming the file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ParameterError(f"{path}: a parameter file must end in .toml or .json")
    try:
        return parse_text(path.read_text(encoding="utf-8"), suffix)
    except (ValueError, OSError) as error:
        raise ParameterError(f"{path}: {error}") from error


def packaged_data(name: str) -> Any:
    """The data of the file ``name`` shipped in ``batsim_google/data`` (TOML or JSON, by its suffix)."""
    from importlib import resources

    text = resources.files("batsim_google.data").joinpath(name).read_text("utf-8")
    return parse_text(text, Path(name).suffix)


def load_json_law(path: str | Path | None, packaged: str, parse: Callable[[Any, str], T]) -> T:
    """``parse(data, source)`` of the JSON file ``path`` or, without one, of the law shipped as
    ``packaged``; a file that cannot be read or is not JSON is an InputFileError naming it."""
    if path is None:
        return parse(packaged_data(packaged), f"package data {packaged}")
    try:
        data = parse_text(Path(path).read_text(encoding="utf-8"), ".json")
    except (OSError, ValueError) as error:
        raise InputFileError(f"{path}: {error}") from error
    return parse(data, str(path))


def require(name: str, value: Any, ok: bool, expectation: str) -> None:
    if not ok:
        raise ParameterError(f"{name} must be {expectation} (got {value!r})")


def is_number(value: Any) -> bool:
    """A finite int or float (never a bool, nor an int too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) if isinstance(value, float) else _fits_a_float(value)


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
