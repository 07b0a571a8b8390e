"""A JSON file's shape, checked in one vectorized pass before a streaming parser reads it.

A streaming parser (ijson) keeps the path to each value: arrays nested ``d`` deep cost memory in
``d^2`` (100,000 ``[`` in a 200 KB file would take tens of gigabytes), and it reads a top-level key
given twice as two values (two ``jobs`` arrays become one longer workload, where Batsim keeps the
last). :func:`check_json_shape` finds both from the raw bytes, a few megabytes at a time with numpy,
strings (and the brackets and escaped quotes inside them) told apart from the structure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from batsim_google.errors import InputFileError
from batsim_google.parameters import MAX_DEPTH

CHUNK_BYTES = 1 << 22
QUOTE, BACKSLASH = ord('"'), ord("\\")
OPENING, CLOSING = b"[{", b"]}"
#: Top-level strings past which the top level is no object of a few keys (no Batsim workload):
#: their keys are then left to the parser.
MAX_TOP_STRINGS = 10_000


def _real_quotes(data: np.ndarray, backslashes_before: int) -> tuple[np.ndarray, int]:
    """Positions of the quotes of ``data`` that no backslash escapes (an even run of backslashes
    before them), given the run that ended the previous chunk; and the run that ends this one."""
    quotes = np.flatnonzero(data == QUOTE)
    slash = data == BACKSLASH
    if not slash.any():
        return (quotes[1:] if backslashes_before % 2 and len(quotes) and quotes[0] == 0 else quotes), 0
    last_other = np.maximum.accumulate(np.where(slash, -1, np.arange(len(data))))
    previous = np.maximum(quotes - 1, 0)
    runs = np.where(quotes > 0, quotes - 1 - last_other[previous], 0)
    runs += np.where((quotes == 0) | (last_other[previous] == -1), backslashes_before, 0)
    trailing = len(data) - 1 - last_other[-1] + (backslashes_before if last_other[-1] == -1 else 0)
    return quotes[runs % 2 == 0], int(trailing)


def check_json_shape(path: str | Path, max_depth: int = MAX_DEPTH) -> dict[bytes, int]:
    """Refuse, with an InputFileError naming the file, JSON nested more than ``max_depth`` deep or
    whose top-level object gives a key twice; other errors are left to the parser. Returns the
    top-level keys (raw bytes) with the offset of their value (empty past
    :data:`MAX_TOP_STRINGS` top-level strings)."""
    depth, in_string, backslashes, offset = 0, False, 0, 0
    top_quotes: list[int] = []
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            data = np.frombuffer(chunk, np.uint8)
            quotes, backslashes = _real_quotes(data, backslashes)
            brackets = np.flatnonzero(np.isin(data, np.frombuffer(OPENING + CLOSING, np.uint8)))
            quotes_before = np.searchsorted(quotes, brackets)
            outside = (quotes_before + in_string) % 2 == 0
            brackets = brackets[outside]
            steps = np.where(np.isin(data[brackets], np.frombuffer(OPENING, np.uint8)), 1, -1)
            levels = depth + np.cumsum(steps)
            if len(levels) and levels.max() > max_depth:
                raise InputFileError(f"{path}: arrays or objects nested more than {max_depth} deep")
            if len(top_quotes) < MAX_TOP_STRINGS:
                at = np.searchsorted(brackets, quotes) - 1
                level = np.where(at >= 0, levels[np.maximum(at, 0)] if len(levels) else depth, depth)
                top_quotes += (quotes[level == 1] + offset).tolist()
            depth = int(levels[-1]) if len(levels) else depth
            in_string = bool((len(quotes) + in_string) % 2)
            offset += len(chunk)
        return _top_keys(path, handle, top_quotes) if len(top_quotes) <= MAX_TOP_STRINGS else {}


def _top_keys(path: str | Path, handle, quotes: list[int]) -> dict[bytes, int]:
    """The top-level strings (opening and closing quotes paired) that a colon follows, with the
    offset after the colon; a key given twice is refused."""
    keys = {}
    for start, end in zip(quotes[::2], quotes[1::2]):
        handle.seek(end + 1)
        following = handle.read(64)
        colon = len(following) - len(following.lstrip())
        if not following[colon:].startswith(b":"):
            continue
        handle.seek(start + 1)
        key = handle.read(end - start - 1)
        if key in keys:
            raise InputFileError(f"{path}: key {key.decode('utf-8', 'replace')!r} is given twice at the top level")
        keys[key] = end + 1 + colon + 1
    return keys
