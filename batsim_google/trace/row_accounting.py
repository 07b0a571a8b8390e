"""What happens to every input row: used or skipped, and why.

One :class:`RowAccount` follows a run from the first file to the last. In strict mode the first bad
row stops the run with its file and line; in lenient mode it is skipped and counted under its
reason, so that a run always ends with ``rows read = rows used + rows skipped``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from batsim_google.errors import InputFileError


class TraceError(InputFileError):
    """An unreadable or inconsistent trace row or file, raised where the run stops in strict mode;
    the message names the file (and line when known)."""


@dataclass
class RowAccount:
    """Counters of one run; ``strict`` turns the first bad row into a :class:`TraceError`."""

    strict: bool = False
    read: int = 0
    used: int = 0
    skipped: Counter = field(default_factory=Counter)
    #: Events that lose rows without a count, e.g. a truncated gzip member.
    incidents: list[str] = field(default_factory=list)
    #: How some rows used were read, e.g. two rows of the same time taken in the other order.
    notes: list[str] = field(default_factory=list)

    def reject(self, path: Path | str, lines: Sequence[int], reason: str, detail: str = "") -> None:
        """Bad rows at ``lines`` of ``path``: stop (strict) or count them under ``reason``."""
        if len(lines) == 0:
            return
        if self.strict:
            suffix = f" ({detail})" if detail else ""
            raise TraceError(f"{path}:{int(lines[0])}: {reason}{suffix}")
        self.skipped[reason] += len(lines)

    def reject_all(self, path: Path | str, rejections: Sequence[tuple[Sequence[int], str, str]]) -> None:
        """Several kinds of bad rows of one block (``(lines, reason, detail)``, lines sorted):
        strict mode reports the earliest line whatever its reason."""
        rejections = [rejection for rejection in rejections if len(rejection[0])]
        if self.strict and rejections:
            lines, reason, detail = min(rejections, key=lambda rejection: rejection[0][0])
            self.reject(path, lines, reason, detail)
        for lines, reason, detail in rejections:
            self.reject(path, lines, reason, detail)

    def skip(self, reason: str, count: int) -> None:
        """Rows set aside by design, not errors (e.g. events after the trace window): counted
        under ``reason`` in both modes."""
        if count:
            self.skipped[reason] += count

    def set_aside(self, reason: str, count: int) -> None:
        """Rows counted as used that a later stage leaves out by design (e.g. a class too small to
        fit): moved to the skipped rows under ``reason``."""
        if count:
            self.used -= count
            self.skipped[reason] += count

    def incident(self, path: Path | str, message: str) -> None:
        """A fault that loses an unknown number of rows: stop (strict) or note it."""
        if self.strict:
            raise TraceError(f"{path}: {message}")
        self.incidents.append(f"{path}: {message}")

    def note(self, path: Path | str, message: str) -> None:
        """A fact about rows used (not a fault: strict mode goes on)."""
        self.notes.append(f"{path}: {message}")

    def hand_over(self) -> RowAccount:
        """The counts so far, as an account of their own; this one starts again from zero."""
        counts = RowAccount(self.strict, self.read, self.used, self.skipped, self.incidents, self.notes)
        self.read = self.used = 0
        self.skipped, self.incidents, self.notes = Counter(), [], []
        return counts

    def add(self, other: RowAccount) -> None:
        """Count another account's rows and incidents in this one."""
        self.read += other.read
        self.used += other.used
        self.skipped.update(other.skipped)
        self.incidents.extend(other.incidents)
        self.notes.extend(other.notes)

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def balanced(self) -> bool:
        return self.read == self.used + self.total_skipped

    def summary(self) -> str:
        """The accounting line every run ends with."""
        reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(self.skipped.items()))
        line = f"rows read {self.read} = used {self.used} + skipped {self.total_skipped}"
        if reasons:
            line += f" ({reasons})"
        if not self.balanced:
            line += f" [UNBALANCED by {self.read - self.used - self.total_skipped}]"
        for incident in self.incidents:
            line += f"\n  incident: {incident}"
        for note in self.notes:
            line += f"\n  note: {note}"
        return line

    def to_json(self) -> dict:
        return {
            "read": self.read,
            "used": self.used,
            "skipped": dict(sorted(self.skipped.items())),
            "incidents": list(self.incidents),
            **({"notes": list(self.notes)} if self.notes else {}),
        }
