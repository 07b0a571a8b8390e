"""``run --scheduler KIND=VALUE``: one run with a scheduler of any kind, as a campaign entry has.

``pybatsim=NAME_OR_FILE``, ``command='EXECUTABLE ARG... {socket}'`` (split as a shell would),
``python=module:Class`` or ``python=file.py:Class``; ``--scheduler-options`` and
``--scheduler-needs`` are the entry's ``options`` and ``needs`` tables, as JSON (parsed by
:func:`batsim_google.simulation.schedulers.scheduler_from_text`). Without ``--scheduler``, the
built-in Google-cell scheduler runs with the policy options.
"""

from __future__ import annotations

from collections.abc import Callable

import click


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
