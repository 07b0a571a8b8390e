"""What the policy asks the simulator to do; a front-end turns these into protocol messages."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Execute:
    job_id: str
    machine: int


@dataclass(frozen=True)
class Kill:
    """Stop running jobs (never pending ones: Batsim aborts on that)."""

    job_ids: tuple[str, ...]


@dataclass(frozen=True)
class Reject:
    """Drop submitted jobs that will never run."""

    job_ids: tuple[str, ...]


@dataclass(frozen=True)
class Register:
    """Submit a new job standing for a stopped task (dynamic job registration).

    ``work`` is the delay of a task's profile; a service runs until its ``walltime`` (its
    remaining or full lifetime) and needs no delay of its own.
    """

    job_id: str
    kind: str
    work: float


@dataclass(frozen=True)
class SwitchOn:
    machines: tuple[int, ...]


@dataclass(frozen=True)
class SwitchOff:
    machines: tuple[int, ...]


@dataclass(frozen=True)
class WakeAt:
    time: float


@dataclass(frozen=True)
class RegistrationFinished:
    """No job will be registered any more: lets Batsim end the simulation."""


Decision = Execute | Kill | Reject | Register | SwitchOn | SwitchOff | WakeAt | RegistrationFinished
