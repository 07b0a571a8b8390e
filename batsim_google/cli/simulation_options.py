"""The options of the commands that simulate (``run``, ``validate``, ``validate-replay``), and the
one place they become the simulation call's keywords."""

from __future__ import annotations

from collections.abc import Callable

import click

from batsim_google.cli.common import BATSIM_OPTION, NumberRange, progress_option, show_progress
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S

#: ``--timeout``: the wall-clock limit of each simulation a command runs.
TIMEOUT_OPTION = click.option(
    "--timeout",
    type=NumberRange(min=1, max=MAX_TIMEOUT_S),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Wall-clock limit of one simulation, seconds.",
)


def simulation_options(progress_over: str) -> Callable[[Callable], Callable]:
    """``--timeout``, ``--batsim`` and ``--progress/--no-progress`` (a bar over ``progress_over``);
    the command gets ``timeout``, ``batsim_binary`` and ``progress`` (see :func:`simulation_call`)."""

    def decorate(command: Callable) -> Callable:
        for option in reversed((TIMEOUT_OPTION, BATSIM_OPTION, progress_option(progress_over))):
            command = option(command)
        return command

    return decorate


def simulation_call(timeout: float, batsim_binary: str, progress: bool | None) -> dict:
    """The options of :func:`simulation_options` as the simulation call's ``timeout``, ``batsim``
    and ``progress`` keywords (``run_google_cell``, ``run_scheduler``, ``validate``,
    ``validate_replay``)."""
    return {"timeout": timeout, "batsim": batsim_binary, "progress": show_progress(progress)}
