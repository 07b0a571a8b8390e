"""What the commands share: how an error ends a command, the model a user chose, progress bars.

One handler, at the command group (:class:`Commands`), ends every command on an error: the package's
own (bad parameters, unreadable files: exit status 2; a failed simulation: 1), an OSError (a full
disk, a permission, a name too long for the file system: 1) or a MemoryError (1) become one line
``Error: <message>`` on stderr, never a traceback; no command catches them itself.

The command modules import the package's working modules (and so numpy, polars, scipy...) inside
the commands, and declare their options with the light ``vocabulary`` modules: ``--help`` and
the shell's start-up stay fast.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from batsim_google.errors import BatsimGoogleError, OutputFileError, SimulationError
from batsim_google.parameters import MAX_MACHINES, MAX_SEED, MAX_TIME_S
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
        type=MACHINES,
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


#: ``-o/--output`` of the commands that write a Batsim workload (``generate``, ``trace convert``,
#: ``swf convert``).
WORKLOAD_OUTPUT_OPTION = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Batsim JSON workload to write.",
)

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


#: The option types of the commands' seeds and counts, bounded once: a seed is an unsigned 64-bit
#: integer; machines at most :data:`~batsim_google.parameters.MAX_MACHINES`; threads or processes
#: at most :data:`MAX_WORKERS`.
SEED = click.IntRange(0, MAX_SEED)
MACHINES = click.IntRange(1, MAX_MACHINES)
#: The most threads or simulations at once a command takes: far past any machine's cores.
MAX_WORKERS = 1024
WORKERS = click.IntRange(1, MAX_WORKERS)


class DataError(click.ClickException):
    """Bad data in a file or parameter file the command read: ``Error: <message>``, exit status 2.

    Unlike a usage error, nothing is wrong with the command line itself, so click's "Usage: ...
    Try --help" would mislead.
    """

    exit_code = 2


#: The start of the metrics' measurement window (``run``, ``metrics``, ``validate``).
warmup_option = click.option(
    "--warmup",
    type=NumberRange(min=0, max=MAX_TIME_S),
    default=0.0,
    show_default=True,
    help="Simulated seconds left out of the metrics: their window runs from then to the horizon, if any, or the end "
    "(run: the end of the workload's span, see --window).",
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

    return check_output_file(path, inputs)


def checked_output_folder(path: Path, *inputs: Path | None) -> Path:
    """An output folder option, checked likewise (created later, by what writes into it)."""
    from batsim_google.output_files import check_output_folder

    return check_output_folder(path, inputs)


def chosen_model(preset_name: str | None, model_file: Path | None) -> WorkloadModel:
    """The model of ``--preset`` or ``--model`` (default: the paper's 'google' preset)."""
    from batsim_google.model.presets import preset
    from batsim_google.model.workload_model import load_model

    if preset_name and model_file:
        fail_usage("give --preset or --model, not both")
    return load_model(model_file) if model_file else preset(preset_name or "google")


def progress_option(over: str = "") -> Callable[[Callable], Callable]:
    """``--progress/--no-progress``, a bar over ``over`` (e.g. "the runs"): ``progress`` is None
    unless given (see :func:`show_progress`)."""
    shown = f"Progress bar over {over}" if over else "Progress bar"
    return click.option("--progress/--no-progress", default=None, help=f"{shown} (default: on a terminal).")


def show_progress(progress: bool | None) -> bool:
    """``--progress/--no-progress``, by default on when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


def _system_message(error: OSError) -> str:
    from batsim_google.output_files import system_reason

    return f"{error.filename}: {system_reason(error)}" if error.filename else system_reason(error)


def _simulation_message(error: SimulationError) -> str:
    """The first line of a failed simulation's message and, of the log's tail after it, the last
    line that reads like an error (a scheduler's traceback ends with its exception)."""
    first, *tail = str(error).strip().splitlines() or [""]
    if not tail:
        return first
    reason = next((line for line in reversed(tail) if _ERROR_LINE.search(line)), tail[-1])
    return f"{first.rstrip(':')}: {reason.strip()}"


_ERROR_LINE = re.compile(r"Error|Exception|CRITICAL|error|abort", re.ASCII)


def _memory_message(error: MemoryError) -> str:
    return "out of memory: the input is too large for this machine (try a smaller window or sample)"


#: How an error ends a command: exit status and one line, by the first of the error's classes found
#: here. ValueError: what the package's own kinds refine, raised by a library on bad input.
ENDINGS: dict[type[BaseException], tuple[int, Callable[[Any], str]]] = {
    SimulationError: (1, _simulation_message),
    OutputFileError: (1, str),
    BatsimGoogleError: (2, str),
    ValueError: (2, str),
    MemoryError: (1, _memory_message),
    OSError: (1, _system_message),
}


def command_error(error: BaseException) -> click.ClickException:
    """The one-line ending of ``error`` (one of :data:`ENDINGS`' kinds)."""
    kind = next(kind for kind in type(error).__mro__ if kind in ENDINGS)
    status, message = ENDINGS[kind]
    ending = click.ClickException(next(iter(message(error).strip().splitlines()), type(error).__name__))
    ending.exit_code = status
    return ending


class Commands(click.Group):
    """A command group whose commands end on :data:`ENDINGS`' errors with one line (its sub-groups
    run inside it, so they are covered too)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except tuple(ENDINGS) as error:
            raise command_error(error) from error


def report_options(default_folder: str) -> Callable[[Callable], Callable]:
    """``-o`` (the folder of a validation's workload, run, report and figures) and ``--json`` (the
    report also written there), the options every validation command shares."""

    def decorate(command: Callable) -> Callable:
        command = click.option(
            "--json", "json_file", type=click.Path(dir_okay=False, path_type=Path), help="Also write the report here."
        )(command)
        return click.option(
            "-o",
            "--output",
            type=click.Path(file_okay=False, path_type=Path),
            default=Path(default_folder),
            show_default=True,
            help="Folder for the workload, the run, the report and the figures.",
        )(command)

    return decorate
