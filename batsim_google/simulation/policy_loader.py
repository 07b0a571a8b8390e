"""A user's policy class by name: ``"package.module:Class"`` or ``"path/to/file.py:Class"``.

A file's folder is put on ``sys.path`` first, so that a policy may import its siblings (as
``examples/policies/power_capped_fcfs.py`` does). A class is loaded once per process; a class the
caller already has is remembered under its name (:func:`remember`), never loaded again: loading a
script runs it, and a simulation the script starts as it is loaded (calls not kept under
``if __name__ == "__main__":``) would start simulations without end: :func:`refuse_while_loading`.
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
#: The policy files being loaded in this process now.
_LOADING: list[str] = []


def refuse_while_loading(what: str) -> None:
    """Refuse ``what`` (a simulation, a campaign) started as a policy's file is loaded."""
    if _LOADING:
        raise ParameterError(
            f"{_LOADING[-1]} started {what} as it was loaded to find its policy: a script keeps its calls "
            'under `if __name__ == "__main__":`'
        )


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
            _LOADING.append(str(path))
            try:
                module_spec.loader.exec_module(module)
            finally:
                _LOADING.pop()
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
