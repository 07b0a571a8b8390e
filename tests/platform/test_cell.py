"""The default cell: the published table, and scaled cells by largest remainder."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from batsim_google.platform.cell import google_2011_cell, scaled_counts
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES, GOOGLE_2011_TYPES

COUNTS = np.array([count for count, *_ in GOOGLE_2011_TYPES])


def test_full_cell_is_the_published_table():
    cell = google_2011_cell()
    assert len(cell) == GOOGLE_2011_MACHINES == 12_583
    observed = cell.machines.group_by("platform_id", "cpu", "memory", maintain_order=True).len()
    assert [tuple(row) for row in observed.iter_rows()] == [
        (platform, cpu, memory, count) for count, platform, cpu, memory in GOOGLE_2011_TYPES
    ]


@given(st.integers(min_value=len(COUNTS), max_value=200_000))
def test_scaled_counts_sum_and_keep_every_type(total):
    scaled = scaled_counts(COUNTS, total)
    assert scaled.sum() == total
    assert (scaled >= 1).all()


@given(st.integers(min_value=2_000, max_value=200_000))
def test_scaled_counts_stay_within_one_machine_of_the_quota(total):
    # Types of quota < 1 may be lifted to one machine, each taken from the largest type.
    scaled = scaled_counts(COUNTS, total)
    quotas = COUNTS * total / COUNTS.sum()
    lifted = int((quotas < 1).sum())
    deviation = np.abs(scaled - quotas)
    assert (deviation[1:] < 1).all()
    assert deviation[0] < 1 + lifted


@given(st.integers(min_value=0, max_value=len(COUNTS) - 1))
def test_scaled_counts_below_the_type_count_is_plain_largest_remainder(total):
    scaled = scaled_counts(COUNTS, total)
    assert scaled.sum() == total
    quotas = COUNTS * total / COUNTS.sum()
    assert (np.abs(scaled - quotas) < 1).all()


def test_largest_remainder_by_hand():
    # quotas 2.5, 1.5, 1.0 for 5 seats: floors 2, 1, 1 and the extra seat to the earlier .5 tie.
    assert scaled_counts(np.array([5, 3, 2]), 5).tolist() == [3, 1, 1]
    # 10 seats, quotas 9.9, 0.1: the second type is lifted to one machine, taken from the first.
    assert scaled_counts(np.array([99, 1]), 10).tolist() == [9, 1]


def test_scaled_cells_keep_the_type_order_and_reject_bad_counts():
    cell = google_2011_cell(64)
    assert len(cell) == 64
    types = cell.machines.unique(maintain_order=True)
    assert types.height == len(GOOGLE_2011_TYPES)
    assert "scaled to 64" in cell.description
    with pytest.raises(ValueError, match="machine count must be in 1..1000000"):
        google_2011_cell(0)
