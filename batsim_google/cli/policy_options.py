"""The scheduler's options on the command line, one per field of :class:`PolicyConfig`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from batsim_google.scheduling.policy_config import PolicyConfig

_RANGES = {"int": click.IntRange, "float": click.FloatRange}


def _click_option(field: dataclasses.Field, default: Any) -> Callable:
    option = field.metadata
    flags = option["flags"] or ("--" + field.name.replace("_", "-"),)
    if option["choices"]:
        kind = click.Choice(list(option["choices"]))
    elif option["min"] is not None:
        kind = _RANGES[field.type](min=option["min"], min_open=option["min_open"], max=option["max"])
    else:
        kind = None  # a flag pair: click takes it as a boolean
    return click.option(*flags, field.name, type=kind, default=default, show_default=True, help=option["help"])


def policy_options(command: Callable) -> Callable:
    """Give ``command`` an option per field of :class:`PolicyConfig`, passed by the field's name."""
    for field in reversed(dataclasses.fields(PolicyConfig)):
        command = _click_option(field, field.default)(command)
    return command
