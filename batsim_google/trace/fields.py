"""Careful, row-exact parsing of text records, for input that the fast CSV path refused.

Lines are read whole (one string per physical line: split at newlines only, so line numbers are
exact), split into fields and converted column by column with Arrow compute: a field that is not a
number is found by a regular expression over the whole column, never by a Python loop. A gzip
stream cut short yields the lines before the cut and says so (:mod:`.text_chunks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from batsim_google.trace.text_chunks import TextChunk, TextChunks

_INTEGER = r"^-?[0-9]{1,19}$"
_FLOAT = r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$"
_INT64_MAX = str(2**63 - 1)


@dataclass
class LineBlock:
    """Consecutive physical lines of a file; ``first_line`` is the 1-based number of the first.

    ``cut_line`` is the number of a last line that a cut gzip stream left incomplete (not in
    ``lines``), else None.
    """

    first_line: int
    lines: pa.StringArray
    cut_line: int | None = None

    @classmethod
    def of(cls, chunk: TextChunk) -> LineBlock:
        """The lines of a chunk, split at each newline (a carriage return before it is dropped)."""
        lines = pc.split_pattern(pa.array([chunk.data], pa.binary()), b"\n").flatten()
        if chunk.data.endswith(b"\n") or not chunk.data:
            lines = lines.slice(0, len(lines) - 1)
        return cls(chunk.first_line, pc.utf8_rtrim(_text(lines), "\r"), chunk.cut_line)

    @property
    def numbers(self) -> np.ndarray:
        return np.arange(self.first_line, self.first_line + len(self.lines), dtype=np.int64)


@dataclass
class LineStream:
    """Blocks of lines of one file; after iteration, ``cut`` says why its text ended early (see
    :class:`.text_chunks.TextChunks`)."""

    path: Path
    cut: str | None = None

    def blocks(self) -> Iterator[LineBlock]:
        chunks = TextChunks(self.path)
        for chunk in chunks:
            yield LineBlock.of(chunk)
        self.cut = chunks.cut


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
