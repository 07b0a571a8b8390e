"""Columnar records as numpy arrays, the working form of the lifecycle rebuild.

Rebuilding lifecycles is index arithmetic over a chunk's rows (gathers, cumulative sums,
segment reductions), which numpy does without per-operation overhead. Records stay numpy arrays
(a null is ``False`` in the column's validity mask) and users stay integer codes while they are
computed, carried and merged; they become polars frames, with nulls and user strings, only when
handed out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

_NUMPY = {pl.Int64: np.int64, pl.Int32: np.int32, pl.Int8: np.int8, pl.Float64: np.float64, pl.String: np.int32}


def numpy_type(kind: pl.DataType) -> type:
    """The numpy type that holds a column of polars type ``kind`` (strings: user codes)."""
    return _NUMPY[kind]


class UserCodes:
    """Users (44-character hashes, the same on every row of a task) as integer codes, ``-1`` for none.

    Codes count from 0 in order of first appearance over the whole run.
    """

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._strings = pa.array([], pa.string())

    def encode(self, users: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Codes of a column of user strings (nulls: -1)."""
        encoded = pc.dictionary_encode(users.combine_chunks() if isinstance(users, pa.ChunkedArray) else users)
        known = encoded.dictionary.to_pylist()
        new = [user for user in known if user not in self._codes]
        if new:
            self._codes.update(zip(new, range(len(self._codes), len(self._codes) + len(new))))
            self._strings = pa.concat_arrays([self._strings, pa.array(new, pa.string())])
        codes = np.array([self._codes[user] for user in known] + [-1], dtype=np.int32)
        return codes[pl.from_arrow(encoded.indices).fill_null(-1).to_numpy()]  # -1: the last, null

    def decode(self, codes: np.ndarray) -> pa.Array:
        """User strings of codes (-1: null)."""
        return self._strings.take(pa.array(codes, type=pa.int32(), mask=codes < 0))


@dataclass
class Records:
    """Columns of equal length; ``valid[name]`` masks the non-null values of a nullable column
    (a column without an entry has no null). String columns hold :class:`UserCodes` codes."""

    values: dict[str, np.ndarray]
    valid: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.values.values()))) if self.values else 0

    def take(self, index: np.ndarray) -> Records:
        return Records(
            {name: column[index] for name, column in self.values.items()},
            {name: mask[index] for name, mask in self.valid.items()},
        )

    def is_valid(self, name: str) -> np.ndarray:
        mask = self.valid.get(name)
        return np.ones(len(self), dtype=bool) if mask is None else mask

    def frame(self, schema: dict[str, pl.DataType], users: UserCodes) -> pl.DataFrame:
        """A polars frame of the columns in ``schema``, with their types and nulls."""
        arrays = []
        for name, kind in schema.items():
            values = self.values[name]
            if kind == pl.String:
                arrays.append(users.decode(values))
                continue
            mask = self.valid.get(name)
            values = values.astype(numpy_type(kind), copy=False)
            arrays.append(pa.array(values, mask=None if mask is None or mask.all() else ~mask))
        return pl.from_arrow(pa.Table.from_arrays(arrays, names=list(schema)))


def concat(parts: list[Records]) -> Records:
    """Records one after another (the parts have the same columns)."""
    names = parts[0].values
    nullable = set().union(*(part.valid for part in parts))
    return Records(
        {name: np.concatenate([part.values[name] for part in parts]) for name in names},
        {name: np.concatenate([part.is_valid(name) for part in parts]) for name in nullable},
    )
