"""A minimal stand-in for Batsim, for testing the policy core: it obeys decisions like Batsim does.

It checks what Batsim would abort on (executing a job that is not submitted, killing a job that is
not running, an unknown job) and keeps its own record of what runs where, so that tests can check
the policy's invariants independently of the policy's own bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from batsim_google.scheduling.decisions import (
    Execute,
    Kill,
    Register,
    RegistrationFinished,
    Reject,
    SwitchOff,
    SwitchOn,
    WakeAt,
)
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.tasks import JobRequest


@dataclass
class FakeBatsim:
    policy: CellPolicy
    now: float = 0.0
    requests: dict[str, JobRequest] = field(default_factory=dict)
    submitted: set[str] = field(default_factory=set)
    running: dict[str, int] = field(default_factory=dict)  # job -> machine
    done: set[str] = field(default_factory=set)
    to_acknowledge: list[str] = field(default_factory=list)
    switching: dict[int, bool] = field(default_factory=dict)  # machine -> on?
    wakeups: list[float] = field(default_factory=list)
    kills: list[tuple[tuple[str, ...], list[Execute]]] = field(default_factory=list)
    finished: bool = False

    def submit(self, request: JobRequest) -> None:
        self.requests[request.job_id] = request
        self.submitted.add(request.job_id)
        self.policy.job_submitted(self.now, request)
        self.step()

    def complete(self, job_id: str, status: str = "success") -> None:
        assert job_id in self.running
        del self.running[job_id]
        self.done.add(job_id)
        self.policy.job_ended(self.now, job_id, status)
        self.step()

    def step(self) -> list:
        """Apply one batch of decisions, then deliver what Batsim would answer at once."""
        decisions = self.policy.decide(self.now)
        executes = [d for d in decisions if isinstance(d, Execute)]
        for decision in decisions:
            if isinstance(decision, Execute):
                assert decision.job_id in self.submitted, f"execute of unsubmitted {decision.job_id}"
                assert decision.job_id not in self.running and decision.job_id not in self.done
                self.running[decision.job_id] = decision.machine
                self.submitted.discard(decision.job_id)
            elif isinstance(decision, Kill):
                for job_id in decision.job_ids:
                    assert job_id in self.running, f"KILL_JOB on {job_id}, which is not running"
                self.kills.append((decision.job_ids, executes))
            elif isinstance(decision, Reject):
                for job_id in decision.job_ids:
                    assert job_id in self.submitted, f"reject of {job_id}, not pending"
                    self.submitted.discard(job_id)
                    self.done.add(job_id)
            elif isinstance(decision, Register):
                self.to_acknowledge.append(decision.job_id)
                original = self.policy.by_job[decision.job_id].request
                self.requests[decision.job_id] = JobRequest(decision.job_id, self.now, original.kind)
            elif isinstance(decision, (SwitchOn, SwitchOff)):
                for machine in decision.machines:
                    assert machine not in self.switching
                    self.switching[machine] = isinstance(decision, SwitchOn)
            elif isinstance(decision, WakeAt):
                assert decision.time > self.now
                self.wakeups.append(decision.time)
            elif isinstance(decision, RegistrationFinished):
                assert not self.finished
                self.finished = True
        # Batsim's immediate answers: kills are confirmed, registrations acknowledged.
        killed = [job_id for d in decisions if isinstance(d, Kill) for job_id in d.job_ids]
        for job_id in killed:
            if job_id in self.running:
                del self.running[job_id]
                self.done.add(job_id)
                self.policy.job_ended(self.now, job_id, "killed")
        acknowledged, self.to_acknowledge = self.to_acknowledge, []
        for job_id in acknowledged:
            self.submitted.add(job_id)
            self.policy.job_submitted(self.now, self.requests[job_id])
        if acknowledged or killed:
            return decisions + self.step()
        return decisions

    def finish_switches(self) -> None:
        switching, self.switching = self.switching, {}
        for machine, on in switching.items():
            self.policy.power_changed(self.now, [machine], on)
        self.step()

    def advance(self, time: float) -> None:
        """Move the clock, delivering the wake-ups that fall before ``time`` (those asked on the way
        included)."""
        while any(t <= time for t in self.wakeups):
            wake = min(self.wakeups)
            self.now = wake
            self.wakeups.remove(wake)
            self.policy.woken(self.now)
            self.step()
        self.now = time
