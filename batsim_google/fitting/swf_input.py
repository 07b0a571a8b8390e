"""An SWF log of parallel jobs as a fitting input: one row per job, with its width.

The log is read by :func:`batsim_google.trace.swf.read_swf` (lines counted in its
:class:`~batsim_google.trace.row_accounting.RowAccount`; unknown fields, SWF's -1, stay null). Every
job is a finite ``task`` whatever its status: it held its processors for its run time. The width
is the allocated processor count (else the requested one). SWF has no priority: every job gets
:data:`SWF_PRIORITY`, as ``swf convert`` does by default. Jobs whose run time or width is unknown
or zero are then skipped and counted by the task table's rules.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.swf import read_swf

#: The priority of every job (SWF logs have none): the middle of ]0, 1].
SWF_PRIORITY = 0.5


def swf_task_table(path: str | Path, account: RowAccount) -> pl.DataFrame:
    """The fitting table of the jobs of the SWF log at ``path``."""
    frames = [
        records.select(
            pl.col("submit").alias("subtime"),
            "makespan",
            pl.lit("task").alias("kind"),
            pl.lit(SWF_PRIORITY).alias("priority"),
            pl.col("res").alias("width"),
        )
        for records in read_swf(path, account)
    ]
    return pl.concat(frames)
