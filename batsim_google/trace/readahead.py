"""Reading ahead: a thread reads and checks the next chunks while the caller works on this one.

Arrow's CSV parser, ISA-L and numpy release the GIL, so the reading thread and the caller (the
lifecycle rebuild) run on two cores. The thread counts rows in an account of its own and hands
each chunk over with the counts of the rows read for it; the caller adds them to its account when
it takes the chunk. So rows read ahead but never taken (the caller stopped early) are not counted,
and an error of strict mode reaches the caller where reading in line would have raised it: after
the chunks before it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from batsim_google.trace.row_accounting import RowAccount

Item = TypeVar("Item")
#: Chunks waiting for the caller: enough to keep both sides busy, few enough to bound memory.
DEPTH = 2
_POLL_SECONDS = 0.1


class ReadAhead(Generic[Item]):
    """Items of ``produce(account)``, computed by a thread at most :data:`DEPTH` items ahead.

    Use as a context manager, or call :meth:`close`, so that the thread stops when the caller does.
    """

    def __init__(self, produce: Callable[[RowAccount], Iterator[Item]], account: RowAccount) -> None:
        self._account = account
        self._queue: queue.Queue = queue.Queue(maxsize=DEPTH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(produce,), name="trace-read-ahead", daemon=True)
        self._thread.start()

    def _run(self, produce: Callable[[RowAccount], Iterator[Item]]) -> None:
        own = RowAccount(strict=self._account.strict)
        items = produce(own)
        try:
            for item in items:
                if not self._put((item, own.hand_over(), None)):
                    return
            self._put((None, own.hand_over(), StopIteration()))
        except BaseException as error:  # handed to the caller, raised there
            self._put((None, own.hand_over(), error))
        finally:
            items.close()

    def _put(self, entry: tuple) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[Item]:
        while True:
            item, counts, end = self._queue.get()
            self._account.add(counts)
            if isinstance(end, StopIteration):
                return
            if end is not None:
                raise end
            yield item

    def close(self) -> None:
        """Stop the thread (it finishes the item at hand) and drop what it read ahead."""
        self._stop.set()
        self._thread.join()

    def __enter__(self) -> ReadAhead[Item]:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
