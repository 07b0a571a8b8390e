"""What the commands share: how a user error ends, the model a user chose, progress bars.

Errors in user input (bad parameters, unreadable files) end with a one-line message naming the
parameter or file and exit status 2, never a traceback.

The command modules import the package's working modules (and so numpy, polars, scipy...) inside
the commands, and declare their options with the light ``vocabulary`` modules: ``--help`` and
the shell's start-up stay fast.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES

if TYPE_CHECKING:
    from batsim_google.model.workload_model import WorkloadModel

#: A trace folder or a part file.
TRACE_PATH = click.Path(exists=True, path_type=Path)


def cell_workload_options(command: Callable) -> Callable:
    """``--nb-res`` and ``--grain`` of the commands that write a workload for the Google cell."""
    command = click.option(
        "--grain",
        type=click.FloatRange(min=0, min_open=True),
        help="Round makespans to multiples of GRAIN seconds so jobs share profiles.",
    )(command)
    return click.option(
        "--nb-res",
        type=click.IntRange(min=1),
        default=GOOGLE_2011_MACHINES,
        show_default=True,
        help="Machines of the target platform (the workload's nb_res).",
    )(command)


def walltime_options(default: str) -> Callable[[Callable], Callable]:
    """``--walltime MODE`` and ``--walltime-kills`` of the commands that write a workload
    (``generate``, ``trace convert``, ``swf convert``); the command gets ``walltime``, a
    :class:`~batsim_google.generation.walltime.WalltimeMode`."""

    def mode(ctx: click.Context, param: click.Parameter, value: str):
        from batsim_google.generation.walltime import parse_walltime_mode

        try:
            return parse_walltime_mode(value, ctx.params.pop("walltime_kills", False))
        except ValueError as error:
            raise click.BadParameter(str(error), ctx, param) from None

    def decorate(command: Callable) -> Callable:
        command = click.option(
            "--walltime",
            default=default,
            show_default=True,
            callback=mode,
            help="Jobs' walltimes: none, exact (the duration), a factor of the duration (1.5), user-estimate "
            "(users' over-estimates fitted on a real log), requested (an SWF log's requested time); "
            "see docs/generating.md.",
        )(command)
        return click.option(
            "--walltime-kills",
            is_flag=True,
            is_eager=True,
            help="Let a walltime below a job's duration stop the job there (default: a walltime never shortens a job).",
        )(command)

    return decorate


#: ``--batsim``: the Batsim executable, for every command that simulates.
BATSIM_OPTION = click.option(
    "--batsim", "batsim_binary", default="batsim", show_default=True, help="The Batsim executable."
)


class NumberRange(click.FloatRange):
    """click's FloatRange, refusing nan (which passes every range comparison) and, unless
    ``infinite``, inf: a time or size that never ends would hang the command."""

    def __init__(self, *args: Any, infinite: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.infinite = infinite

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = super().convert(value, param, ctx)
        if math.isnan(number) or (math.isinf(number) and not self.infinite):
            self.fail(f"{number} is not a {'' if self.infinite else 'finite '}number.", param, ctx)
        return number


class DataError(click.ClickException):
    """Bad data in a file or parameter file the command read: ``Error: <message>``, exit status 2.

    Unlike a usage error, nothing is wrong with the command line itself, so click's "Usage: ...
    Try --help" would mislead.
    """

    exit_code = 2


#: The start of the metrics' measurement window (``run``, ``metrics``, ``validate``).
warmup_option = click.option(
    "--warmup",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Simulated seconds left out of the metrics: their window runs from then to the horizon, if any, or the end.",
)


def fail(message: str) -> NoReturn:
    """End the command on bad data (a file, a parameter file): the message names it."""
    raise DataError(message)


def fail_usage(message: str) -> NoReturn:
    """End the command on options that do not go together: click's usage text, then the message."""
    raise click.UsageError(message)


def checked_output_file(path: Path, *inputs: Path | None) -> Path:
    """An output file option, checked before any work: its folder exists and is writable, and it
    is none of the command's ``inputs`` (``None``: an input not given)."""
    from batsim_google.output_files import check_output_file

    try:
        return check_output_file(path, inputs)
    except ValueError as error:
        fail(str(error))


def checked_output_folder(path: Path, *inputs: Path | None) -> Path:
    """An output folder option, checked likewise (created later, by what writes into it)."""
    from batsim_google.output_files import check_output_folder

    try:
        return check_output_folder(path, inputs)
    except ValueError as error:
        fail(str(error))


def chosen_model(preset_name: str | None, model_file: Path | None) -> WorkloadModel:
    """The model of ``--preset`` or ``--model`` (default: the paper's 'google' preset)."""
    from batsim_google.model.presets import preset
    from batsim_google.model.workload_model import load_model

    if preset_name and model_file:
        fail_usage("give --preset or --model, not both")
    try:
        return load_model(model_file) if model_file else preset(preset_name or "google")
    except ValueError as error:  # ParameterError included: it names the parameter
        fail(str(error))


def show_progress(progress: bool | None) -> bool:
    """``--progress/--no-progress``, by default on when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress
