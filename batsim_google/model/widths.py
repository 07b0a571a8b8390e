"""Widths of parallel jobs (processors) and the groups their makespan laws are fitted on.

Gaevoy et al. model the width as an empirical law (an array of probabilities) and, since jobs of
different widths have very different makespans, give separate makespan laws to groups of widths:
one group per width (their "$" variant), or one group per power of two and one per interval
between consecutive powers (their "&" variant): 1, 2, 3, 4, 5-7, 8, 9-15, 16, ... A group is
named by its width, or by its first and last widths joined with ``-`` (``"9-15"``); these names
are the keys of a class's ``makespan_by_group`` in model files.
"""

from __future__ import annotations

import re

import numpy as np

from batsim_google.model.vocabulary import Grouping

_NAME = re.compile(r"([1-9][0-9]*)(?:-([1-9][0-9]*))?$")


def group_bounds(widths, grouping: Grouping) -> tuple[np.ndarray, np.ndarray]:
    """First and last width of the group of each width (integers >= 1)."""
    widths = np.asarray(widths, dtype=np.int64)
    if grouping == "width":
        return widths, widths
    power = np.left_shift(1, np.frexp(widths)[1].astype(np.int64) - 1)  # the largest power of 2 <= width
    between = widths != power
    return np.where(between, power + 1, power), np.where(between, 2 * power - 1, power)


def group_names(widths, grouping: Grouping) -> np.ndarray:
    """The name of the group of each width: ``"8"``, ``"9-15"``."""
    first, last = group_bounds(widths, grouping)
    names = first.astype(str)
    return np.where(first == last, names, np.char.add(np.char.add(names, "-"), last.astype(str)))


def is_group_name(name: str, grouping: Grouping) -> bool:
    """Whether ``name`` is the name of a group of ``grouping`` (spelled as :func:`group_names` does)."""
    match = _NAME.match(name)
    return match is not None and group_names([int(match.group(1))], grouping)[0] == name
