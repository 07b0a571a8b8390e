"""Items taken a chunk at a time: a streamed input (ijson's values, a workload's jobs) read into
lists of bounded length, so memory holds one chunk, never the whole input.

Kept apart from the readers that use it so that the simulation's streaming of a workload imports
it without the fitting's table libraries (polars), which the scheduler's start-up must not load.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

#: Items per chunk unless told: columns of 100,000 rows are cheap to build and to append.
CHUNK = 100_000


def in_chunks(items: Iterable[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
