"""The policy's decisions, each to its front-end handler: one table for every front-end.

A front-end (pybatsim, batsim-py) has one method per decision type, named here, that turns the
decision into its library's calls. A new decision type is one entry here and one method in each
front-end (tests check that every front-end has every handler).
"""

from __future__ import annotations

from batsim_google.scheduling.decisions import (
    Decision,
    Execute,
    Kill,
    Register,
    RegistrationFinished,
    Reject,
    SwitchOff,
    SwitchOn,
    WakeAt,
)

#: Decision type -> name of the front-end method that carries it out.
HANDLERS: dict[type, str] = {
    Execute: "execute",
    Kill: "kill",
    Reject: "reject",
    Register: "register",
    SwitchOn: "switch_on",
    SwitchOff: "switch_off",
    WakeAt: "wake_at",
    RegistrationFinished: "registration_finished",
}


def dispatch(frontend: object, decision: Decision) -> None:
    """Carry out ``decision`` with ``frontend``'s handler for its type."""
    name = HANDLERS.get(type(decision))
    if name is None:
        raise TypeError(f"unknown decision {decision!r}")
    getattr(frontend, name)(decision)
