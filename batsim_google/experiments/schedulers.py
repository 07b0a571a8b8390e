"""A campaign's ``[schedulers.NAME]`` entries: a scheduler of any kind, checked before launch.

Each entry has exactly one of ``policy = {...}`` (the built-in Google-cell scheduler's
PolicyConfig fields, as a ``[policies.NAME]`` entry), ``pybatsim = "NAME_OR_FILE"``,
``command = [...]`` (``"{socket}"`` stands for the endpoint the scheduler binds) or
``python = "module:Class"`` / ``"file.py:Class"``; ``options = {...}`` for the last three but
``command``; and, for ``pybatsim`` and ``command``, an optional ``needs = {...}`` table
(``failures``, ``sleep_states``, ``compute_sharing``, ``dynamic_jobs``, ``user_kills``: true or
false) saying what the scheduler needs of Batsim (see :mod:`batsim_google.simulation.schedulers`)::

    [schedulers.google-cell]
    policy = {energy = "always-on"}
    [schedulers.filler]
    pybatsim = "fillerSched"
    [schedulers.easy]
    command = ["batsched", "-v", "easy_bf", "-s", "{socket}"]
    [schedulers.fcfs]
    python = "policies/whole_machine_fcfs.py:WholeMachineFCFS"   # relative to the campaign file

A pairing of a scheduler with failures or a platform it cannot take is refused with the reason
when the campaign is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from batsim_google.errors import ParameterError
from batsim_google.parameters import known_keys, table
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.policy_loader import LOAD_TIMEOUT_S
from batsim_google.simulation.schedulers import KINDS, SOCKET, Scheduler, declared_needs, policy_scheduler, refusal


def scheduler_entry(name: str, raw: Mapping[str, Any], where: str, base: Path) -> tuple[str, Scheduler]:
    """The scheduler of one ``[schedulers.NAME]`` table; errors name ``where``."""
    given = [kind for kind in KINDS if kind in raw]
    if len(given) != 1:
        raise ParameterError(f"{where} needs exactly one of {', '.join(KINDS)} (got {', '.join(given) or 'none'})")
    kind = given[0]
    allowed = (
        {kind}
        | ({"options"} if kind != "command" else set())
        | ({"needs"} if kind in ("pybatsim", "command") else set())
    )
    known_keys(raw, allowed, where)
    value = raw[kind]
    options = dict(table(raw.get("options", {}), f"{where}.options"))
    declared = declared_needs(table(raw["needs"], f"{where}.needs"), f"{where}.needs") if "needs" in raw else None
    if kind == "policy":
        return name, policy_scheduler(PolicyConfig.from_mapping(table(value, f"{where}.policy"), f"{where}.policy"))
    if kind == "command":
        if not (isinstance(value, list) and value and all(isinstance(part, str) for part in value)):
            raise ParameterError(f"{where}.command must be a non-empty list of strings (got {value!r})")
        if not any(SOCKET in part for part in value):
            raise ParameterError(f"{where}.command must pass the endpoint to bind: put {SOCKET!r} in one argument")
        return name, Scheduler(kind, tuple(value), {}, declared)
    if not isinstance(value, str) or not value:
        raise ParameterError(f"{where}.{kind} must be a non-empty string (got {value!r})")
    target, colon, cls = value.rpartition(":") if kind == "python" else (value, "", "")
    if target.endswith(".py") and not Path(target).is_absolute():  # a file beside the campaign
        value = f"{base / target}{colon}{cls}"
    return name, Scheduler(kind, value, options, declared)  # a python policy is loaded by check_pairings


def check_pairings(
    schedulers, platforms, failures, energy_outputs: bool, skip: bool = False, timeout: float = LOAD_TIMEOUT_S
) -> frozenset[tuple[str, str, str]]:
    """Refuse every pairing of a scheduler with failures or a platform it cannot run on; with
    ``skip``, return them instead, as (scheduler, platform, failures) names, not to be run. A
    user's policy that does not load within ``timeout`` seconds (the campaign's) is refused."""
    skipped = set()
    for name, scheduler in schedulers:
        try:
            needs = scheduler.needs(timeout)
        except ParameterError as error:
            raise ParameterError(f"schedulers.{name}: {error}") from None
        for platform in platforms:
            for spec in failures:
                events = spec.file is not None or spec.law is not None
                reason = refusal(needs, platform.file, events, energy_outputs)
                if reason and not skip:
                    pairing = f"platforms.{platform.name}" + (f" with failures.{spec.name}" if events else "")
                    raise ParameterError(f"schedulers.{name} on {pairing} refused: {reason}")
                if reason:
                    skipped.add((name, platform.name, spec.name))
    return frozenset(skipped)
