"""The cell's state at a conversion window's start: the tasks already running or pending there.

A window of the trace opens on a loaded cell (at the trace's own start, 132,982 tasks of part
00000 are running and about 11,000 pending). Leaving them out would hand the simulated scheduler
an empty cell. Each record submitted before the window start and not ended by it is written
submitted at the window start, flagged ``initial``:

- ``running`` (scheduled before the start): it lasts the time it had left, its end minus the start;
- ``pending`` (scheduled at or after the start): it lasts its makespan, as a task submitted in the
  window does (the simulated scheduler decides when it starts).

A record whose end is not in the input is *censored* (:mod:`.censoring`): it lasts until the
input's end (the last time read) from the start (running) or from its schedule (pending). A pending
one never scheduled in the input is left out: Borg left it waiting through the whole input (at the
trace's start, 10,830 tasks of 9 jobs, 835 CPU against the 7,493 of the tasks running), and a
simulated scheduler, which knows nothing of why, would run it at once.
"""

from __future__ import annotations

import polars as pl

from batsim_google.trace.censoring import INPUT_END, end_or_input_end

RUNNING, PENDING = "running", "pending"


def initial_flag(start: float, submit: str) -> pl.Expr:
    """``running`` or ``pending`` for the records submitted before ``start`` and not ended by
    it, null for the others."""
    end = pl.col("end")
    alive = ((pl.col(submit) < start) & (end.is_null() | (end > start)) & (pl.col(INPUT_END) > start)).fill_null(False)
    running = (pl.col("schedule") < start).fill_null(False)
    return pl.when(alive).then(pl.when(running).then(pl.lit(RUNNING)).otherwise(pl.lit(PENDING)))


def initial_delay(start: float) -> pl.Expr:
    """How long a record alive at ``start`` lasts once submitted there."""
    began = pl.when(pl.col("initial") == RUNNING).then(pl.lit(start)).otherwise(pl.col("schedule"))
    return end_or_input_end() - began
