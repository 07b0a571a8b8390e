"""The Google trace as a fitting input: the model paper's tasks, from their rebuilt lifecycles.

Fitting uses the population of the paper's Tables 3-7 (:func:`~batsim_google.trace.population.
paper_population`): three-event tasks ended by FINISH or KILL, with their submission time, the
makespan of their one attempt, their end event, priority (0-11) and scheduling class. Tasks whose
makespan is unknown (a time before or after the trace window) are counted, not fitted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from batsim_google.trace.population import paper_population
from batsim_google.trace.rebuild import rebuild
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.vocabulary import DEFAULT_GRACE

CENSORED = "makespan unknown (a time outside the trace window)"


def trace_task_table(
    sources: Iterable[str | Path],
    account: RowAccount,
    *,
    grace: float = DEFAULT_GRACE,
    workers: int = 1,
    progress: bool = False,
) -> tuple[pl.DataFrame, Counter]:
    """The fitting table of the trace in ``sources`` and the modeled tasks left out, by reason."""
    frames, left_out = [], Counter()
    for batch in rebuild(sources, account, grace=grace, workers=workers, progress=progress):
        tasks = paper_population(batch.tasks)
        known = tasks.filter(pl.col("makespan").is_not_null() & pl.col("first_submit").is_finite())
        left_out[CENSORED] += tasks.height - known.height
        frames.append(
            known.select(
                pl.col("first_submit").alias("subtime"),
                "makespan",
                "end_event",
                pl.col("priority").alias("google_priority"),
                "scheduling_class",
                "job_id",
                "user",
            )
        )
    return pl.concat(frames).sort("subtime"), left_out
