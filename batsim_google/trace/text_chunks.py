"""A text file's bytes in chunks of whole lines, read and decompressed in the caller's thread.

Arrow then parses each chunk from a native buffer, so no Arrow thread ever calls back into a Python
file object: such a call, still pending when the interpreter exits (after an error, or when a caller
stops early), aborts the process ("terminate called without an active exception"). A gzip stream
that is cut short or damaged yields everything before the damage and says why; ISA-L decompresses
it, three to four times as fast as zlib.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import isal.isal_zlib

#: Bytes per chunk; about 1 MB is where Arrow's CSV parser runs fastest on the trace.
CHUNK_SIZE = 1 << 20
_COMPRESSED_PIECE = 1 << 16


@dataclass
class TextChunk:
    """Consecutive lines of a file: ``data`` ends with a newline except perhaps at the end of the
    file; ``first_line`` is the 1-based number of its first line. ``cut_line`` is the number of a
    last line that a damaged gzip stream left incomplete (not in ``data``), else None."""

    first_line: int
    data: bytes
    cut_line: int | None = None

    @cached_property
    def line_count(self) -> int:
        return self.data.count(b"\n") + (not self.data.endswith(b"\n"))


class _Gunzip:
    """Decompressed pieces of a gzip file (members in sequence); ends quietly at damage, and
    ``error`` then says what it was."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self.error: str | None = None

    def pieces(self) -> Iterator[bytes]:
        inflate = isal.isal_zlib.decompressobj(wbits=31)
        with self._path.open("rb") as raw:
            while compressed := raw.read(_COMPRESSED_PIECE):
                try:
                    yield inflate.decompress(compressed)
                    while inflate.eof and inflate.unused_data:  # the next gzip member
                        rest = inflate.unused_data
                        inflate = isal.isal_zlib.decompressobj(wbits=31)
                        yield inflate.decompress(rest)
                except isal.isal_zlib.error as error:
                    self.error = f"corrupt gzip data ({error})"
                    return
        if not inflate.eof:
            self.error = "compressed data ended before the end-of-stream marker"


def _plain_pieces(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while piece := handle.read(CHUNK_SIZE):
            yield piece


@dataclass
class TextChunks:
    """The chunks of one file (``.gz`` files are decompressed), cut at the last newline before
    each multiple of ``size`` bytes (as Arrow cuts its blocks); after iteration, ``cut`` says why
    the text ended before the end of the file (a damaged gzip stream, or bytes that are not lines
    of text), else None."""

    path: Path
    size: int = CHUNK_SIZE
    cut: str | None = None

    def __iter__(self) -> Iterator[TextChunk]:
        gunzip = _Gunzip(self.path) if self.path.name.endswith(".gz") else None
        pieces = gunzip.pieces() if gunzip else _plain_pieces(self.path)
        pending, line, start, boundary = bytearray(), 1, 0, self.size  # start: offset of pending
        for piece in pieces:
            pending += piece
            while start + len(pending) >= boundary:
                end = pending.rfind(b"\n", 0, boundary - start) + 1
                if end == 0:
                    self.cut = f"line {line} is longer than {self.size} bytes (not a text file?)"
                    pieces.close()
                    return
                with memoryview(pending) as view:
                    chunk = TextChunk(line, bytes(view[:end]))
                del pending[:end]
                line, start, boundary = line + chunk.line_count, start + end, boundary + self.size
                yield chunk
        if gunzip and gunzip.error:
            self.cut = f"gzip stream damaged or cut short ({gunzip.error})"
            if pending and not pending.endswith(b"\n"):
                end = pending.rfind(b"\n") + 1
                yield TextChunk(line, bytes(pending[:end]), cut_line=line + pending.count(b"\n", 0, end))
                return
        if pending:
            yield TextChunk(line, bytes(pending))
