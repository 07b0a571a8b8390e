"""The options of the commands that simulate (``run``, ``validate``, ``validate-replay``), and the
one place they become the simulation call's keywords."""

from __future__ import annotations

from collections.abc import Callable

import click

from batsim_google.cli.common import BATSIM_OPTION, NumberRange, progress_option, show_progress
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S
from batsim_google.simulation.settings import SimulationSettings

#: ``--timeout``: the wall-clock limit of each simulation a command runs.
TIMEOUT_OPTION = click.option(
    "--timeout",
    type=NumberRange(min=1, max=MAX_TIMEOUT_S),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Wall-clock limit of one simulation, seconds.",
)

#: ``--stream-workload/--load-workload``: how Batsim gets the workloads (SimulationSettings.stream_workload).
STREAM_WORKLOAD_OPTION = click.option(
    "--stream-workload/--load-workload",
    default=SimulationSettings.stream_workload,
    help="Register the workloads' jobs at their submission times, so that Batsim holds only the jobs submitted and "
    "not finished (built-in or Python-policy scheduler; see docs/scheduler.md), or let Batsim load them whole.  "
    "[default: loaded, streamed where loaded whole they would take Batsim over half the memory available]",
)


def simulation_options(progress_over: str) -> Callable[[Callable], Callable]:
    """``--timeout``, ``--batsim`` and ``--progress/--no-progress`` (a bar over ``progress_over``);
    the command gets ``timeout``, ``batsim_binary`` and ``progress`` (see :func:`simulation_settings`)."""

    def decorate(command: Callable) -> Callable:
        for option in reversed((TIMEOUT_OPTION, BATSIM_OPTION, progress_option(progress_over))):
            command = option(command)
        return command

    return decorate


def simulation_settings(timeout: float, batsim_binary: str, progress: bool | None, **more) -> SimulationSettings:
    """The options of :func:`simulation_options` (and ``more`` of the settings) as the
    simulation's settings; warnings go to standard error."""
    return SimulationSettings(
        timeout=timeout,
        batsim=batsim_binary,
        progress=show_progress(progress),
        **{"warn": lambda message: click.echo(f"warning: {message}", err=True), **more},
    )
