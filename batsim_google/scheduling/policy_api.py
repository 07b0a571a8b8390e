"""The policy API: what any scheduler policy on the transport-free core receives, reads and returns.

A front-end (pybatsim, batsim-py) turns Batsim's messages into calls of these methods, then
calls :meth:`Policy.decide` after each batch of simultaneous events and carries out the
decisions of :mod:`.decisions` (``Execute``, ``Kill``, ``Reject``, ``SwitchOn``/``SwitchOff``,
``WakeAt``, ...). Events:

- ``job_submitted(now, request)``: a job arrived (:class:`.tasks.JobRequest`);
- ``job_ended(now, job_id, status)``: a job ended, ``success``, ``walltime``, ``killed`` (this is
  how a kill is acknowledged) or ``failed``;
- ``machines_unavailable(now, machines)`` / ``machines_available(now, machines)``: machines
  failed / came back (Batsim does not stop what runs on a failed machine: the policy kills it);
- ``power_changed(now, machines, on)``: a switch on (or to sleep) asked for is done;
- ``user_kill(now, task_id)``: a user asked to kill a task;
- ``woken(now)``: a wake-up asked for with ``WakeAt`` came.

A policy is built with ``cpu`` and ``memory``, each machine's capacities (numpy arrays in
Batsim's resource order, normalized: 1 is the largest machine), then the scheduler's ``options``
as keyword arguments. A job comes as a :class:`.tasks.JobRequest`: ``job_id`` (``w0!17``),
``subtime``, ``kind`` (``task`` or ``service``), ``priority`` in ]0, 1], normalized ``cpu`` and
``memory``, ``work`` (a task's seconds, a service's lifetime) and ``machines``. The base event
handlers keep the tasks, the cluster and the ledger: an override calls ``super()`` first, or takes
that bookkeeping over whole, as :class:`.policy.CellPolicy` does for its queue, restarts and
eviction index (built on this base's state, it ends tasks with :meth:`Policy.end_task` too).

State it can read: ``cluster`` (:class:`.cluster.Cluster`: capacities, allocations, power and
availability of each machine, in resource-id order), ``pending`` and ``running`` tasks
(:class:`.tasks.Task`), ``no_more_jobs`` and ``no_more_events``. The ``ledger`` records every
task and attempt; a policy built on :class:`Policy` keeps it through the helpers ``execute``,
``reject`` and ``kill``, so that every task provably ends once, whatever the policy. In a
simulation the front-end streams it to the output files (:meth:`.tasks.Ledger.stream_to`): its
``tasks`` then hold the tasks not ended, its ``attempts`` none, and its counts the rest.

What it returns: nothing directly. ``decide`` runs :meth:`Policy.schedule` and returns the
decisions the helpers recorded (``execute`` a pending task on a usable machine, ``reject`` a
pending one, ``kill`` running ones, ``switch_on``/``switch_off``, ``wake_at`` a later time), in
order. It must not leave a task pending for ever once nothing more will come: Batsim would wait.

:class:`.policy.CellPolicy`, the Google-cell scheduler, is the first implementation;
``examples/policies/deadline_best_fit.py`` is a complete example, the two others short ones. A policy declares in ``needs`` what it asks of
Batsim, which the runner turns into Batsim's options and checks against the inputs before launch.

The helpers check what they are asked (a machine that exists, a task that is pending) and raise a
:class:`PolicyError` naming the policy, the task and the machine: a policy's bug (a task run twice,
machine 999) otherwise surfaced from deep inside the cluster's bookkeeping or Batsim, naming none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from batsim_google.errors import BatsimGoogleError
from batsim_google.scheduling.cluster import Cluster, Power
from batsim_google.scheduling.decisions import Decision, Execute, Kill, Reject, SwitchOff, SwitchOn, WakeAt
from batsim_google.scheduling.sleep_log import SleepLog
from batsim_google.scheduling.tasks import Attempt, JobRequest, Ledger, Outcome, StopReason, Task, TaskState


@dataclass(frozen=True)
class BatsimNeeds:
    """What a scheduler asks of Batsim and of its inputs.

    ``compute_sharing``: several jobs on a machine; ``dynamic_jobs``: it registers jobs (restarts);
    ``sleep_states``: it switches machines to sleep (every host needs ``sleep_pstates``);
    ``failures``: it copes with machines failing (it kills what runs on them); ``user_kills``: it
    reads forwarded ``user_kill`` events.
    """

    compute_sharing: bool = False
    dynamic_jobs: bool = False
    sleep_states: bool = False
    failures: bool = True
    user_kills: bool = False


class PolicyError(BatsimGoogleError, RuntimeError):
    """A policy asked for something impossible (a machine that does not exist, a task that is not
    pending): a bug of the policy, named with the task and the machine."""


class Policy:
    """Base of the policies on the core: ledger-keeping event handlers; subclasses write
    :meth:`schedule` (and may override any event).

    Built with the machines' normalized ``cpu`` and ``memory`` capacities; keyword options come
    from the scheduler's ``options`` table.
    """

    needs: ClassVar[BatsimNeeds] = BatsimNeeds()

    def __init__(self, cpu: np.ndarray, memory: np.ndarray, cluster: Cluster | None = None) -> None:
        """``cluster``: the machines' state, if the policy keeps it its own way (over-commit)."""
        self.cluster = Cluster(cpu, memory) if cluster is None else cluster
        self.ledger = Ledger()
        self.pending: list[Task] = []  # in submission order
        self.running: dict[str, Task] = {}
        self.no_more_jobs = False
        self.no_more_events = False
        #: The machines asleep and up over time, which Batsim 4.2.1 may label idle (:mod:`.sleep_log`).
        self.sleep_log = SleepLog()
        self._decisions: list[Decision] = []

    # ----- events -------------------------------------------------------------------------------

    def job_submitted(self, now: float, request: JobRequest) -> None:
        task = Task(request, request.job_id, remaining=request.work)
        self.ledger.tasks[task.task_id] = task
        self.pending.append(task)

    def job_ended(self, now: float, job_id: str, status: str) -> None:
        task = self.running.pop(job_id)
        self.cluster.release(task.machine, task.request.cpu, task.request.memory, now)
        reason = task.stop_reason.value if status == "killed" and task.stop_reason else status
        self.ledger.record(Attempt(task.task_id, job_id, 0, task.machine, task.start_time, now, reason))
        self.end_task(task, now, status)

    def machines_unavailable(self, now: float, machines) -> None:
        machines = np.atleast_1d(machines)
        self.cluster.set_available(machines, False)
        failed = set(machines.tolist())
        self.kill([task for task in self.running.values() if task.machine in failed], StopReason.MACHINE_FAILURE)

    def machines_available(self, now: float, machines) -> None:
        self.cluster.set_available(np.atleast_1d(machines), True)

    def power_changed(self, now: float, machines, on: bool) -> None:
        self.cluster.set_power(machines, Power.ON if on else Power.SLEEPING, now)

    def user_kill(self, now: float, task_id: str) -> None:
        task = self.ledger.tasks.get(task_id)
        if task is None or task.state is TaskState.ENDED:
            return
        if task.state is TaskState.RUNNING:
            self.kill([task], StopReason.USER_KILL)
        elif task.state is TaskState.PENDING:
            self.reject(task, now, "killed while pending", Outcome.KILLED_BY_USER)

    def woken(self, now: float) -> None:
        """A wake-up asked for came; nothing to do by default."""

    def decide(self, now: float) -> list[Decision]:
        """Scheduling pass after a batch of events; returns and forgets the decisions."""
        self.schedule(now)
        asleep = int((self.cluster.asleep & self.cluster.available).sum())
        if asleep or self.sleep_log.times:  # no log for a run where no machine ever slept
            self.sleep_log.record(now, asleep)
        decisions, self._decisions = self._decisions, []
        return decisions

    def schedule(self, now: float) -> None:
        """Place pending tasks with the helpers below."""
        raise NotImplementedError

    # ----- helpers: each decision with its bookkeeping ------------------------------------------

    def end_task(self, task: Task, now: float, status: str) -> None:
        """Record how a task ends whose job ended with ``status`` and is not run again: done,
        at the end of its lifetime, killed by its user, or else lost (a kill of another reason
        that the policy does not restart, a failure)."""
        if status == "success":
            self.ledger.end(task, Outcome.COMPLETED, now)
        elif status == "walltime":
            self.ledger.end(task, Outcome.KILLED_BY_DESIGN, now, "end of lifetime")
        elif status == "killed" and task.stop_reason is StopReason.USER_KILL:
            self.ledger.end(task, Outcome.KILLED_BY_USER, now)
        else:
            reason = task.stop_reason.value if status == "killed" and task.stop_reason else status
            self.ledger.end(task, Outcome.NOT_RESTARTED, now, f"job ended with status {reason}")

    def _refuse(self, action: str, problem: str) -> PolicyError:
        return PolicyError(f"policy {type(self).__name__}: {action}: {problem}")

    def _check_machines(self, action: str, machines) -> None:
        size = len(self.cluster)
        for machine in machines:
            if isinstance(machine, bool) or not isinstance(machine, int | np.integer) or not 0 <= machine < size:
                raise self._refuse(action, f"no machine {machine!r} (the platform has {size}: 0 to {size - 1})")

    def _take_pending(self, task: Task, action: str) -> None:
        try:
            self.pending.remove(task)
        except ValueError:
            where = f" on machine {task.machine}" if task.state is TaskState.RUNNING else ""
            raise self._refuse(
                action, f"task {task.task_id} is not pending (it is {task.state.value}{where})"
            ) from None

    def execute(self, task: Task, machine: int, now: float) -> None:
        action = f"execute task {task.task_id} on machine {machine}"
        self._check_machines(action, [machine])
        self._take_pending(task, action)
        task.state, task.machine, task.start_time = TaskState.RUNNING, machine, now
        self.running[task.job_id] = task
        self.cluster.allocate(machine, task.request.cpu, task.request.memory)
        self._decisions.append(Execute(task.job_id, machine))

    def reject(self, task: Task, now: float, note: str, outcome: Outcome = Outcome.REJECTED) -> None:
        self._take_pending(task, f"reject task {task.task_id}")
        self.ledger.end(task, outcome, now, note)
        self._decisions.append(Reject((task.job_id,)))

    def kill(self, tasks: list[Task], reason: StopReason) -> None:
        """Kill running tasks; each ends when Batsim acknowledges (``job_ended``, ``killed``)."""
        tasks = [task for task in tasks if task.state is TaskState.RUNNING]
        for task in tasks:
            task.state, task.stop_reason = TaskState.STOPPING, reason
        if tasks:
            self._decisions.append(Kill(tuple(task.job_id for task in tasks)))

    def switch_on(self, machines: list[int], now: float) -> None:
        self._check_machines("switch on", machines)
        self.cluster.set_power(machines, Power.SWITCHING_ON, now)
        self._decisions.append(SwitchOn(tuple(machines)))

    def switch_off(self, machines: list[int], now: float) -> None:
        self._check_machines("switch off", machines)
        self.cluster.set_power(machines, Power.SWITCHING_OFF, now)
        self._decisions.append(SwitchOff(tuple(machines)))

    def wake_at(self, time: float) -> None:
        self._decisions.append(WakeAt(time))
