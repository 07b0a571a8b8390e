"""Scheduler kinds: the built-in Google-cell policy, a pybatsim scheduler, any executable speaking
Batsim's protocol, or a user's policy on the core; what each needs of Batsim, and parsing one.

- ``policy`` (:data:`BUILT_IN`): the Google-cell scheduler with these :class:`PolicyConfig` options;
- ``pybatsim``: a pybatsim 3.2.1 scheduler, bundled (``fillerSched``, ``easyBackfill``,
  ``fcfsSchedSleep``, ...) or a file, with its ``options`` (the JSON of pybatsim's ``-o``);
- ``command``: an executable and its arguments; :data:`SOCKET` in them is replaced by the
  endpoint it must bind (e.g. ``["batsched", "-v", "easy_bf", "-s", "{socket}"]``);
- ``python``: a :class:`batsim_google.scheduling.policy_api.Policy` subclass
  (``module:Class`` or ``file.py:Class``) with its keyword ``options``, run through the pybatsim
  front-end like the built-in one (its ledger is written too).

A scheduler is parsed here only, from a campaign's ``[schedulers.NAME]`` table
(:func:`scheduler_entry`) or ``run --scheduler KIND=VALUE`` (:func:`scheduler_from_text`).

What a scheduler needs (:class:`BatsimNeeds`) is the built-in's or the user policy's own
``needs``, known for the bundled pybatsim schedulers (:data:`PYBATSIM_NEEDS`), and declared by a
``needs`` table otherwise (by default: no compute sharing, no dynamic jobs, no sleep states, and
no failures: a scheduler is not trusted to kill what runs on a failed machine unless it says so).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from batsim_google.errors import ParameterError
from batsim_google.parameters import known_keys, parse_text, table
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_api import BatsimNeeds, Policy
from batsim_google.scheduling.policy_config import ALWAYS_ON, PolicyConfig
from batsim_google.simulation.batsched_energy import energy_variant
from batsim_google.simulation.policy_loader import LOAD_TIMEOUT_S, policy_needs, remember

#: The kinds, as a campaign's ``[schedulers.NAME]`` table and ``run --scheduler`` name them.
BUILT_IN, PYBATSIM, COMMAND, PYTHON = "policy", "pybatsim", "command", "python"
KINDS = (BUILT_IN, PYBATSIM, COMMAND, PYTHON)
#: The kinds ``run --scheduler`` takes (the built-in one is ``run`` without it).
OTHER_KINDS = KINDS[1:]
#: Kinds that run through this package's front-end: they write the simulated time they reached
#: (the progress bar follows it) and keep the ledger of every task.
OWN_FRONT_END = frozenset({BUILT_IN, PYTHON})
#: The keys of a ``[schedulers.NAME]`` table besides its kind, per kind.
_EXTRA_KEYS = {BUILT_IN: set(), PYBATSIM: {"options", "needs"}, COMMAND: {"needs"}, PYTHON: {"options"}}
#: In a ``command``, replaced by the endpoint the scheduler binds (``tcp://127.0.0.1:PORT``, loopback only).
SOCKET = "{socket}"
#: What the bundled pybatsim schedulers need (others declare it). fillerSchedWithEvents is the
#: one that leaves failed machines alone; fcfsSchedSleep puts idle machines to sleep.
PYBATSIM_NEEDS = {
    "fillerSched": BatsimNeeds(failures=False),
    "fillerSchedWithEvents": BatsimNeeds(failures=True),
    "easyBackfill": BatsimNeeds(failures=False),
    "schedEasySjfBackfill": BatsimNeeds(failures=False),
    "fcfsSchedSleep": BatsimNeeds(sleep_states=True, failures=False),
}
#: What a scheduler that declares nothing is trusted with.
UNDECLARED = BatsimNeeds(failures=False)
#: What batsched's energy variants need: machines that sleep.
ENERGY_VARIANT_NEEDS = BatsimNeeds(sleep_states=True, failures=False)
NEEDS_KEYS = tuple(f.name for f in dataclasses.fields(BatsimNeeds))


@dataclass(frozen=True)
class Scheduler:
    """One scheduler of a kind (:data:`KINDS`): ``target`` is the :class:`PolicyConfig` (the
    built-in kind), the scheduler's name or file (pybatsim), the command line, a tuple (command) or
    ``module:Class`` (python); ``declared`` the ``needs`` table given, if any."""

    kind: str
    target: object
    options: Mapping = field(default_factory=dict)
    declared: BatsimNeeds | None = None

    @property
    def config(self) -> PolicyConfig | None:
        """The built-in scheduler's options (None for another kind)."""
        return self.target if self.kind == BUILT_IN else None

    @classmethod
    def of(cls, value: Scheduler | PolicyConfig | type[Policy] | str, options: Mapping | None = None) -> Scheduler:
        """A scheduler from what names one: a Scheduler, the built-in scheduler's
        :class:`PolicyConfig`, a user's :class:`Policy` subclass (with its keyword ``options``), or
        ``run --scheduler``'s ``KIND=VALUE`` text (``options``: its ``--scheduler-options``)."""
        if isinstance(value, Scheduler | PolicyConfig) and options:
            raise ParameterError("options are for a Policy subclass or a KIND=VALUE scheduler")
        if isinstance(value, Scheduler):
            return value
        if isinstance(value, PolicyConfig):
            return built_in(value)
        if isinstance(value, type) and issubclass(value, Policy):
            return _user_policy(value, options)
        if isinstance(value, str):
            return scheduler_from_text(value, json.dumps(dict(options or {})))
        raise ParameterError(
            f"a scheduler is a Scheduler, a PolicyConfig, a Policy subclass or 'KIND=VALUE' text (got {value!r})"
        )

    def label(self) -> str:
        """How the scheduler is named in a fingerprint: its kind, target and options."""
        return json.dumps([self.kind, self.target, self.options], sort_keys=True, default=str)

    def needs(self, timeout: float = LOAD_TIMEOUT_S) -> BatsimNeeds:
        """What it needs of Batsim (a user's policy's, read by loading it in a child process within
        ``timeout`` seconds: :func:`.policy_loader.policy_needs`)."""
        return _NEEDS[self.kind](self, timeout)


_NEEDS = {
    BUILT_IN: lambda scheduler, _timeout: dataclasses.replace(
        CellPolicy.needs, sleep_states=scheduler.target.energy != ALWAYS_ON
    ),
    PYTHON: lambda scheduler, timeout: policy_needs(scheduler.target, timeout),
    PYBATSIM: lambda scheduler, _timeout: scheduler.declared or PYBATSIM_NEEDS.get(scheduler.target, UNDECLARED),
    COMMAND: lambda scheduler, _timeout: (
        scheduler.declared or (ENERGY_VARIANT_NEEDS if energy_variant(scheduler.target) else UNDECLARED)
    ),
}


def built_in(config: PolicyConfig = PolicyConfig()) -> Scheduler:
    """The built-in Google-cell scheduler with these options."""
    return Scheduler(BUILT_IN, config)


def _user_policy(policy: type[Policy], options: Mapping | None) -> Scheduler:
    """A user's :class:`Policy` subclass as a scheduler: the scheduler's process imports it by
    its module, or from its script's file for a class of the script being run (which must then
    keep its own calls under ``if __name__ == "__main__":``, or they would run there too)."""
    module = sys.modules.get(policy.__module__)
    if policy.__module__ == "__main__" and getattr(module, "__file__", None):
        origin = str(Path(module.__file__).resolve())
    elif policy.__module__ == "__main__":
        raise ParameterError(f"{policy.__name__}: a policy defined interactively cannot be run; put it in a file")
    else:
        origin = policy.__module__
    spec = f"{origin}:{policy.__qualname__}"
    remember(spec, policy)
    return Scheduler(PYTHON, spec, dict(options or {}))


def with_horizon(scheduler: Scheduler, horizon: float | None) -> Scheduler:
    """The built-in scheduler stops at ``horizon`` unless its own options set one; the other kinds
    run to their end (their metrics end there: :func:`window_end`)."""
    if horizon is None or scheduler.kind != BUILT_IN or scheduler.config.horizon:
        return scheduler
    return built_in(dataclasses.replace(scheduler.config, horizon=float(horizon)))


def window_end(scheduler: Scheduler, horizon: float | None) -> float | None:
    """Where a run's metrics end: the built-in scheduler's horizon (``horizon`` filled in), else
    ``horizon``; None: the run's end."""
    if scheduler.kind == BUILT_IN:
        return with_horizon(scheduler, horizon).config.horizon or None
    return horizon


def declared_needs(raw: Mapping, where: str) -> BatsimNeeds:
    """A ``needs`` table (BatsimNeeds fields, true or false); errors name ``where``."""
    unknown = sorted(set(raw) - set(NEEDS_KEYS))
    if unknown:
        raise ParameterError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(NEEDS_KEYS)})")
    for key, value in raw.items():
        if not isinstance(value, bool):
            raise ParameterError(f"{where}.{key} must be true or false (got {value!r})")
    return BatsimNeeds(**{"failures": False, **raw})  # not trusted with failures unless it says so


def scheduler_entry(raw: Mapping, where: str, base: Path) -> Scheduler:
    """The scheduler of a ``[schedulers.NAME]`` table (``where``, which errors name): exactly one
    kind as a key, with ``options`` and ``needs`` where the kind takes them; a file is taken from
    ``base``. A ``python`` policy is loaded (under a time limit) where its pairings are checked."""
    given = [kind for kind in KINDS if kind in raw]
    if len(given) != 1:
        raise ParameterError(f"{where} needs exactly one of {', '.join(KINDS)} (got {', '.join(given) or 'none'})")
    kind = given[0]
    known_keys(raw, {kind} | _EXTRA_KEYS[kind], where)
    value = raw[kind]
    options = dict(table(raw.get("options", {}), f"{where}.options"))
    declared = declared_needs(table(raw["needs"], f"{where}.needs"), f"{where}.needs") if "needs" in raw else None
    if kind == BUILT_IN:
        return built_in(PolicyConfig.from_mapping(table(value, f"{where}.policy"), f"{where}.policy"))
    if kind == COMMAND:
        if not (isinstance(value, list | tuple) and value and all(isinstance(part, str) for part in value)):
            raise ParameterError(f"{where}.command must be a non-empty list of strings (got {value!r})")
        if not any(SOCKET in part for part in value):
            raise ParameterError(f"{where}.command must pass the endpoint to bind: put {SOCKET!r} in one argument")
        return Scheduler(kind, tuple(value), {}, declared)
    if not isinstance(value, str) or not value:
        raise ParameterError(f"{where}.{kind} must be a non-empty string (got {value!r})")
    target, colon, cls = value.rpartition(":") if kind == PYTHON else (value, "", "")
    if target.endswith(".py") and not Path(target).is_absolute():  # a file beside the campaign
        value = f"{base / target}{colon}{cls}"
    return Scheduler(kind, value, options, declared)  # a python policy is loaded by the pairing checks


def scheduler_from_text(text: str, options_json: str = "{}", needs_json: str | None = None) -> Scheduler:
    """The scheduler ``run --scheduler KIND=VALUE`` names (``command='EXECUTABLE ARG...'`` split
    as a shell would), with ``--scheduler-options`` and ``--scheduler-needs`` as JSON: the
    campaign entry ``{KIND = VALUE, options = ..., needs = ...}`` (:func:`scheduler_entry`)."""
    kind, equals, value = text.partition("=")
    if not equals or kind not in OTHER_KINDS or not value:
        raise ParameterError(f"must be KIND=VALUE with KIND one of {', '.join(OTHER_KINDS)} (got {text!r})")
    try:  # no key twice, a bounded depth, numbers that fit (parameters.parse_text)
        options = parse_text(options_json, ".json")
        needs = None if needs_json is None else parse_text(needs_json, ".json")
    except ValueError as error:
        raise ParameterError(f"--scheduler-options and --scheduler-needs take JSON: {error}") from error
    if not isinstance(options, dict) or not isinstance(needs, dict | None):
        raise ParameterError("--scheduler-options and --scheduler-needs take a JSON object")
    raw = {kind: shlex.split(value) if kind == COMMAND else value}
    raw |= {"options": options} if options else {}
    raw |= {} if needs is None else {"needs": needs}
    return scheduler_entry(raw, "--scheduler", Path())
