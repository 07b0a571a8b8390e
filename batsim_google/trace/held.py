"""The tasks held between chunks of the lifecycle rebuild, looked up by task key.

One record per task in flight (or dead and waiting out its grace period). A chunk touches a small
part of them, so a chunk must not copy all of them (it only scans the key index and two columns):
records live in append-only
columns with spare capacity (a record that changes is appended again and its old row marked dead),
a sorted index of keys finds them by binary search, and the columns are compacted only when dead
rows outnumber live ones. Memory stays within a small multiple (at most about four) of the records
held. Rows are in the order their tasks were last touched: the order in which held tasks are
reported.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from batsim_google.trace.records import Records
from batsim_google.trace.task_keys import key_order, task_keys

#: Rows below which dead rows are left in place (compacting costs more than it saves).
_MIN_COMPACT = 1 << 14


class HeldTasks:
    """Records of ``columns`` (name: numpy type), which include ``job_id`` and ``task_index``;
    ``nullable`` columns carry a validity mask."""

    def __init__(self, columns: dict[str, np.dtype], nullable: Iterable[str]) -> None:
        self._types = dict(columns)
        self._nullable = list(nullable)
        self._values = {name: np.empty(0, kind) for name, kind in self._types.items()}
        self._valid = {name: np.empty(0, bool) for name in self._nullable}
        self._alive = np.empty(0, bool)
        self._size = 0
        self._count = 0
        self._keys = task_keys(np.empty(0, np.int64), np.empty(0, np.int64), True)
        self._rows = np.empty(0, np.int64)
        #: Whether keys are one integer (see :mod:`.task_keys`); once not, they stay pairs.
        self.packed = True

    def __len__(self) -> int:
        return self._count

    def column(self, name: str) -> np.ndarray:
        """Values of a column by row (dead rows included; see :meth:`rows`)."""
        return self._values[name][: self._size]

    def valid(self, name: str) -> np.ndarray:
        """Validity of a nullable column by row."""
        return self._valid[name][: self._size]

    def rows(self, where: np.ndarray | None = None) -> np.ndarray:
        """Live rows in order (those where ``where``, a mask over :meth:`column` rows, holds)."""
        live = self._alive[: self._size]
        return np.flatnonzero(live if where is None else live & where)

    def records(self, rows: np.ndarray) -> Records:
        return Records(
            {name: values[rows] for name, values in self._values.items()},
            {name: valid[rows] for name, valid in self._valid.items()},
        )

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Row of the live record of each key, -1 for a key not held."""
        if len(self._keys) == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        position = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        rows = np.where(self._keys[position] == keys, self._rows[position], -1)
        found = rows >= 0
        found[found] = self._alive[rows[found]]
        return np.where(found, rows, -1)

    def release(self, rows: np.ndarray) -> None:
        """Forget these live rows (their values stay readable until the next :meth:`add`)."""
        self._alive[rows] = False
        self._count -= len(rows)

    def add(self, records: Records, rows: np.ndarray | None = None) -> None:
        """Hold new records, ``records`` or its ``rows``, of tasks not held (release a task's old
        record first)."""
        self._compact_if_sparse()
        added = len(records) if rows is None else len(rows)
        self._reserve(added)
        start, stop = self._size, self._size + added
        pick = slice(None) if rows is None else rows
        for name, values in self._values.items():
            values[start:stop] = records.values[name][pick]
        for name, valid in self._valid.items():
            valid[start:stop] = records.is_valid(name)[pick]
        self._alive[start:stop] = True
        self._size, self._count = stop, self._count + added
        live = self._alive[self._rows]
        keys = self._task_keys(np.arange(start, stop))
        order = key_order(keys)
        self._keys, self._rows = _merge((self._keys[live], self._rows[live]), (keys[order], start + order))

    def clear(self) -> None:
        self.release(self.rows())

    def use_pairs(self) -> None:
        """Switch to (job, task) pair keys, for IDs that do not fit one integer."""
        self.packed = False
        self._keys = self._task_keys(self._rows)

    def _task_keys(self, rows: np.ndarray) -> np.ndarray:
        return task_keys(self._values["job_id"][rows], self._values["task_index"][rows], self.packed)

    def _reserve(self, added: int) -> None:
        capacity = len(self._alive)
        if self._size + added <= capacity:
            return
        self._resize(max(2 * capacity, self._size + added, _MIN_COMPACT), np.arange(self._size))

    def _compact_if_sparse(self) -> None:
        dead = self._size - self._count
        if dead > max(self._count, _MIN_COMPACT):
            keep = self.rows()
            self._resize(max(2 * len(keep), _MIN_COMPACT), keep)

    def _resize(self, capacity: int, keep: np.ndarray) -> None:
        """New columns of ``capacity`` rows holding the rows ``keep`` (dead or alive), in order."""
        kept = len(keep)
        for columns, kind in ((self._values, None), (self._valid, bool)):
            for name, old in columns.items():
                new = np.empty(capacity, dtype=kind or self._types[name])
                new[:kept] = old[keep]
                columns[name] = new
        alive = np.zeros(capacity, dtype=bool)
        alive[:kept] = self._alive[keep]
        self._alive = alive
        moved = np.full(max(self._size, 1), -1, dtype=np.int64)
        moved[keep] = np.arange(kept)
        index_live = moved[self._rows] >= 0
        self._keys, self._rows = self._keys[index_live], moved[self._rows[index_live]]
        self._size = kept


def _merge(index: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two (sorted keys, rows) indexes merged into one, in key order."""
    (keys, rows), (new_keys, new_rows) = index, new
    place = np.searchsorted(keys, new_keys) + np.arange(len(new_keys))
    old = np.ones(len(keys) + len(new_keys), dtype=bool)
    old[place] = False
    merged_keys, merged_rows = np.empty(len(old), dtype=keys.dtype), np.empty(len(old), dtype=np.int64)
    merged_keys[place], merged_rows[place] = new_keys, new_rows
    merged_keys[old], merged_rows[old] = keys, rows
    return merged_keys, merged_rows
