"""pybatsim's message handling without its cost per message when nobody reads its log.

pybatsim 3.2.1 formats every message it receives and sends into its log line before the logger
decides to drop it (``"...{}".format(msg)``: the ``repr`` of the whole message, events and jobs
included), so a run at the warning level pays for it at every message: about a twentieth of the
scheduler's process on the whole cell's hour (``bench/protocol.py``). Here the received message is
a dict whose ``repr`` is a summary, and the sent one, once encoded, keeps a summary of its events in
place of them: the bytes exchanged with Batsim are the same, only the dropped log lines change.
With the front-end's ``verbose`` option, nothing is changed and pybatsim logs every message whole.
"""

from __future__ import annotations

from collections.abc import Callable


class QuietMessage(dict):
    """A Batsim message whose ``repr`` (what pybatsim formats for its log) is a summary."""

    __slots__ = ()

    def __repr__(self) -> str:
        return summary(self)


def summary(message: dict) -> str:
    """``{'now': 12.5, 'events': <3 events>}``: the message's time and how many events it carries."""
    return f"{{'now': {message.get('now')!r}, 'events': <{len(message.get('events', ()))} events>}}"


def quiet(
    receive: Callable[..., dict | None], send: Callable[[dict], None]
) -> tuple[Callable[..., dict | None], Callable[[dict], None]]:
    """pybatsim's network ``recv`` and ``send``, with messages that pybatsim's log formats as summaries."""

    def quiet_receive(blocking: bool = False) -> dict | None:
        message = receive(blocking=blocking)
        return None if message is None else QuietMessage(message)

    def quiet_send(message: dict) -> None:
        send(message)
        message["events"] = _Summary(len(message["events"]))  # sent: pybatsim only logs it now

    return quiet_receive, quiet_send


class _Summary:
    """What stands for a sent message's events in pybatsim's log line."""

    __slots__ = ("count",)

    def __init__(self, count: int) -> None:
        self.count = count

    def __repr__(self) -> str:
        return f"<{self.count} events>"
