"""What Batsim can take of a job's times, checked the same way wherever a workload is written
(``generate``, ``trace convert``, ``swf convert``) or read (``run``, ``estimate``, ``fit``,
``metrics --workload``, campaigns): one rule, one bound, the first bad job named.

Batsim refuses a delay profile's delay that is not > 0 and a walltime that is neither -1 (none)
nor > 0; it takes a negative submission time, and aborts on delays of 1e44 s and more. No time may
exceed :data:`batsim_google.parameters.MAX_TIME_S` (2^42 s, where SimGrid's double clock still
keeps the millisecond); the services' nominal delay
(:data:`~batsim_google.generation.service_profile.SERVICE_DELAY`, 1e12 s) is within it.
"""

from __future__ import annotations

import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.parameters import MAX_TIME_S

#: The walltime Batsim reads as "none".
NO_WALLTIME = -1.0
#: Columns :func:`check_job_times` reads: a job's id, submission time, its delay profile's delay
#: (null for another kind of profile) and walltime (null when absent).
COLUMNS = ("id", "subtime", "delay", "walltime")

_BOUND = f"at most {MAX_TIME_S:.4g} s (2^42 s, see docs/generating.md)"
#: (column, what a valid value is, the refusal's words), in the order they are checked.
_RULES = (
    (
        "subtime",
        pl.col("subtime").is_between(0.0, MAX_TIME_S, closed="left"),
        f"must be >= 0 and below {MAX_TIME_S:.4g} s (2^42 s, where the measurement window ends at the latest)",
    ),
    (
        "delay",
        pl.col("delay").is_null() | pl.col("delay").is_between(0.0, MAX_TIME_S, closed="right"),
        f"must be > 0 and {_BOUND}",
    ),
    (
        "walltime",
        pl.col("walltime").is_null()
        | (pl.col("walltime") == NO_WALLTIME)
        | pl.col("walltime").is_between(0.0, MAX_TIME_S, closed="right"),
        f"must be -1 (none), or > 0 and {_BOUND}",
    ),
)


def check_job_times(jobs: pl.DataFrame, where: str) -> None:
    """Refuse, with an InputFileError naming ``where`` and the first bad job's id, a job whose
    submission time, delay or walltime Batsim cannot take (nan, inf and a missing submission time
    included). ``jobs`` has the :data:`COLUMNS`; a missing one is not checked."""
    for column, valid, expectation in _RULES:
        if column not in jobs.columns:
            continue
        bad = jobs.filter(~valid.fill_null(False) | pl.col(column).is_nan().fill_null(False))
        if bad.height:
            job, value = bad.row(0, named=True)["id"], bad.row(0, named=True)[column]
            shown = "missing" if value is None else f"{value:g}"
            raise InputFileError(f"{where}: job {job}: {column} {shown} {expectation}")
