"""Command line: ``batsim-google SUBCOMMAND``, one module per group of commands."""

from __future__ import annotations

import click

from batsim_google import __version__
from batsim_google.cli.platform import failures_command, platform_command
from batsim_google.cli.run import run
from batsim_google.cli.metrics import metrics_command
from batsim_google.cli.experiments import compare_command, validate_command
from batsim_google.cli.fit import fit_command
from batsim_google.cli.trace import swf, trace
from batsim_google.cli.generate import demo, generate, requests_command


@click.group()
@click.version_option(__version__)
def main() -> None:
    """Google-like workloads, platforms and scheduling for Batsim/SimGrid."""


for command in (
    generate, demo, requests_command, run, metrics_command, platform_command, failures_command, fit_command, trace, swf,
    compare_command, validate_command,
):
    main.add_command(command)
