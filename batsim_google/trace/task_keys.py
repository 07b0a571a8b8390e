"""A task's key (job ID, task index) as one array element that sorts like the pair.

Sorting a chunk by task and finding tasks among those held are a sort and a binary search on
this key. The trace's IDs fit in one int64 (job IDs below 2^39, task indices below 2^24; the 2011
trace's are below 2^33 and 2^15), which numpy sorts and searches fastest; other non-negative IDs
(the format allows up to 2^63 - 1) fall back to a structured (job, task) element, slower but exact.
"""

from __future__ import annotations

import numpy as np

TASK_BITS = 24
_JOB_LIMIT = 1 << (63 - TASK_BITS)
PAIR = np.dtype([("job", "<i8"), ("task", "<i8")])


def packable(job: np.ndarray, task: np.ndarray) -> bool:
    """Whether these IDs fit the one-integer key."""
    if len(job) == 0:
        return True
    return bool(job.min() >= 0 and task.min() >= 0 and job.max() < _JOB_LIMIT and task.max() < 1 << TASK_BITS)


def task_keys(job: np.ndarray, task: np.ndarray, packed: bool) -> np.ndarray:
    """Keys of (job, task) pairs: int64 when ``packed`` (see :func:`packable`), else :data:`PAIR`."""
    if packed:
        return (job.astype(np.int64) << TASK_BITS) | task
    keys = np.empty(len(job), dtype=PAIR)
    keys["job"], keys["task"] = job, task
    return keys


def task_ids(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Job IDs and task indices of keys."""
    if keys.dtype == PAIR:
        return keys["job"], keys["task"]
    return keys >> TASK_BITS, keys & ((1 << TASK_BITS) - 1)


def key_order(keys: np.ndarray) -> np.ndarray:
    """Stable sorting order of keys (rows of one task keep their order)."""
    if keys.dtype == PAIR:
        return np.lexsort((keys["task"], keys["job"]))
    return np.argsort(keys, kind="stable")
