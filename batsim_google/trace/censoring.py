"""Records whose end is not in the input: kept, *censored* at the input's end.

A conversion reads the trace until every task of the window has ended, or to the input's end (the
time of the last row read). A record of the window (submitted in it, or alive at its start) whose
end is not in the input, still open when reading stopped or ended after the trace's window, is
*censored*: leaving it out would hand the simulated scheduler less than the real cell carried (in
hour 3 of the shared parts, all but 28 of the 4,028 tasks of job 6252358260, submitted at
11,760 s, still run at the input's end). It is written as a service that lasts until the input's
end, flagged ``censored`` and counted apart:

- scheduled in the input: from its schedule (from the window start if it was running there) to the
  input's end; its real wait is known, and the replay carries its load as long as the trace shows it;
- submitted in the window and never scheduled in the input (still pending at its end): from its
  submission to the input's end, the longest it can have run; it competes for room as it did in
  the real cell, and the simulated scheduler starts it or not (the trace says it did not start
  within the input). Pending at the window start and never scheduled, it is left out
  (:mod:`.initial_state` says why).

Censored records are services: they outlived what was read, like the KILL-ended ones, with which a
selection of end events keeps or leaves them out. Logs without an input's end on their records
(SWF) have nothing censored.
"""

from __future__ import annotations

import polars as pl

#: Column holding the input's end (s from the window start's origin) on every record batch.
INPUT_END = "input_end"
#: How censored records submitted in the window are counted: scheduled in the input or not.
SCHEDULED, NEVER_SCHEDULED = "scheduled", "never scheduled"


def end_known() -> pl.Expr:
    return (pl.col("end").is_not_null() & pl.col("end").is_finite()).fill_null(False)


def scheduled_in_input() -> pl.Expr:
    """Scheduled at a time the input holds (or before it: -inf), not never or after the trace."""
    return (pl.col("schedule") < float("inf")).fill_null(False)


def censored(columns: list[str]) -> pl.Expr:
    """Records whose end is not in the input (false for records without an input's end)."""
    if INPUT_END not in columns:
        return pl.lit(False)
    return ~end_known()


def end_or_input_end() -> pl.Expr:
    """A record's end, the input's end if that is not in the input."""
    return pl.when(end_known()).then(pl.col("end")).otherwise(pl.col(INPUT_END))


def censored_delay(submit: str) -> pl.Expr:
    """How long a censored record submitted in the window lasts: to the input's end from its
    schedule, or from its submission (column ``submit``) if it was never scheduled in the input."""
    began = pl.when(scheduled_in_input()).then(pl.col("schedule")).otherwise(pl.col(submit))
    return pl.col(INPUT_END) - began
