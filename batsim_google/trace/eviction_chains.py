"""A faithful replay leaves evictions to the simulated scheduler: a task's evicted attempts are
folded into the attempt that followed them.

Borg's evictions are scheduling decisions, which the simulated scheduler makes anew. An attempt
ended by EVICT is not written; the task's next attempt (its resubmission) is, submitted when the
evicted chain was (so its wait covers the eviction), for the time that next attempt ran. When the
chain began running before the window start, the next attempt is the task running at the start,
on the machine it was running on then (its ``schedule`` and ``machine_id`` are the chain's first
attempt's). An evicted attempt that nothing followed before the input's end is written as it was,
for the time it ran (the task ended there, as far as the input tells).

Attempts ended by FAIL, KILL and LOST ended by themselves: they are left as they are, each with
its own submission, so their resubmissions are replayed too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from batsim_google.trace.schema import TaskEvent

_KEY = "_chain_key"
_ROW = "_chain_row"


def fold_evictions(batches: Iterable[pl.DataFrame], start: float) -> Iterator[pl.DataFrame]:
    """Attempt record batches with each evicted attempt folded into its task's next attempt;
    the evicted attempts still unfollowed at the end come last, as they were."""
    chains: dict[str, dict] = {}  # task key -> the chain's first attempt (as a row) and its last
    schema = None
    for records in batches:
        schema = records.schema
        keyed = records.with_columns(
            pl.concat_str(pl.col("job_id"), pl.lit("_"), pl.col("task_index")).alias(_KEY)
        ).with_row_index(_ROW)
        evicted = (pl.col("end_event") == TaskEvent.EVICT).fill_null(False)
        chained = set(chains) | set(keyed.filter(evicted)[_KEY].to_list())
        involved = keyed.filter(pl.col(_KEY).is_in(list(chained))).sort(_KEY, "attempt")
        if involved.height == 0:
            yield records
            continue
        dropped, replaced = [], []
        for row in involved.iter_rows(named=True):
            chain = chains.pop(row[_KEY], None)
            if row["end_event"] == TaskEvent.EVICT:
                chains[row[_KEY]] = {"first": chain["first"] if chain else row, "last": row}
                dropped.append(row[_ROW])
            elif chain is not None:
                replaced.append(_folded(row, chain["first"], start))
        kept = keyed.filter(~pl.col(_ROW).is_in(dropped + [row[_ROW] for row in replaced]))
        if replaced:
            kept = pl.concat([kept, pl.DataFrame(replaced, schema=keyed.schema)])
        yield kept.sort(_ROW).drop(_KEY, _ROW)
    if chains and schema is not None:
        rows = [_folded(chain["last"], chain["first"], start) for chain in chains.values()]
        yield pl.DataFrame(rows, schema={**schema, _KEY: pl.String, _ROW: pl.UInt32}).drop(_KEY, _ROW)


def _folded(row: dict, first: dict, start: float) -> dict:
    """``row`` submitted when the chain's ``first`` attempt was; running at ``start`` where
    ``first`` ran if that one was."""
    if first is row:
        return row
    row = dict(row)
    row["submit"] = first["submit"]
    was_running = first["schedule"] is not None and first["schedule"] < start and first["submit"] < start
    if was_running:
        row["schedule"] = first["schedule"]
        row["machine_id"] = first["machine_id"]
    ordinary = (
        row["schedule"] is not None and abs(row["schedule"]) != float("inf") and abs(row["submit"]) != float("inf")
    )
    row["wait"] = row["schedule"] - row["submit"] if ordinary else None
    return row
