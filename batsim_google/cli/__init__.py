"""Command line: ``batsim-google SUBCOMMAND``, one module per group of commands."""

from __future__ import annotations

import click

from .. import __version__
from .cell import failures_command, platform_command, run
from .experiments import compare_command, validate_command
from .fit import fit_command
from .trace import swf, trace
from .workload import demo, generate, requests_command


@click.group()
@click.version_option(__version__)
def main() -> None:
    """Google-like workloads, platforms and scheduling for Batsim/SimGrid."""


for command in (
    generate, demo, requests_command, run, platform_command, failures_command, fit_command, trace, swf,
    compare_command, validate_command,
):
    main.add_command(command)
