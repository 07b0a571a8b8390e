"""The decision dispatch table: every decision type has a handler, in every front-end."""

from __future__ import annotations

import pytest

from batsim_google.scheduling.decisions import Decision, Execute, Kill, WakeAt
from batsim_google.simulation.batsimpy_frontend import BatsimPyCell
from batsim_google.simulation.dispatch import HANDLERS, dispatch
from batsim_google.simulation.googleCell import GoogleCell


def test_every_decision_type_has_a_handler():
    assert set(HANDLERS) == set(Decision.__args__)


@pytest.mark.parametrize("frontend", [GoogleCell, BatsimPyCell])
def test_every_front_end_has_every_handler(frontend):
    assert [name for name in HANDLERS.values() if not callable(getattr(frontend, name, None))] == []


def test_a_decision_goes_to_the_handler_of_its_type():
    class Recorder:
        def __init__(self) -> None:
            self.calls = []

        def __getattr__(self, name):
            return lambda decision: self.calls.append((name, decision))

    recorder = Recorder()
    for decision in (Execute("w0!1", 3), Kill(("w0!1",)), WakeAt(5.0)):
        dispatch(recorder, decision)
    assert recorder.calls == [("execute", Execute("w0!1", 3)), ("kill", Kill(("w0!1",))), ("wake_at", WakeAt(5.0))]


def test_an_unknown_decision_is_refused():
    with pytest.raises(TypeError, match="unknown decision"):
        dispatch(object(), "run everything")
