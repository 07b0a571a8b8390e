"""Careful, row-exact parsing of text records, for input that the fast CSV path refused.

Lines are read whole (one string per physical line, so line numbers are exact), split into fields
and converted column by column with Arrow compute: a field that is not a number is found by a
regular expression over the whole column, never by a Python loop. A gzip stream cut short yields
the lines before the cut and says so, instead of losing the whole block.
"""

from __future__ import annotations

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
_RAW_CHUNK = 1 << 16
_INTEGER = r"^-?[0-9]{1,19}$"
_FLOAT = r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$"
_INT64_MAX = str(2**63 - 1)


class _TolerantGzip(io.RawIOBase):
    """A gzip stream that ends quietly where the data is cut or corrupt, and remembers why.

    It decompresses with zlib directly, so everything before the damage comes out.
    """

    def __init__(self, path: Path) -> None:
        self._raw = path.open("rb")
        self._inflate = zlib.decompressobj(wbits=31)
        self._out = b""
        self.error: str | None = None
        self.ends_with_newline = True

    def readable(self) -> bool:
        return True

    def _fill(self, size: int) -> None:
        while len(self._out) < size and self.error is None:
            compressed = self._raw.read(_RAW_CHUNK)
            if not compressed:
                if not self._inflate.eof:
                    self.error = "compressed data ended before the end-of-stream marker"
                return
            try:
                self._out += self._inflate.decompress(compressed)
                while self._inflate.eof and self._inflate.unused_data:  # next gzip member
                    rest = self._inflate.unused_data
                    self._inflate = zlib.decompressobj(wbits=31)
                    self._out += self._inflate.decompress(rest)
            except zlib.error as error:
                self.error = f"corrupt gzip data ({error})"

    def readinto(self, buffer) -> int:
        self._fill(len(buffer))
        data, self._out = self._out[: len(buffer)], self._out[len(buffer):]
        buffer[: len(data)] = data
        if data:
            self.ends_with_newline = data.endswith(b"\n")
        return len(data)

    def close(self) -> None:
        self._raw.close()
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
        """Blocks in order; held back by one so that a line left incomplete by a cut is known.

        Text that cannot be cut into lines (e.g. garbage from a corrupt stream, with a "line"
        longer than a block) ends the file like a cut.
        """
        compressed = self.path.name.endswith(".gz")
        stream = _TolerantGzip(self.path) if compressed else self.path.open("rb")
        held: LineBlock | None = None
        line = 1
        with stream:
            try:
                reader = pacsv.open_csv(
                    stream,
                    read_options=pacsv.ReadOptions(column_names=["line"], block_size=block_size, use_threads=False),
                    parse_options=pacsv.ParseOptions(delimiter="\x1f", quote_char=False, ignore_empty_lines=False),
                    convert_options=pacsv.ConvertOptions(column_types={"line": pa.binary()}, strings_can_be_null=False),
                )
                for batch in reader:
                    if held is not None:
                        yield held
                    held = LineBlock(line, _text(batch.column(0)))
                    line += batch.num_rows
            except (pa.ArrowInvalid, OSError) as error:
                self.cut = f"unreadable text ({error})"
            if compressed and stream.error is not None:
                self.cut = stream.error
                if held is not None and not stream.ends_with_newline:
                    held = LineBlock(held.first_line, held.lines.slice(0, len(held.lines) - 1), line - 1)
        if held is not None:
            yield held


def _text(lines: pa.BinaryArray) -> pa.StringArray:
    """Lines as text; bytes that are not UTF-8 become U+FFFD (so such a field is not a number)."""
    try:
        return lines.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([line.decode("utf-8", "replace") for line in lines.to_pylist()], pa.string())


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
