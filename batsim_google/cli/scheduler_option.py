"""``run --scheduler KIND=VALUE``: one run with a scheduler of any kind, as a campaign entry has.

``pybatsim=NAME_OR_FILE``, ``command='EXECUTABLE ARG... {socket}'`` (split as a shell would),
``python=module:Class`` or ``python=file.py:Class``; ``--scheduler-options`` and
``--scheduler-needs`` are the entry's ``options`` and ``needs`` tables, as JSON. Without
``--scheduler``, the built-in Google-cell scheduler runs with the policy options.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

import click

KINDS = ("pybatsim", "command", "python")


def scheduler_options(command: Callable) -> Callable:
    """``--scheduler``, ``--scheduler-options`` and ``--scheduler-needs``."""
    command = click.option(
        "--scheduler-needs",
        default=None,
        help="What a pybatsim or command scheduler needs of Batsim, as JSON (e.g. '{\"failures\": true}').",
    )(command)
    command = click.option(
        "--scheduler-options", default="{}", show_default=True, help="The scheduler's options, as JSON."
    )(command)
    return click.option(
        "--scheduler",
        "scheduler_text",
        default=None,
        help="Another scheduler: pybatsim=NAME_OR_FILE, command='EXECUTABLE ARG... {socket}' or python=module:Class.",
    )(command)


def parse_scheduler(text: str, options_json: str, needs_json: str | None):
    """The Scheduler ``--scheduler`` names; a click.BadParameter says what is wrong."""
    from batsim_google.parameters import parse_text
    from batsim_google.simulation.schedulers import SOCKET, Scheduler, declared_needs

    kind, equals, value = text.partition("=")
    if not equals or kind not in KINDS or not value:
        raise click.BadParameter(
            f"must be KIND=VALUE with KIND one of {', '.join(KINDS)} (got {text!r})", param_hint="--scheduler"
        )
    try:
        options = parse_text(options_json, ".json")
        needs = None if needs_json is None else parse_text(needs_json, ".json")
    except ValueError as error:
        raise click.BadParameter(
            f"--scheduler-options and --scheduler-needs take JSON: {error}", param_hint="--scheduler"
        ) from error
    if not isinstance(options, dict) or not isinstance(needs, dict | None):
        raise click.BadParameter(
            "--scheduler-options and --scheduler-needs take a JSON object", param_hint="--scheduler"
        )
    if kind == "command":
        target = tuple(shlex.split(value))
        if not any(SOCKET in part for part in target):
            raise click.BadParameter(
                f"a command must pass the endpoint to bind: put {SOCKET!r} in one argument", param_hint="--scheduler"
            )
    else:
        target = value
    declared = None if needs is None else declared_needs(needs, "--scheduler-needs")  # its errors name the option
    return Scheduler(kind, target, options, declared)
