"""The machines of a trace (machine_events): a cell for the platform writer, and their availability.

- **Cell**: every machine the table describes, in machine-ID order (so Batsim resource ``i`` is the
  ``i``-th smallest machine ID), with the platform ID and CPU and memory capacities it had when it
  joined: the first value the trace gives for each, so an ADD lacking one is completed by a later
  UPDATE. A SimGrid host has fixed capacities: later rows (UPDATE, or the ADD of a machine coming
  back) that change its platform ID or capacities are counted and reported, not modelled. A
  machine never given a platform ID and positive capacities cannot be a host: its rows are skipped
  (counted).
- **Availability**: a machine is up from its ADD to its REMOVE. Machines present at the start of
  the trace (time 0, "before the window") are available from t = 0; machines first added later
  are unavailable from t = 0 until their ADD. An ADD of a present machine or a REMOVE of an absent
  one changes nothing and is skipped (counted); events after the trace window (2^63-1) too.
  :mod:`batsim_google.platform.batsim_events` turns the rest into an events file Batsim accepts.

The machine_events table is small (one part, ~38k rows for the 29 days of the 2011 cell), so its
rows are gathered in one table; memory grows with the number of machine events, not with tasks.
Bad rows (those the reader rejects: missing mandatory fields, unknown event types...) and
undescribed machines stop a strict run with the file and line, and are skipped and counted
otherwise, in the run's :class:`~.accounting.RowAccount`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.platform.batsim_events import AvailabilityChanges, availability_changes
from batsim_google.platform.cell import Cell
from batsim_google.trace.reader import read_batches
from batsim_google.trace.row_accounting import RowAccount, TraceError
from batsim_google.trace.schema import AFTER_WINDOW, MachineEvent, seconds

TABLE = "machine_events"
AFTER = "after the trace window"
UNDESCRIBED = "machine never given a platform ID and positive capacities"
REPEATED = "ADD of a present or REMOVE of an absent machine"


@dataclass(frozen=True)
class MachineHistory:
    """What machine_events says: the cell, the availability changes, and the row accounting."""

    cell: Cell
    changes: AvailabilityChanges
    account: RowAccount
    #: Rows giving a machine another platform ID, CPU or memory than it joined with (not modelled;
    #: a repeated ADD is counted here too, though skipped for the availability).
    capacity_changes: int = 0

    def accounting(self) -> str:
        """``rows read = used + skipped``, with the skips by reason."""
        return f"{TABLE}: {self.account.summary()}"


def _rows(sources: list[str | Path], account: RowAccount) -> pl.DataFrame:
    """The rows the reader accepts, with their file and line."""
    frames = []
    for path, batch in read_batches(sources, TABLE, account=account, line_numbers=True):
        frame = pl.from_arrow(batch).rename({"cpu_capacity": "cpu", "memory_capacity": "memory"})
        frames.append(
            frame.with_columns(
                # CSV reading gives an empty string, not a null, for a missing platform ID.
                platform_id=pl.when(pl.col("platform_id") != "").then(pl.col("platform_id")),
                file=pl.lit(str(path)),
            )
        )
    if not frames:
        raise TraceError(f"no {TABLE} rows in {sources}")
    return pl.concat(frames)


def _reject(account: RowAccount, rows: pl.DataFrame, reason: str) -> None:
    """Bad rows, file by file in line order: an error in strict mode, counted otherwise."""
    for (path,), group in rows.sort("file", "line").group_by("file", maintain_order=True):
        account.reject(path, group["line"].to_numpy(), reason)


def read_machine_history(sources: Iterable[str | Path], strict: bool = False) -> MachineHistory:
    """Read machine_events from trace directories or part files (see the module)."""
    sources = list(sources)
    account = RowAccount(strict=strict)
    rows = _rows(sources, account).with_row_index("order")
    after = pl.col("time") == AFTER_WINDOW
    account.skip(AFTER, rows.filter(after).height)
    rows = rows.filter(~after)
    first = pl.col("platform_id", "cpu", "memory").drop_nulls().first()
    machines = rows.sort("time", "order").group_by("machine_id").agg(first)
    described = (pl.col("platform_id").is_not_null() & (pl.col("cpu") > 0) & (pl.col("memory") > 0)).fill_null(False)
    undescribed = machines.filter(~described)["machine_id"].implode()
    machines = machines.filter(described).sort("machine_id")
    _reject(account, rows.filter(pl.col("machine_id").is_in(undescribed)), UNDESCRIBED)
    rows = rows.filter(~pl.col("machine_id").is_in(undescribed)).sort("time", "order")
    if machines.height == 0:
        raise TraceError(f"{', '.join(map(str, sources))}: no machine of {TABLE} has a platform ID and capacities")
    cell = Cell(
        machines.select("platform_id", "cpu", "memory", "machine_id"),
        f"machine_events of {', '.join(map(str, sources))}",
    )
    kept = rows.join(machines, on="machine_id", suffix="_kept")
    capacity_changes = kept.filter(
        pl.any_horizontal(
            (pl.col(name) != pl.col(f"{name}_kept")).fill_null(False) for name in ("platform_id", "cpu", "memory")
        )
    ).height

    moves = rows.filter(pl.col("event_type") != MachineEvent.UPDATE)
    resource = np.searchsorted(machines["machine_id"].to_numpy(), moves["machine_id"].to_numpy())
    # Every machine is absent until its first ADD: an unavailability at t = 0 placed before its
    # rows, which cancels out when the machine is added at t = 0.
    absent = np.arange(machines.height)
    changes, repeated = availability_changes(
        np.r_[absent, resource],
        np.r_[np.zeros(absent.size), seconds(moves["time"].to_numpy())],
        np.r_[np.zeros(absent.size, bool), moves["event_type"].to_numpy() == MachineEvent.ADD],
    )
    account.skip(REPEATED, int(repeated[absent.size :].sum()))
    account.used += rows.height - int(repeated[absent.size :].sum())
    return MachineHistory(cell, changes, account, capacity_changes)
