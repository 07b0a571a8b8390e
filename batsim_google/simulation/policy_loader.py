"""A user's policy class by name: ``"package.module:Class"`` or ``"path/to/file.py:Class"``.

A file's folder is put on ``sys.path`` first, so that a policy may import its siblings (as
``examples/policies/power_capped_fcfs.py`` does). A class is loaded once per process; a class the
caller already has is remembered under its name (:func:`remember`), never loaded again: loading a
script runs it, and a simulation the script starts as it is loaded (calls not kept under
``if __name__ == "__main__":``) would start simulations without end: :func:`refuse_while_loading`.

What a policy needs of Batsim is read before launch by loading its class in a child process under a
time limit (:func:`policy_needs`), unless this process has the class already: a user's module that
loops, or sleeps, as it is imported would otherwise hang the command that checks it (``compare``
hung past its campaign's timeout), and its side effects stay out of this process.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from batsim_google.errors import ParameterError
from batsim_google.scheduling.policy_api import BatsimNeeds, Policy

#: Wall-clock seconds a policy's module may take to load, at most.
LOAD_TIMEOUT_S = 60.0

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


def policy_needs(spec: str, timeout: float = LOAD_TIMEOUT_S) -> BatsimNeeds:
    """The ``needs`` of the policy ``spec`` names, loaded in a child process that may take
    ``timeout`` seconds (at most :data:`LOAD_TIMEOUT_S`), or of the class this process has
    already; a ParameterError says what is wrong."""
    if spec in _CLASSES:
        return _CLASSES[spec].needs
    return _needs(spec, min(float(timeout), LOAD_TIMEOUT_S))


@functools.cache
def _needs(spec: str, timeout: float) -> BatsimNeeds:
    command = [sys.executable, "-m", __name__, spec]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}  # as here
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, env=environment)
    except subprocess.TimeoutExpired:
        raise ParameterError(
            f"policy {spec!r}: loading it took more than {timeout:g} s (does its module loop or wait as it is imported?)"
        ) from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise ParameterError(lines[-1] if lines else f"policy {spec!r}: loading it failed (status {done.returncode})")
    return BatsimNeeds(**json.loads(done.stdout.strip().splitlines()[-1]))


def _print_needs(spec: str) -> int:
    try:
        needs = load_policy_class(spec).needs
    except ParameterError as error:
        print(str(error).replace("\n", " "), file=sys.stderr)
        return 2
    print(json.dumps(dataclasses.asdict(needs)))
    return 0


if __name__ == "__main__":
    sys.exit(_print_needs(sys.argv[1]))
