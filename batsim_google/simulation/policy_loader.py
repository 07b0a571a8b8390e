"""A user's policy class by name: ``"package.module:Class"`` or ``"path/to/file.py:Class"``.

A file's folder is put on ``sys.path`` first, so that a policy may import its siblings (as
``examples/policies/power_capped_fcfs.py`` does). A class is loaded once per process; a class the
caller already has is remembered under its name (:func:`remember`), never loaded again: loading a
script runs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from batsim_google.errors import ParameterError
from batsim_google.scheduling.policy_api import Policy

#: The classes loaded or remembered in this process, by name.
_CLASSES: dict[str, type[Policy]] = {}


def remember(spec: str, policy: type[Policy]) -> None:
    """``spec`` names ``policy``, a class this process has already."""
    _CLASSES[spec] = policy


def load_policy_class(spec: str) -> type[Policy]:
    """The :class:`Policy` subclass ``spec`` names; a ParameterError says what is wrong."""
    if spec not in _CLASSES:
        _CLASSES[spec] = _load(spec)
    return _CLASSES[spec]


def _load(spec: str) -> type[Policy]:
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise ParameterError(f"policy {spec!r} must be 'module:Class' or 'file.py:Class'")
    try:
        if target.endswith(".py"):
            path = Path(target).resolve()
            if not path.is_file():
                raise ParameterError(f"policy {spec!r}: no such file {path}")
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            module_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except ImportError as error:
        raise ParameterError(f"policy {spec!r}: {error}") from error
    except ParameterError:
        raise
    except Exception as error:  # whatever a user's module raises as it runs
        raise ParameterError(f"policy {spec!r}: loading it raised {type(error).__name__}: {error}") from error
    policy = getattr(module, name, None)
    if not (isinstance(policy, type) and issubclass(policy, Policy)):
        raise ParameterError(f"policy {spec!r}: {name} is not a subclass of batsim_google Policy")
    return policy
