"""Borg's scheduling passes: a pass's tasks become placeable together, later the more it holds.

In the trace's shared parts (``bench/borg_bursts.py``; docs/faithful-replay.md, "Bursts and
preemption"), Borg's events come at instants about 0.76 s apart (the median gap), a task is first
placed two instants after its submission's (80.3 % of the passes' first waves), and the tasks
(re)submitted at one instant are placed together. Passes of up to some hundreds of tasks wait the same 1.5 s whatever
their size; past that, the more tasks a pass holds, the later it is placed: passes of 2,000-2,999
tasks waited a median 3.7 s, the two of 3,000 or more 5.1 and 6.9 s. Fitted on the 189 passes of
100 tasks or more of every hour: ``max(0, tasks - 850) / 641`` seconds more.

:class:`Passes` groups the tasks (re)submitted within :data:`PASS_SPAN` of a pass's first into that
pass and says when each becomes placeable: ``placement_latency`` after its own arrival, and not
before the pass's first arrival plus the latency plus the pass's extra time.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Seconds within which tasks (re)submitted after a pass's first are of that pass: the median gap
#: between the trace's instants (0.76 s; ``bench/borg_bursts.py``).
PASS_SPAN = 0.76


@dataclass
class Pass:
    """Tasks arrived within :data:`PASS_SPAN` of ``first``: ``size`` of them."""

    first: float
    size: int = 0


class Passes:
    """The current pass, and when a pass's task becomes placeable.

    ``tasks`` is how many a pass places within the placement latency, ``rate`` how many more per
    second past them (0: no limit, every task placeable ``latency`` after its arrival)."""

    def __init__(self, latency: float, tasks: int, rate: float) -> None:
        self.latency = latency
        self.tasks = tasks
        self.rate = rate
        self._current: Pass | None = None

    def join(self, now: float) -> Pass:
        """The pass a task arriving at ``now`` joins (a new one past the span of the current)."""
        if self._current is None or now - self._current.first > PASS_SPAN:
            self._current = Pass(now)
        self._current.size += 1
        return self._current

    def ready(self, arrival: float, of: Pass) -> float:
        """When a task that arrived at ``arrival`` in the pass ``of`` (as it is now) can be placed."""
        own = arrival + self.latency
        if not self.rate or of.size <= self.tasks:
            return own
        return max(own, of.first + self.latency + (of.size - self.tasks) / self.rate)
