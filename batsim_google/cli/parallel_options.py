"""The options of the commands that run many simulations at once (``compare``, ``validate``,
``validate-replay --windows``), and how they end when interrupted."""

from __future__ import annotations

import sys
from contextlib import contextmanager

import click

from batsim_google.cli.common import WORKERS, fail


def jobs_option(parameter: str = "workers"):
    """``--jobs``, passed to the command as ``parameter``."""
    return click.option(
        "--jobs",
        parameter,
        type=WORKERS,
        help="Simulations at once on this machine [default: one per core].",
    )


DASK_OPTION = click.option(
    "--dask",
    "dask_address",
    metavar="ADDRESS",
    help="Run the simulations on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://host:8786) instead; see docs/experiments.md.",
)

RETRY_FAILED_OPTION = click.option(
    "--retry-failed",
    is_flag=True,
    help="Run again the runs that failed in an earlier invocation (by default they are reported, not rerun).",
)


@contextmanager
def resumable():
    """Ctrl-C, or a worker process killed, ends the command with a message, not a traceback."""
    from concurrent.futures.process import BrokenProcessPool

    from batsim_google.experiments.execution import DaskUnreachable

    try:
        yield
    except DaskUnreachable as error:
        fail(str(error))
    except (KeyboardInterrupt, BrokenProcessPool) as error:
        reason = (
            "interrupted"
            if isinstance(error, KeyboardInterrupt)
            else "a worker process ended abruptly (interrupted or killed)"
        )
        click.echo(f"{reason}: finished runs are kept, run the same command again to resume", err=True)
        sys.exit(130)
