"""What the commands share: how a user error ends, the model a user chose, progress bars.

Errors in user input (bad parameters, unreadable files) end with a one-line message naming the
parameter or file and exit status 2, never a traceback.

The command modules import the package's working modules (and so numpy, polars, scipy...) inside
the commands, and declare their options with the light ``vocabulary`` modules: ``--help`` and
the shell's start-up stay fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    from batsim_google.model.workload_model import WorkloadModel

#: A trace folder or a part file.
TRACE_PATH = click.Path(exists=True, path_type=Path)
#: ``--batsim``: the Batsim executable, for every command that simulates.
BATSIM_OPTION = click.option("--batsim", "batsim_binary", default="batsim", show_default=True, help="The Batsim executable.")


def fail(message: str) -> NoReturn:
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
        fail("give --preset or --model, not both")
    try:
        return load_model(model_file) if model_file else preset(preset_name or "google")
    except ValueError as error:  # ParameterError included: it names the parameter
        fail(str(error))


def show_progress(progress: bool | None) -> bool:
    """``--progress/--no-progress``, by default on when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress
