"""The times the policy wants to be called at, and the few of them asked of Batsim.

Every start drawing an eviction time, every queued task's ready time and every delayed restart
wants a call. Asked of Batsim as they come, each is a waiting actor there, and Batsim 4.2.1's waiter
sleeps on a model action that every simulation step scans: a generated warm start's 133,172 starts
at time 0 drew some 18,000 wake-ups (most of them hours away), and each further job start at time
0 then scanned them all. So a wanted time is asked only once it is within :data:`ASK_WITHIN_S` of
the earliest wanted one: the policy is called at the same times, with a few waiters in Batsim.

A time is never asked at the last moment: Batsim's clock may have passed the scheduler's ``now``
by a few milliseconds when it reads a request (its internal messages take simulated time), and it
aborts on a call asked in the past. A time wanted within :data:`MIN_LEAD_S` of ``now`` is called
that much later, and the window makes every time that was wanted long before be asked
at least :data:`ASK_WITHIN_S` ahead (at the call of an earlier time, or earlier), as a time asked
when it is wanted always was.

A time is asked rounded up to Batsim's printed precision (:data:`BATSIM_DECIMALS`): Batsim 4.2.1
writes every number of its messages with six decimals, rounded to the nearest, so a call asked at
an exact time came back as a ``now`` up to half a microsecond before it, and whatever was due at
that time (a drawn eviction, a queued task's ready time, a preemption's delay) waited for some
later call. Asked on Batsim's grid, the call's ``now`` is the time asked, never before what is due.
"""

from __future__ import annotations

import heapq

from batsim_google.scheduling.decisions import WakeAt

#: How far past the earliest wanted time a wanted time is asked of Batsim at once.
ASK_WITHIN_S = 60.0
#: The least a call is asked ahead of ``now``: a time a rounding error after it (a delay's end
#: computed from another clock reading) is past for Batsim, which aborts on it.
MIN_LEAD_S = 1e-3
#: The decimals Batsim 4.2.1 writes its numbers with (``"%6f"`` in its protocol's writer).
BATSIM_DECIMALS = 6


def on_batsim_grid(time: float) -> float:
    """The earliest time at or after ``time`` that Batsim's messages print as itself (a whole
    number of microseconds): called at it, Batsim's ``now`` is not before ``time``."""
    scale = 10**BATSIM_DECIMALS
    ticks = round(time * scale)
    return ticks / scale if ticks / scale >= time else (ticks + 1) / scale


class WakeUps:
    """Wanted call times: those held back (a heap) and those asked of Batsim (a heap)."""

    def __init__(self, window: float = ASK_WITHIN_S) -> None:
        self.window = window
        self._held: list[float] = []
        self._asked: list[float] = []
        self._known: set[float] = set()  # held or asked, not passed: no time wanted twice

    def want(self, time: float, now: float) -> None:
        """A call is wanted at ``time`` (ignored unless later than ``now``; a time within
        :data:`MIN_LEAD_S` of ``now`` is called that much after ``now``; asked on Batsim's grid,
        :func:`on_batsim_grid`)."""
        if time <= now:
            return
        time = on_batsim_grid(max(time, now + MIN_LEAD_S))
        if time not in self._known:
            self._known.add(time)
            heapq.heappush(self._held, time)

    def ask(self, now: float) -> list[WakeAt]:
        """Forget the times passed; the requests for the held times within the window of the
        earliest wanted one."""
        for heap in (self._held, self._asked):
            while heap and heap[0] <= now:
                self._known.discard(heapq.heappop(heap))
        if not self._held:
            return []
        earliest = min(self._held[0], self._asked[0]) if self._asked else self._held[0]
        requests = []
        while self._held and self._held[0] <= earliest + self.window:
            time = heapq.heappop(self._held)
            heapq.heappush(self._asked, time)
            requests.append(WakeAt(time))
        return requests

    @property
    def asked(self) -> set[float]:
        """The times asked of Batsim that had not passed at the last :meth:`ask`."""
        return set(self._asked)

    def __len__(self) -> int:
        """Wanted times not passed (at the last :meth:`ask`), asked or held."""
        return len(self._held) + len(self._asked)
