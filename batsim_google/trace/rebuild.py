"""Rebuilding the lifecycles of task_events files: chunks of rows, read-ahead and progress.

The files' rows are gathered into chunks of about :data:`CHUNK_ROWS` rows, read in a thread ahead
of the rebuild when asked (:mod:`.readahead`), and fed to :class:`~.lifecycle.TaskLifecycles`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path

import pyarrow as pa
from tqdm import tqdm

from batsim_google.trace.attempts import LifecycleBatch
from batsim_google.trace.lifecycle import TaskLifecycles
from batsim_google.trace.readahead import ReadAhead
from batsim_google.trace.reader import read_batches, source_files
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.vocabulary import DEFAULT_GRACE

#: Rows processed together: large enough to amortize the per-chunk work, small enough to stay flat.
CHUNK_ROWS = 1 << 18


def rebuild(
    sources: Iterable[str | Path],
    account: RowAccount,
    *,
    grace: float = DEFAULT_GRACE,
    verify: bool = False,
    workers: int = 1,
    until: Callable[[TaskLifecycles], bool] | None = None,
    progress: bool = False,
) -> Iterator[LifecycleBatch]:
    """Lifecycles of the task_events in ``sources``, chunk by chunk, then what is left held.

    ``until`` is asked after each chunk whether reading can stop early (e.g. a conversion window
    is complete); the rows read so far are all accounted for either way. ``workers`` > 1 reads and
    checks chunks in a thread ahead of the rebuild (:mod:`.readahead`), ``workers`` - 1 part files
    at a time (see :func:`~.reader.read_batches`); the results are the same.
    """
    lifecycles = TaskLifecycles(account, grace)
    files = source_files(sources, "task_events")

    def chunks(reading: RowAccount) -> Iterator[tuple[int, Path, pa.Table]]:
        batches = read_batches(
            files,
            "task_events",
            account=reading,
            line_numbers=True,
            verify=verify,
            workers=max(workers - 1, 1),
            file_ends=True,
        )
        gathered = _Chunks(batches)
        try:
            for path, chunk in gathered:
                yield gathered.files, path, chunk
        finally:
            batches.close()

    source = ReadAhead(chunks, account) if workers > 1 else closing(chunks(account))
    with source as items, tqdm(total=len(files), unit=" files", disable=not progress, desc="task_events") as bar:
        for files_done, path, chunk in items:
            bar.update(files_done - bar.n)
            yield lifecycles.feed(path, chunk)
            if until is not None and until(lifecycles):
                break
    yield lifecycles.finish()


class _Chunks:
    """Batches of one file gathered into tables of about :data:`CHUNK_ROWS` rows.

    A table is handed out as soon as it is full or its file ends, before anything more is read,
    so a reader stopped early leaves no row read but unprocessed.
    """

    def __init__(self, batches: Iterator[tuple[Path, pa.RecordBatch | None]]) -> None:
        self.batches = batches
        self.pending: list[pa.RecordBatch] = []
        self.files = 0

    def __iter__(self) -> Iterator[tuple[Path, pa.Table]]:
        rows = 0
        for path, batch in self.batches:
            if batch is None:
                self.files += 1
            else:
                self.pending.append(batch)
                rows += batch.num_rows
            if self.pending and (batch is None or rows >= CHUNK_ROWS):
                table, self.pending, rows = pa.Table.from_batches(self.pending), [], 0
                yield path, table
