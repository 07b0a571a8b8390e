"""Gaevoy et al.'s width groups computed independently of the package, for tests of several folders."""

from __future__ import annotations


def expected_pow2_name(width: int) -> str:
    """Gaevoy et al.'s groups, by integer arithmetic: a power of 2 alone, the widths between two."""
    power = 1 << (width.bit_length() - 1)
    if width == power:
        return str(width)
    first, last = power + 1, 2 * power - 1
    return str(first) if first == last else f"{first}-{last}"
