"""Tasks as the cell sees them, their attempts, and how each one ended.

A *task* is one workload job and all the jobs it is resubmitted as after evictions and machine
failures; an *attempt* is one of those jobs' stay on a machine. Every task ends exactly once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol


class TaskState(Enum):
    PENDING = "pending"  # waiting for a machine
    RUNNING = "running"  # executing on a machine
    STOPPING = "stopping"  # a kill was sent; waiting for Batsim to confirm
    SUSPENDED = "suspended"  # evicted, waiting to be resubmitted (restart after K seconds)
    RESUBMITTING = "resubmitting"  # registered again as a new job, not acknowledged yet
    ENDED = "ended"


class Outcome(Enum):
    """How a task ended; every submitted task gets exactly one."""

    COMPLETED = "completed"  # a finite task did all its work
    KILLED_BY_DESIGN = "killed_by_design"  # a service reached the end of its lifetime
    KILLED_BY_USER = "killed_by_user"  # a user kill while it ran
    REJECTED = "rejected"  # larger than every machine, or killed while pending
    NOT_RESTARTED = "not_restarted"  # evicted or failed, and the restart policy said no
    PENDING_AT_END = "pending_at_end"  # no machine could take it before the simulation ended
    CENSORED = "censored"  # still running, waiting or submitted at (or after) the horizon


class StopReason(Enum):
    """Why an attempt was stopped by the scheduler."""

    EVICTION = "evicted"
    MACHINE_FAILURE = "machine_failure"
    USER_KILL = "user_kill"
    HORIZON = "horizon"


@dataclass(frozen=True)
class JobRequest:
    """What a Batsim job asks for, as read from the workload's extra fields."""

    job_id: str
    subtime: float
    kind: str = "task"
    priority: float = 0.5
    cpu: float = 0.0
    memory: float = 0.0
    work: float = 0.0  # seconds: a task's delay, a service's lifetime (its walltime)
    machines: int = 1  # Batsim's res: a Google task takes one machine (or a share of it)
    #: The trace's machine of a task running at a replay's start, kept there (None: placed freely).
    trace_machine: int | None = None
    #: A task of the initial state (running or pending at a replay's or a warm start's time 0):
    #: Borg's scheduling delay is behind it, so the placement latency does not hold it.
    initial: bool = False
    #: Running at time 0 (``"initial": "running"``): without a ``trace_machine`` (a generated warm
    #: start, a replay not ``--faithful``), placed with the others at once (:mod:`.initial_placement`).
    running_at_start: bool = False


@dataclass(eq=False)
class Task:
    """One unit of work across its resubmissions (compared by identity)."""

    request: JobRequest
    job_id: str  # the Batsim job currently standing for the task
    state: TaskState = TaskState.PENDING
    remaining: float = 0.0  # seconds of work left
    restarts: int = 0
    machine: int | None = None
    start_time: float | None = None
    queue_key: tuple | None = None  # its place in the pending queue, while queued
    level: float = 0.0  # the priority level evictions compare (set by the policy)
    stop_reason: StopReason | None = None
    outcome: Outcome | None = None
    ended_at: float | None = None  # when it got its outcome
    note: str = ""

    @property
    def task_id(self) -> str:
        return self.request.job_id

    @property
    def is_service(self) -> bool:
        return self.request.kind == "service"


@dataclass(frozen=True)
class Attempt:
    """One job of a task on one machine, from start to end."""

    task_id: str
    job_id: str
    attempt: int
    machine: int
    start: float
    end: float
    end_reason: str


class LedgerSink(Protocol):
    """Where a ledger hands its rows as the run goes (:class:`.ledger_files.LedgerWriter`)."""

    def attempt(self, attempt: Attempt) -> None: ...

    def task(self, task: Task) -> None: ...


@dataclass
class Ledger:
    """Every task and attempt, so that each task provably ends once.

    Without a ``sink`` it keeps them all (``tasks`` by id in submission order, ``attempts`` in the
    order they ended). Once :meth:`stream_to` a sink, it hands each attempt and each ended task
    over and forgets it, keeping only the tasks not ended and the counts: memory follows what
    runs, not the run's length.
    """

    tasks: dict[str, Task] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    ended: int = 0
    sink: LedgerSink | None = None
    #: Tasks and attempts handed to the sink (no longer in ``tasks`` and ``attempts``).
    tasks_written: int = 0
    attempts_written: int = 0
    _written_outcomes: Counter = field(default_factory=Counter)

    def stream_to(self, sink: LedgerSink) -> None:
        """Hand the attempts and the ended tasks to ``sink``, now and from now on."""
        self.sink = sink
        for attempt in self.attempts:
            sink.attempt(attempt)
        self.attempts_written += len(self.attempts)
        self.attempts = []
        for task in [task for task in self.tasks.values() if task.state is TaskState.ENDED]:
            self._hand_over(task)

    def record(self, attempt: Attempt) -> None:
        """An attempt ended."""
        if self.sink is None:
            self.attempts.append(attempt)
        else:
            self.sink.attempt(attempt)
            self.attempts_written += 1

    def end(self, task: Task, outcome: Outcome, now: float, note: str = "") -> None:
        if task.state is TaskState.ENDED:
            raise AssertionError(f"task {task.task_id} ended twice ({task.outcome} then {outcome})")
        task.state = TaskState.ENDED
        self.ended += 1
        task.outcome = outcome
        task.ended_at = now
        task.note = note
        task.machine = None
        if self.sink is not None:
            self._hand_over(task)

    def _hand_over(self, task: Task) -> None:
        self.sink.task(task)
        del self.tasks[task.task_id]
        self.tasks_written += 1
        self._written_outcomes[task.outcome] += 1

    @property
    def submitted(self) -> int:
        """Tasks submitted so far."""
        return len(self.tasks) + self.tasks_written

    @property
    def attempt_count(self) -> int:
        """Attempts ended so far."""
        return len(self.attempts) + self.attempts_written

    def outcomes(self) -> dict[str, int]:
        counts = {outcome.value: self._written_outcomes[outcome] for outcome in Outcome}
        for task in self.tasks.values():
            if task.outcome is not None:
                counts[task.outcome.value] += 1
        return counts

    @property
    def open(self) -> int:
        """Tasks not ended yet."""
        return self.submitted - self.ended

    def balanced(self) -> bool:
        """True when every task ended exactly once."""
        return self.open == 0 and all(task.outcome is not None for task in self.tasks.values())
