"""Streaming reader of trace tables: part files in order, one Arrow record batch at a time.

Nothing holds more than one chunk (about a MB of text) of a part file, or with ``workers`` > 1 that
many parts, so memory does not grow with the length of the trace. Each file is read in chunks of
whole lines (:mod:`.text_chunks`), each parsed by Arrow's typed CSV parser (the fast path); a chunk
that parser refuses (a field that is not a number, a wrong column count, the end of a cut gzip
stream) is read again line by line (:mod:`.fields`) to find and count, or report, the exact bad
lines. Every row then passes the same checks (mandatory fields, codes, time order) and is either
yielded or rejected through a :class:`RowAccount`.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from batsim_google.trace import checksums
from batsim_google.trace.fields import LineBlock, parse_numbers, split_fields
from batsim_google.trace.row_accounting import RowAccount, TraceError
from batsim_google.trace.schema import AFTER_WINDOW, BEFORE_WINDOW, DOMAINS, MANDATORY, table_columns
from batsim_google.trace.text_chunks import CHUNK_SIZE, TextChunks

__all__ = ["TraceError", "parse_csv", "part_files", "read_batches", "source_files"]

_PART = re.compile(r"part-(\d+)-of-(\d+)\.csv(\.gz)?$")
Columns = list[tuple[str, pa.DataType]]
_WHOLE_FILE = 1 << 62


def part_files(source: str | Path, table: str) -> list[Path]:
    """The part files of ``table`` under a trace directory, or ``source`` itself if it is a file.

    A trace directory holds ``TABLE/part-NNNNN-of-NNNNN.csv[.gz]``; parts come in part order.
    """
    source = Path(source)
    _reachable(source)
    if source.is_file():
        return [source]
    folder = source / table
    if not folder.is_dir():
        _reachable(folder)
        raise TraceError(f"{source}: no {table}/ folder and not a file")
    parts = sorted((int(match.group(1)), path) for path in folder.iterdir() if (match := _PART.search(path.name)))
    if not parts:
        raise TraceError(f"{folder}: no part-NNNNN-of-NNNNN.csv[.gz] files")
    return [path for _, path in parts]


def _reachable(path: Path) -> None:
    """Refuse a path that exists but cannot be reached (a symlink loop, no permission), naming
    why, rather than taking it for missing."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise TraceError(f"{path}: {error.strerror or error}") from None


def missing_parts(files: Sequence[Path]) -> str | None:
    """What parts are missing between the first and the last of ``files`` (all part files of one
    table), e.g. ``'part 1 of 500 (between part-00000 and part-00002)'``; None if none is."""
    numbers = sorted({int(match.group(1)) for path in files if (match := _PART.search(path.name))})
    if len(numbers) < 2:
        return None
    missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
    if not missing:
        return None
    shown = ", ".join(map(str, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return f"part(s) {shown} missing between part {numbers[0]} and part {numbers[-1]}: their rows are not read"


def source_files(sources: Iterable[str | Path], table: str) -> list[Path]:
    """All files of ``table`` in the sources; in part order when every name is a part name."""
    files = [path for source in sources for path in part_files(source, table)]
    numbers = [_PART.search(path.name) for path in files]
    if all(numbers):
        files = [path for _, path in sorted(zip((int(m.group(1)) for m in numbers), files), key=lambda x: x[0])]
    return files


def _schema_csv(path: Path) -> Path | None:
    for folder in (path.parent, path.parent.parent):
        candidate = folder / "schema.csv"
        if candidate.exists():
            return candidate
    return None


def native_buffer(data: bytes) -> pa.Buffer:
    """``data`` copied into memory Arrow allocated, holding no Python object.

    A buffer wrapping the ``bytes`` is released by whichever Arrow thread drops it last, which
    takes the GIL to do so; a threaded parse that fails returns before its tasks have all ended,
    so that thread may be an Arrow worker while the interpreter exits after the error: it is then
    ended inside a C++ destructor, and the process aborts ("terminate called without an active
    exception"). An Arrow-allocated copy is freed without Python.
    """
    buffer = pa.allocate_buffer(len(data))
    np.frombuffer(buffer, dtype=np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
    return buffer


def parse_csv(data: bytes, columns: Columns) -> pa.Table:
    """Arrow's typed parse of whole lines of text, with its threads, from a native buffer (nothing
    calls back into Python, :func:`native_buffer`). Raises :class:`pyarrow.ArrowInvalid` on a bad
    field or column count."""
    return pacsv.read_csv(
        pa.BufferReader(native_buffer(data)),
        read_options=pacsv.ReadOptions(column_names=[name for name, _ in columns], block_size=CHUNK_SIZE),
        parse_options=pacsv.ParseOptions(quote_char=False, ignore_empty_lines=False),
        convert_options=pacsv.ConvertOptions(column_types=dict(columns), null_values=[""], strings_can_be_null=True),
    )


@dataclass
class _Chunk:
    """Rows parsed from one file, their line numbers, and the lines the parser refused."""

    batch: pa.RecordBatch
    lines: np.ndarray
    rejects: list[tuple[np.ndarray, str, str]] = field(default_factory=list)
    incident: str | None = None


def _file_chunks(path: Path, columns: Columns, whole: bool = False) -> Iterator[_Chunk]:
    """Each chunk of text by the fast typed parse; a chunk that the parser refuses, or whose rows
    are not its lines one for one (a carriage return alone ends an Arrow row), line by line.

    ``whole`` parses the file as one chunk with Arrow's threads (blocks in parallel, memory: one
    file) instead of streaming it one chunk at a time.
    """
    text = TextChunks(path, size=_WHOLE_FILE if whole else CHUNK_SIZE)
    for chunk in text:
        table = None
        if chunk.cut_line is None:
            try:
                table = parse_csv(chunk.data, columns)
            except pa.ArrowInvalid:
                pass
        if table is None or table.num_rows != chunk.line_count:
            yield _careful_chunk(LineBlock.of(chunk), columns)
            continue
        line = chunk.first_line
        for batch in table.to_batches():
            yield _Chunk(batch, np.arange(line, line + batch.num_rows, dtype=np.int64))
            line += batch.num_rows
    if text.cut is not None:
        yield _Chunk(
            pa.RecordBatch.from_arrays(
                [pa.array([], kind) for _, kind in columns], names=[name for name, _ in columns]
            ),
            np.empty(0, dtype=np.int64),
            incident=f"{text.cut}; rows after it are lost",
        )


def _careful_chunk(block: LineBlock, columns: Columns) -> _Chunk:
    """The rows of a block that parse, and its bad lines with the reason (and, for a field that is
    not a number, the field of the first such line)."""
    names = [name for name, _ in columns]
    lines, numbers = block.lines, block.numbers
    empty = pc.equal(pc.utf8_length(lines), 0).to_numpy(zero_copy_only=False)
    rejects = [(numbers[empty], "empty line", "")]
    fields, good = split_fields(lines, len(columns), ",")
    rejects.append((numbers[~good & ~empty], "wrong column count", f"expected {len(columns)} fields"))
    numbers = numbers[good]
    arrays, bad, first_refused = [], np.zeros(len(numbers), dtype=bool), {}
    for (name, kind), values in zip(columns, fields):
        if pa.types.is_string(kind):
            arrays.append(pc.if_else(pc.equal(pc.utf8_length(values), 0), pa.scalar(None, pa.string()), values))
            continue
        parsed, refused = parse_numbers(values, kind)
        if refused.any():
            row = int(np.argmax(refused))
            first_refused.setdefault(row, f"{name}={values[row].as_py()!r}")
        bad |= refused
        arrays.append(parsed)
    detail = first_refused[min(first_refused)] if first_refused else ""
    rejects.append((numbers[bad], "non-numeric field", detail))
    keep = pa.array(~bad)
    batch = pa.RecordBatch.from_arrays([array.filter(keep) for array in arrays], names=names)
    if block.cut_line is not None:
        rejects.append((np.array([block.cut_line]), "line cut by the end of a damaged gzip stream", ""))
    return _Chunk(batch, numbers[~bad], rejects)


class _Checks:
    """Row checks that need no lifecycle: mandatory fields, codes, finite numbers, time order."""

    def __init__(self, table: str, columns: Columns, account: RowAccount) -> None:
        self.columns = columns
        self.schema = pa.schema(columns)
        self.names = {name for name, _ in columns}
        self.mandatory = [name for name in MANDATORY[table] if name in self.names]
        self.domains = {name: bounds for name, bounds in DOMAINS[table].items() if name in self.names}
        self.account = account
        self.last_time = -1

    def __call__(
        self, path: Path, batch: pa.RecordBatch, lines: np.ndarray, next_time: int | None = None
    ) -> tuple[pa.RecordBatch, np.ndarray]:
        ok = np.ones(batch.num_rows, dtype=bool)
        rejections = []

        def reject(mask: np.ndarray, reason: str, detail: str = "") -> None:
            bad = mask & ok
            rejections.append((lines[bad], reason, detail))
            ok[bad] = False

        if batch.column("time").null_count:
            blank = np.logical_and.reduce([column.is_null().to_numpy(zero_copy_only=False) for column in batch.columns])
            reject(blank, "empty line")
        for name in self.mandatory:
            column = batch.column(name)
            if column.null_count:
                reject(column.is_null().to_numpy(zero_copy_only=False), "missing mandatory field", name)
        for name, kind in self.columns:
            column = batch.column(name)
            if pa.types.is_floating(kind) and not np.isfinite(pc.sum(column).as_py() or 0.0):
                not_finite = pc.fill_null(pc.invert(pc.is_finite(column)), False)
                reject(not_finite.to_numpy(zero_copy_only=False), "non-numeric field", name)
        for name, (low, high) in self.domains.items():
            column = batch.column(name)
            extremes = pc.min_max(column)
            if extremes["min"].as_py() is None or low <= extremes["min"].as_py() and extremes["max"].as_py() <= high:
                continue
            outside = pc.fill_null(pc.or_(pc.less(column, low), pc.greater(column, high)), False)
            reason = "unknown event type" if name == "event_type" else "value out of range"
            reject(outside.to_numpy(zero_copy_only=False), reason, name)
        self._check_order(batch, ok, reject, next_time)
        self.account.reject_all(path, rejections)
        if not ok.all():
            batch, lines = batch.filter(pa.array(ok)), lines[ok]
        if batch.schema != self.schema:
            batch = pa.RecordBatch.from_arrays(
                [batch.column(name).cast(kind) for name, kind in self.columns], schema=self.schema
            )
        return batch, lines

    def _check_order(self, batch: pa.RecordBatch, ok: np.ndarray, reject, next_time: int | None) -> None:
        """Rows are sorted by time (special times, before/after the window, are exempt); see
        :func:`out_of_order`. ``next_time`` is the time of the row after the batch, if known."""
        time = batch.column("time").fill_null(BEFORE_WINDOW).to_numpy()
        ordinary = ok & (time != BEFORE_WINDOW) & (time != AFTER_WINDOW)
        times = time[ordinary]
        if len(times) == 0:
            return
        late, judged_against, self.last_time = out_of_order(times, self.last_time, next_time)
        if late.any():
            mask = np.zeros(len(ok), dtype=bool)
            mask[np.flatnonzero(ordinary)[late]] = True
            reject(mask, "time out of order", f"time {times[int(np.argmax(late))]} after {judged_against}")


def ordinary_times(batch: pa.RecordBatch) -> np.ndarray:
    """The times of a batch that are neither null nor special (before/after the window)."""
    time = batch.column("time").drop_null().to_numpy()
    return time[(time != BEFORE_WINDOW) & (time != AFTER_WINDOW)]


def out_of_order(times: np.ndarray, reference: int, next_time: int | None) -> tuple[np.ndarray, int, int]:
    """The rows of ``times`` that are out of order, the reference the first of them was judged
    against, and the new reference.

    Walking the rows with ``reference`` = the time of the last row kept, a row is out of order when
    it is earlier than the reference, or when it alone jumps ahead: later than the next row while
    that next row is not earlier than the reference. So one wild time (e.g. 9e18) skips that row,
    not all its successors. A row with no known successor is judged by the reference only.
    """
    late = np.zeros(len(times), dtype=bool)
    if times[0] >= reference and (np.diff(times) >= 0).all() and (next_time is None or next_time >= times[-1]):
        return late, reference, int(times[-1])
    first_reference = None
    for index, (time, after) in enumerate(zip(times.tolist(), [*times[1:].tolist(), next_time])):
        if time < reference or (after is not None and reference <= after < time):
            late[index] = True
            first_reference = reference if first_reference is None else first_reference
        else:
            reference = time
    return late, first_reference, reference


def read_batches(
    sources: Iterable[str | Path],
    table: str,
    *,
    account: RowAccount | None = None,
    line_numbers: bool = False,
    verify: bool = False,
    workers: int = 1,
    file_ends: bool = False,
) -> Iterator[tuple[Path, pa.RecordBatch | None]]:
    """Yield ``(file, batch)`` for every record batch of ``table`` in the given sources, in order.

    ``account`` (default: a strict one) decides what a bad row does and counts rows read and
    skipped; the caller counts the rows it uses. Rows the trace synthesized (``missing_info``
    set) are read like the others: they carry a task's state, and dropping them is a choice about
    records (see :class:`~.stats.TraceStats`, :class:`~.convert.Selection`). ``line_numbers``
    adds a ``line`` column (1-based line of the row in its file). ``verify`` checks files against the trace's SHA256SUM first.
    ``workers`` > 1 parses up to that many part files ahead, each with Arrow's threads, while the
    caller works on the current one (memory: that many parts).
    ``file_ends`` yields ``(file, None)`` after the last batch of each file, so that a caller can
    act at a file's end without reading into the next one.
    """
    account = account if account is not None else RowAccount(strict=True)
    files = source_files(sources, table)
    if gap := missing_parts(files):
        account.note(files[0].parent, gap)
    if verify:
        checksums.verify(files)
    columns = {path: table_columns(table, _schema_csv(path)) for path in files}
    checks: _Checks | None = None
    for path, chunks in _parsed(files, columns, workers):
        if checks is None or checks.columns != columns[path]:
            last_time = checks.last_time if checks else -1
            checks = _Checks(table, columns[path], account)
            checks.last_time = last_time
        for chunk, next_time in _with_next_time(chunks):
            account.read += chunk.batch.num_rows + sum(len(lines) for lines, _, _ in chunk.rejects)
            account.reject_all(path, chunk.rejects)
            if chunk.incident:
                account.incident(path, chunk.incident)
            if chunk.batch.num_rows == 0:
                continue
            batch, lines = checks(path, chunk.batch, chunk.lines, next_time)
            if batch.num_rows == 0:
                continue
            if line_numbers:
                batch = batch.append_column("line", pa.array(lines))
            yield path, batch
        if file_ends:
            yield path, None


def _with_next_time(chunks: Iterable[_Chunk]) -> Iterator[tuple[_Chunk, int | None]]:
    """Each chunk of a file with the first ordinary time of the next chunk (None: no such time),
    so that the order check can judge a chunk's last row by its successor."""
    held: _Chunk | None = None
    for chunk in chunks:
        if held is not None:
            times = ordinary_times(chunk.batch)
            yield held, int(times[0]) if len(times) else None
        held = chunk
    if held is not None:
        yield held, None


def _parsed(files: list[Path], columns: dict[Path, Columns], workers: int) -> Iterator[tuple[Path, Iterable[_Chunk]]]:
    """Each file with its chunks; with workers > 1, files are parsed ahead in a thread pool."""
    if workers <= 1:
        for path in files:
            yield path, _file_chunks(path, columns[path])
        return

    def parse(path: Path) -> list[_Chunk]:
        return list(_file_chunks(path, columns[path], whole=True))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = deque((path, pool.submit(parse, path)) for path in files[:workers])
        for path in files[workers:] + [None] * workers:
            if not pending:
                break
            done_path, future = pending.popleft()
            if path is not None:
                pending.append((path, pool.submit(parse, path)))
            yield done_path, future.result()
