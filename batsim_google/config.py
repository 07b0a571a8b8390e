"""Parameter files (TOML or JSON) and the checks their numbers share.

Every parameter file of the package (workload models, energy figures) is read here, so that all of
them accept the same two formats and fail with messages that name the file and the parameter.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any, Mapping


def read_parameter_file(path: str | Path) -> Any:
    """The data of a ``.toml`` or ``.json`` file; errors are ValueErrors naming the file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ValueError(f"{path}: a parameter file must end in .toml or .json")
    try:
        text = path.read_text(encoding="utf-8")
        return tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, OSError) as error:
        raise ValueError(f"{path}: {error}") from error


def finite_number(
    mapping: Mapping[str, Any], key: str, where: str = "", error: type[ValueError] = ValueError
) -> float:
    """``mapping[key]`` as a float; ``error`` names ``where + key`` when it is missing or not finite."""
    if key not in mapping:
        raise error(f"{where}{key} is missing")
    value = mapping[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise error(f"{where}{key} must be a finite number (got {value!r})")
    return float(value)
