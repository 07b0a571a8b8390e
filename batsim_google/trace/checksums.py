"""Integrity of trace files against the ``SHA256SUM`` file shipped with the trace.

The file has GNU ``sha256sum`` lines, ``HEX  RELATIVE/PATH`` (or ``HEX *PATH``), paths relative to
the trace's top folder, which is where ``SHA256SUM`` sits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from batsim_google.trace.row_accounting import TraceError

SUMS_FILE = "SHA256SUM"
_CHUNK = 1 << 20


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def read_sums(sums_file: Path) -> dict[str, str]:
    """Relative path -> expected hex digest."""
    sums = {}
    for number, line in enumerate(sums_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        digest, _, name = line.partition(" ")
        name = name.lstrip(" *")
        if len(digest) != 64 or not name:
            raise TraceError(f"{sums_file}:{number}: not a sha256sum line")
        sums[name] = digest.lower()
    return sums


def _sums_file(path: Path) -> Path:
    for folder in (path.parent, path.parent.parent):
        if (folder / SUMS_FILE).is_file():
            return folder / SUMS_FILE
    raise TraceError(f"{path}: no {SUMS_FILE} beside it or in the folder above")


def verify(files: Iterable[Path]) -> None:
    """Check every file against its trace's SHA256SUM; a missing entry or a mismatch stops."""
    cache: dict[Path, dict[str, str]] = {}
    for path in files:
        sums_file = _sums_file(path)
        sums = cache.setdefault(sums_file, read_sums(sums_file))
        name = path.resolve().relative_to(sums_file.parent.resolve()).as_posix()
        if name not in sums:
            raise TraceError(f"{path}: not listed in {sums_file}")
        if sha256(path) != sums[name]:
            raise TraceError(f"{path}: SHA-256 differs from {sums_file} (corrupt or incomplete download)")
