"""Careful, row-exact parsing of text records, for input that the fast CSV path refused.

Lines are read whole (one string per physical line, so line numbers are exact), split into fields
and converted column by column with Arrow compute: a field that is not a number is found by a
regular expression over the whole column, never by a Python loop. A gzip stream cut short yields
the lines before the cut and says so, instead of losing the whole block.
"""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

LINE_BLOCK_SIZE = 1 << 20
_INTEGER = r"^-?[0-9]{1,19}$"
_FLOAT = r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$"
_INT64_MAX = str(2**63 - 1)


class _TolerantGzip(io.RawIOBase):
    """A gzip stream that ends quietly where the data is cut or corrupt, and remembers why."""

    def __init__(self, path: Path) -> None:
        self._gzip = gzip.open(path, "rb")
        self.error: str | None = None
        self.ends_with_newline = True

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.error is not None:
            return 0
        try:
            data = self._gzip.read(len(buffer))
        except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as error:
            self.error = str(error) or type(error).__name__
            return 0
        buffer[: len(data)] = data
        if data:
            self.ends_with_newline = data.endswith(b"\n")
        return len(data)

    def close(self) -> None:
        self._gzip.close()
        super().close()


@dataclass
class LineBlock:
    """Consecutive physical lines of a file; ``first_line`` is the 1-based number of the first.

    ``cut_line`` is the number of a last line that a cut gzip stream left incomplete (not in
    ``lines``), else None.
    """

    first_line: int
    lines: pa.StringArray
    cut_line: int | None = None

    @property
    def numbers(self) -> np.ndarray:
        return np.arange(self.first_line, self.first_line + len(self.lines), dtype=np.int64)


@dataclass
class LineStream:
    """Blocks of lines of one file; after iteration, ``cut`` says why a gzip stream ended early."""

    path: Path
    cut: str | None = None

    def blocks(self, block_size: int = LINE_BLOCK_SIZE) -> Iterator[LineBlock]:
        """Blocks in order; held back by one so that a line left incomplete by a cut is known."""
        compressed = self.path.name.endswith(".gz")
        stream = _TolerantGzip(self.path) if compressed else self.path.open("rb")
        with stream:
            reader = pacsv.open_csv(
                stream,
                read_options=pacsv.ReadOptions(column_names=["line"], block_size=block_size, use_threads=False),
                parse_options=pacsv.ParseOptions(delimiter="\x1f", quote_char=False, ignore_empty_lines=False),
                convert_options=pacsv.ConvertOptions(column_types={"line": pa.string()}, check_utf8=False, strings_can_be_null=False),
            )
            held: LineBlock | None = None
            line = 1
            for batch in reader:
                if held is not None:
                    yield held
                held = LineBlock(line, batch.column(0))
                line += batch.num_rows
            if held is None:
                return
            if compressed and stream.error is not None:
                self.cut = stream.error
                if not stream.ends_with_newline:
                    held = LineBlock(held.first_line, held.lines.slice(0, len(held.lines) - 1), line - 1)
            yield held


def split_fields(lines: pa.StringArray, count: int, separator: str | None) -> tuple[list[pa.Array], np.ndarray]:
    """The ``count`` fields of each line that has exactly that many, and the mask of those lines.

    ``separator`` None splits on runs of white space (leading and trailing space ignored).
    """
    if separator is None:
        parts = pc.utf8_split_whitespace(pc.utf8_trim_whitespace(lines))
    else:
        parts = pc.split_pattern(lines, separator)
    good = pc.equal(pc.list_value_length(parts), count).to_numpy(zero_copy_only=False)
    kept = parts.filter(pa.array(good))
    return [pc.list_element(kept, index) for index in range(count)], good


def parse_numbers(strings: pa.Array, kind: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """Fields -> numbers of ``kind`` (an integer or float type); empty fields become null.

    Returns the values and the mask of fields that are neither empty nor a number (those are null
    in the values). Integers are parsed as int64; narrowing is left to the caller's range checks.
    """
    empty = pc.equal(pc.utf8_length(strings), 0)
    if pa.types.is_integer(kind):
        number = pc.match_substring_regex(strings, _INTEGER)
        digits = pc.utf8_length(pc.utf8_ltrim(strings, "-"))
        too_big = pc.and_(pc.equal(digits, 19), pc.greater(pc.utf8_ltrim(strings, "-"), _INT64_MAX))
        number = pc.and_(number, pc.invert(too_big))
        target = pa.int64()
    else:
        number = pc.match_substring_regex(strings, _FLOAT)
        target = pa.float64()
    bad = pc.invert(pc.or_(number, empty))
    values = pc.cast(pc.if_else(number, strings, pa.scalar(None, pa.string())), target)
    return values, bad.to_numpy(zero_copy_only=False)
