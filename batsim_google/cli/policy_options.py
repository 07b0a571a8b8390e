"""The scheduler's options on the command line, one per field of :class:`PolicyConfig`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from batsim_google.errors import ParameterError
from batsim_google.scheduling.policy_config import PolicyConfig, check_value


class PolicyValue(click.ParamType):
    """A number option of :class:`PolicyConfig`, checked by the field's own rule (range, finite)."""

    def __init__(self, field: dataclasses.Field) -> None:
        self.field = field
        self.name = "integer" if field.type == "int" else "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = (int if self.field.type == "int" else float)(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a valid {self.name}.", param, ctx)
        try:
            check_value(self.field, number)
        except ParameterError as error:
            self.fail(str(error), param, ctx)
        return number


def _click_option(field: dataclasses.Field, default: Any) -> Callable:
    option = field.metadata
    flags = option["flags"] or ("--" + field.name.replace("_", "-"),)
    if option["choices"]:
        kind = click.Choice(list(option["choices"]))
    elif option["min"] is not None:
        kind = PolicyValue(field)
    else:
        kind = None  # a flag pair: click takes it as a boolean
    return click.option(*flags, field.name, type=kind, default=default, show_default=True, help=option["help"])


def policy_options(command: Callable) -> Callable:
    """Give ``command`` an option per field of :class:`PolicyConfig`, passed by the field's name."""
    for field in reversed(dataclasses.fields(PolicyConfig)):
        command = _click_option(field, field.default)(command)
    return command
