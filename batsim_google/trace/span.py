"""How far a trace directory's task events reach: the time of its last event.

Parts come in time order, so the last event is the last line of the last part of ``task_events``;
only that part is read (decompressed as a stream, its last line kept).
"""

from __future__ import annotations

import gzip
from collections import deque
from pathlib import Path

import numpy as np

from batsim_google.trace.reader import TraceError, part_files
from batsim_google.trace.schema import AFTER_WINDOW, seconds


def last_event_time(source: str | Path) -> float:
    """Seconds from the trace window's start of the last task event in ``source`` (a trace
    directory or a task_events file)."""
    path = part_files(source, "task_events")[-1]
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", newline="") as handle:
            last = deque((line for line in handle if line.strip()), maxlen=1)
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise TraceError(f"{path}: cannot be read ({error})") from error
    field = last[0].split(",", 1)[0] if last else ""
    if not field.strip().isdigit() or int(field) >= AFTER_WINDOW:
        raise TraceError(f"{path}: its last line has no event time ({field.strip()[:40]!r})")
    return float(seconds(np.array([int(field)]))[0])
