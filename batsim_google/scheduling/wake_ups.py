"""The times the policy wants to be called at, and the few of them asked of Batsim.

Every start drawing an eviction time, every queued task's ready time and every delayed restart
wants a call. Asked of Batsim as they come, each is a waiting actor there, and Batsim 4.2.1's waiter
sleeps on a model action that every simulation step scans: a generated warm start's 133,172 starts
at time 0 drew some 18,000 wake-ups (most of them hours away), and each further job start at time
0 then scanned them all. Only the earliest wanted time is asked; when its call comes, the next
earliest is asked: the policy is called at the same times, with one or a few waiters in Batsim.
"""

from __future__ import annotations

import heapq

from batsim_google.scheduling.decisions import WakeAt


class WakeUps:
    """Wanted call times (a heap) and the ones asked of Batsim that have not passed."""

    def __init__(self) -> None:
        self._wanted: list[float] = []
        self._known: set[float] = set()  # the wanted times, for duplicates
        self.asked: set[float] = set()

    def want(self, time: float, now: float) -> None:
        """A call is wanted at ``time`` (ignored unless later than ``now``)."""
        if time > now and time not in self._known:
            self._known.add(time)
            heapq.heappush(self._wanted, time)

    def ask(self, now: float) -> list[WakeAt]:
        """Forget the times passed; the request for the earliest wanted one, unless asked already."""
        while self._wanted and self._wanted[0] <= now:
            self._known.discard(heapq.heappop(self._wanted))
        self.asked = {time for time in self.asked if time > now}
        if not self._wanted or self._wanted[0] in self.asked:
            return []
        self.asked.add(self._wanted[0])
        return [WakeAt(self._wanted[0])]

    def __len__(self) -> int:
        """Wanted times not passed (at the last :meth:`ask`)."""
        return len(self._wanted)
