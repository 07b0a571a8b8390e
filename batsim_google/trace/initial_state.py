"""The cell's state at a conversion window's start: the tasks already running or pending there.

A window of the trace opens on a loaded cell (at the trace's own start, 132,982 tasks of part
00000 are running and about 11,000 pending). Leaving them out would hand the simulated scheduler
an empty cell. Each record submitted before the window start and not ended by it is written
submitted at the window start, flagged ``initial``:

- ``running`` (scheduled before the start): it lasts the time it had left, its end minus the start;
- ``pending`` (scheduled at or after the start): it lasts its makespan, as a task submitted in the
  window does (the simulated scheduler decides when it starts).

A record whose end is not in the input (still open when reading stopped, or ended after the
trace's window) is *censored*: it lasts until the input's end (the last time read), flagged
``censored`` and counted apart. Censored records are services: they outlived what was read.
"""

from __future__ import annotations

import polars as pl

RUNNING, PENDING = "running", "pending"
#: Column holding the input's end (s from the window start's origin) on every record batch.
INPUT_END = "input_end"


def initial_flag(start: float, submit: str) -> pl.Expr:
    """``running`` or ``pending`` for the records submitted before ``start`` and not ended by
    it, null for the others."""
    end = pl.col("end")
    alive = ((pl.col(submit) < start) & (end.is_null() | (end > start)) & (pl.col(INPUT_END) > start)).fill_null(False)
    running = (pl.col("schedule") < start).fill_null(False)
    return pl.when(alive).then(pl.when(running).then(pl.lit(RUNNING)).otherwise(pl.lit(PENDING)))


def end_known() -> pl.Expr:
    return (pl.col("end").is_not_null() & pl.col("end").is_finite()).fill_null(False)


def censored() -> pl.Expr:
    """Of the records alive at the start, those that ran and whose end is not in the input."""
    return pl.col("initial").is_not_null() & ~end_known() & pl.col("schedule").is_not_null()


def initial_delay(start: float) -> pl.Expr:
    """How long a record alive at ``start`` lasts once submitted there."""
    end = pl.when(end_known()).then(pl.col("end")).otherwise(pl.col(INPUT_END))
    began = pl.when(pl.col("initial") == RUNNING).then(pl.lit(start)).otherwise(pl.col("schedule"))
    return end - began
