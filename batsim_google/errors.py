"""The package's errors: one family, so that a caller can catch :class:`BatsimGoogleError` alone.

Each kind also derives from the built-in exception it refines (``ValueError`` for what the caller
gave, ``RuntimeError`` for a simulation that failed), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = ["BatsimGoogleError", "InputFileError", "OutputFileError", "ParameterError", "SimulationError"]


class BatsimGoogleError(Exception):
    """Any error this package raises on purpose."""


class ParameterError(BatsimGoogleError, ValueError):
    """An invalid parameter or option, given in Python, on the command line or in a parameter file
    (model, energy figures, campaign); the message names it, and the file when there is one."""


class InputFileError(BatsimGoogleError, ValueError):
    """A data file that cannot be read or holds bad data (a trace, a workload, a platform, a run's
    outputs, a task table); the message names the file, and the line when known."""


class SimulationError(BatsimGoogleError, RuntimeError):
    """The simulation failed or timed out; the message says which side and where its log is."""


class OutputFileError(BatsimGoogleError, OSError):
    """An output that could not be written (disk full, no permission, a name too long for the file
    system); the message names the file, which keeps its earlier content."""
