"""Streamed items taken a chunk at a time: every item once, in order, in chunks of the size asked."""

from __future__ import annotations

from batsim_google.fitting.chunks import in_chunks


def test_chunks_hold_every_item_once_in_order_the_last_one_shorter():
    chunks = list(in_chunks(iter(range(7)), 3))
    assert chunks == [[0, 1, 2], [3, 4, 5], [6]]


def test_an_exact_multiple_ends_on_a_full_chunk_and_nothing_gives_no_chunk():
    assert list(in_chunks(range(6), 3)) == [[0, 1, 2], [3, 4, 5]]
    assert list(in_chunks(iter(()), 3)) == []
