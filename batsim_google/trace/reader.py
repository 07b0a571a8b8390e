"""Streaming reader of trace tables: part files in order, one Arrow record batch at a time.

Nothing holds more than one batch (a few MB) of a part file, so memory does not grow with the
length of the trace.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.csv as pacsv

from .schema import table_columns

BLOCK_SIZE = 4 << 20
_PART = re.compile(r"part-(\d+)-of-(\d+)\.csv(\.gz)?$")


class TraceError(ValueError):
    """Unreadable trace input; the message names the file."""


def part_files(source: str | Path, table: str) -> list[Path]:
    """The part files of ``table`` under a trace directory, or ``source`` itself if it is a file.

    A trace directory holds ``TABLE/part-NNNNN-of-NNNNN.csv[.gz]``; parts come in part order.
    """
    source = Path(source)
    if source.is_file():
        return [source]
    folder = source / table
    if not folder.is_dir():
        raise TraceError(f"{source}: no {table}/ folder and not a file")
    parts = sorted(
        (int(match.group(1)), path)
        for path in folder.iterdir()
        if (match := _PART.search(path.name))
    )
    if not parts:
        raise TraceError(f"{folder}: no part-NNNNN-of-NNNNN.csv[.gz] files")
    return [path for _, path in parts]


def _schema_csv(path: Path) -> Path | None:
    for folder in (path.parent, path.parent.parent):
        candidate = folder / "schema.csv"
        if candidate.exists():
            return candidate
    return None


def read_batches(sources: Iterable[str | Path], table: str) -> Iterator[tuple[Path, pa.RecordBatch]]:
    """Yield ``(file, batch)`` for every record batch of ``table`` in the given sources, in order."""
    for source in sources:
        for path in part_files(source, table):
            columns = table_columns(table, _schema_csv(path))
            names = [name for name, _ in columns]
            try:
                reader = pacsv.open_csv(
                    path,
                    read_options=pacsv.ReadOptions(column_names=names, block_size=BLOCK_SIZE),
                    convert_options=pacsv.ConvertOptions(column_types=dict(columns)),
                )
                for batch in reader:
                    yield path, batch
            except (pa.ArrowInvalid, OSError, EOFError) as error:
                raise TraceError(f"{path}: {error}") from error
