"""Command line: ``batsim-google SUBCOMMAND``, one module per group of commands.

Errors end a command in one line, by one handler at the group (:class:`.common.Commands`).

SIGTERM (``timeout``, ``kill``, a batch system's end of allocation) ends a command as Ctrl-C does,
so that what it was writing is cleaned up (see :mod:`batsim_google.output_files`), never left
half-written under its final name. So does the end of the ``uv`` process that launched the command
(``uv run batsim-google``, killed with SIGKILL: see :mod:`batsim_google.simulation.parent_death`).
"""

from __future__ import annotations

import signal
import threading

import click

from batsim_google import __version__
from batsim_google.cli.common import Commands
from batsim_google.cli.estimate import estimate_command
from batsim_google.cli.experiments import compare_command, validate_command
from batsim_google.cli.fit import compare_workload_command, fit_command
from batsim_google.cli.generate import demo, generate, requests_command
from batsim_google.cli.metrics import metrics_command, per_core_jobs_command
from batsim_google.cli.platform import failures_command, platform_command
from batsim_google.cli.run import run
from batsim_google.cli.trace import swf, trace
from batsim_google.cli.validate_model import validate_model_command
from batsim_google.cli.validate_replay import validate_replay_command


@click.group(cls=Commands)
@click.version_option(__version__)
def main() -> None:
    """Google-like workloads, platforms and scheduling for Batsim/SimGrid."""
    _end_on_sigterm_like_ctrl_c()
    if threading.current_thread() is threading.main_thread():  # not in a test runner's thread
        from batsim_google.simulation.parent_death import end_with_launcher

        end_with_launcher()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _end_on_sigterm_like_ctrl_c() -> None:
    """Raise KeyboardInterrupt on SIGTERM while the command runs; the previous handler after."""
    if threading.current_thread() is not threading.main_thread():  # e.g. a test runner's thread
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    click.get_current_context().call_on_close(lambda: signal.signal(signal.SIGTERM, previous))


for command in (
    generate,
    demo,
    requests_command,
    run,
    estimate_command,
    metrics_command,
    per_core_jobs_command,
    platform_command,
    failures_command,
    fit_command,
    compare_workload_command,
    trace,
    swf,
    compare_command,
    validate_command,
    validate_replay_command,
    validate_model_command,
):
    main.add_command(command)
