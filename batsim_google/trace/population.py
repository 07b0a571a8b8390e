"""The model paper's population (Section 2): the tasks its Tables 3-7 and the fitted laws describe.

Tasks with exactly three events, SUBMIT, SCHEDULE and an end, that end by FINISH (finite tasks)
or KILL (services): 95 % of the trace's tasks.
"""

from __future__ import annotations

import polars as pl

from batsim_google.trace.schema import TaskEvent

#: The ends of the modeled tasks, by the kind of task they make.
MODELED_ENDS = {"finish": TaskEvent.FINISH, "kill": TaskEvent.KILL}


def paper_population(tasks: pl.DataFrame) -> pl.DataFrame:
    """The task records of :data:`MODELED_ENDS`' three-event tasks that were scheduled (Tables 3-7,
    the fitted data): SUBMIT, SCHEDULE, end; not e.g. SUBMIT, UPDATE_PENDING, KILL."""
    ends = [int(code) for code in MODELED_ENDS.values()]
    return tasks.filter(
        (pl.col("task_events") == 3) & pl.col("end_event").is_in(ends) & pl.col("schedule").is_not_null()
    )
