"""A chunk of task_events rows sorted by task, as numpy columns: what the lifecycle rebuild works on."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from batsim_google.trace.attempts import ATTRIBUTES
from batsim_google.trace.held import HeldTasks
from batsim_google.trace.records import UserCodes
from batsim_google.trace.task_keys import key_order, packable, task_ids, task_keys


def _numpy(column: pa.ChunkedArray, fill: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """Values of a numeric column (nulls replaced by ``fill``) and its validity (None: no null)."""
    if column.null_count == 0:
        return column.to_numpy(), None
    series = pl.from_arrow(column)
    return series.fill_null(fill).to_numpy(), series.is_not_null().to_numpy()


class TaskRows:
    """One chunk's rows sorted by task (stable: a task's rows keep their file order), as numpy
    columns. Attributes stay in file order, reached through ``seq``: only the rows that records
    take them from are gathered."""

    def __init__(self, rows: pa.Table, users: UserCodes, held: HeldTasks) -> None:
        job, task = rows.column("job_id").to_numpy(), rows.column("task_index").to_numpy()
        if held.packed and not packable(job, task):
            held.use_pairs()
        keys = task_keys(job, task, held.packed)
        #: Row of the chunk (file order) of each sorted row.
        self.seq = key_order(keys)
        self.key = keys[self.seq]
        self.time = rows.column("time").to_numpy()[self.seq]
        self.event = rows.column("event_type").to_numpy()[self.seq].astype(np.intp)
        self._line = rows.column("line").to_numpy()
        missing = rows.column("missing_info")
        #: None when no row has missing info (the common case)
        self.missing = None if missing.null_count == len(missing) else _numpy(missing, -1)[0][self.seq]
        #: name: (values in file order, validity in sorted order or None without nulls)
        self.attributes: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        self._at_ends: tuple[np.ndarray, np.ndarray] | None = None  # segment ends, their file rows
        for name in ATTRIBUTES:
            column = rows.column(name)
            if name == "user":
                values, valid = users.encode(column), column.is_valid().to_numpy() if column.null_count else None
            else:
                values, valid = _numpy(column)
            self.attributes[name] = (values, None if valid is None else valid[self.seq])

    def __len__(self) -> int:
        return len(self.seq)

    def keep(self, mask: np.ndarray) -> None:
        """Keep the sorted rows of ``mask``, or put them in an order (an index array)."""
        for name in ("seq", "key", "time", "event", "missing"):
            if getattr(self, name) is not None:
                setattr(self, name, getattr(self, name)[mask])
        self.attributes = {
            name: (values, None if valid is None else valid[mask]) for name, (values, valid) in self.attributes.items()
        }

    def ids(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Job IDs and task indices of sorted rows."""
        return task_ids(self.key[rows])

    def lines(self, rows: np.ndarray) -> np.ndarray:
        """Line numbers (in their file) of sorted rows."""
        return self._line[self.seq[rows]]

    def synthesized(self) -> np.ndarray:
        """Mask of the sorted rows the trace synthesized (missing info set)."""
        return np.zeros(len(self), dtype=bool) if self.missing is None else self.missing >= 0

    def last_valid(self, name: str, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per segment (sorted rows ``starts[i]`` to ``ends[i]``), the last non-null value of an
        attribute, and whether there is one."""
        values, valid = self.attributes[name]
        if valid is None:
            if self._at_ends is None or self._at_ends[0] is not ends:
                self._at_ends = (ends, self.seq[ends])
            return values[self._at_ends[1]], np.ones(len(ends), dtype=bool)
        position = np.maximum.accumulate(np.where(valid, np.arange(len(valid)), -1))[ends]
        found = position >= starts
        return values[self.seq[np.where(found, position, 0)]], found
