"""The Google-cell policy: priorities, eviction, restarts, kills, failures and power, without I/O.

Events come in as method calls (a job was submitted, a job ended, machines failed, ...); after each
batch of simultaneous events, :meth:`CellPolicy.decide` runs a scheduling pass and returns the
decisions for the simulator. A front-end (pybatsim, batsim-py, or a unit test) does the transport.

Semantics (the trace's format document and the ICCP study):

- pending tasks are served by priority, then by the time they were queued;
- a task that fits nowhere may *evict* running tasks of strictly lower priority (Google's EVICT);
  priorities are compared by level: ]0, 1] cut into ``priority_levels`` equal bands (12, Google's
  levels, the inverse of :func:`batsim_google.priority.unit_priority`), so that tasks of one level
  never evict each other and an eviction cannot cascade down a continuum of priorities; 0 levels
  compares the raw values. The machine chosen is the candidate with the most free CPU+memory
  (fewest evictions), and on it the lowest priorities go first;
- evicted tasks restart per ``restart``: ``none``, ``immediate``, or ``delayed`` (suspended for
  ``restart_delay`` seconds, the ICCP study's suspend-restart-K); at most ``max_restarts`` times;
  with ``resume`` they restart with the work left, else with all of it;
- tasks on a machine that fails are killed and resubmitted at once (counting as restarts);
- services end at their lifetime (their walltime): that is a kill by design, not a failure;
- a user kill stops a running task, and a pending one is rejected instead (Batsim aborts on a
  KILL_JOB for a job that is not running);
- with ``energy = "idle-sleep"``, machines idle for ``idle_timeout`` seconds go to sleep and are
  woken when queued tasks fit nowhere awake.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass

import numpy as np
from sortedcontainers import SortedList

from .cluster import Cluster, Power
from .decisions import (
    Decision, Execute, Kill, RegistrationFinished, Register, Reject, SwitchOff, SwitchOn, WakeAt,
)
from ..priority import GOOGLE_PRIORITY_LEVELS
from .placement import PLACEMENTS
from .tasks import Attempt, JobRequest, Ledger, Outcome, StopReason, Task, TaskState

RESTARTS = ("none", "immediate", "delayed")
ENERGY_POLICIES = ("always-on", "idle-sleep")
#: Workload name of resubmitted jobs (Batsim job ids are ``workload!job``).
RESUBMIT_WORKLOAD = "resubmit"
#: Shortest work a resubmitted job is given, so that it lasts a positive time.
MIN_WORK = 1e-6


@dataclass(frozen=True)
class PolicyConfig:
    """The knobs of the cell; every field is checked, errors name it."""

    placement: str = "best-fit"
    cpu_overcommit: float = 1.0
    preemption: bool = True
    priority_levels: int = GOOGLE_PRIORITY_LEVELS
    restart: str = "immediate"
    restart_delay: float = 0.0
    max_restarts: int = 10
    resume: bool = False
    energy: str = "always-on"
    idle_timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)} (got {self.placement!r})")
        if self.restart not in RESTARTS:
            raise ValueError(f"restart must be one of {', '.join(RESTARTS)} (got {self.restart!r})")
        if self.energy not in ENERGY_POLICIES:
            raise ValueError(f"energy must be one of {', '.join(ENERGY_POLICIES)} (got {self.energy!r})")
        if not self.cpu_overcommit >= 1.0:
            raise ValueError(f"cpu_overcommit must be >= 1 (got {self.cpu_overcommit})")
        if not self.restart_delay >= 0.0:
            raise ValueError(f"restart_delay must be >= 0 seconds (got {self.restart_delay})")
        if self.priority_levels < 0:
            raise ValueError(f"priority_levels must be >= 0 (got {self.priority_levels})")
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0 (got {self.max_restarts})")
        if not self.idle_timeout > 0.0:
            raise ValueError(f"idle_timeout must be > 0 seconds (got {self.idle_timeout})")


class CellPolicy:
    """Decision core of the Google-cell scheduler."""

    def __init__(self, cpu: np.ndarray, memory: np.ndarray, config: PolicyConfig = PolicyConfig()) -> None:
        self.config = config
        self.cluster = Cluster(cpu, memory, config.cpu_overcommit)
        self.place = PLACEMENTS[config.placement]
        self.ledger = Ledger()
        self.by_job: dict[str, Task] = {}
        self.pending: SortedList = SortedList(key=lambda entry: entry[0])
        self.running: dict[str, Task] = {}
        self.suspended: list[tuple[float, int, Task]] = []
        self.no_more_jobs = False
        self.no_more_events = False
        self.finished = False
        self._decisions: list[Decision] = []
        self._timers: set[float] = set()
        self._sequence = itertools.count()
        self._kill_on_submission: set[str] = set()
        # Tasks queued since the last pass, and whether room was freed since: without freed room,
        # the tasks already queued cannot fit anywhere they could not fit before.
        self._fresh: list[Task] = []
        self._room_freed = True

    # ----- events -------------------------------------------------------------------------------

    def job_submitted(self, now: float, request: JobRequest) -> None:
        """A workload job arrived, or a resubmitted job was acknowledged."""
        task = self.by_job.get(request.job_id)
        if task is None:
            task = Task(request, request.job_id, remaining=request.work)
            self.ledger.tasks[task.task_id] = task
            self.by_job[request.job_id] = task
            if not self.cluster.fits_somewhere(request.cpu, request.memory):
                self._decisions.append(Reject((request.job_id,)))
                self.ledger.end(task, Outcome.REJECTED, "larger than every machine")
                return
        if request.job_id in self._kill_on_submission:
            self._kill_on_submission.discard(request.job_id)
            self._decisions.append(Reject((request.job_id,)))
            self.ledger.end(task, Outcome.KILLED_BY_USER, "while being resubmitted")
            return
        self._enqueue(task, now)

    def job_ended(self, now: float, job_id: str, status: str) -> None:
        """A job ended in Batsim: ``success``, ``walltime`` (reached), ``killed`` or ``failed``."""
        task = self.by_job[job_id]
        if task.job_id != job_id or task.state not in (TaskState.RUNNING, TaskState.STOPPING):
            raise AssertionError(f"job {job_id} ended but task {task.task_id} is {task.state.value}")
        self.running.pop(job_id, None)
        if task.state is TaskState.RUNNING:
            self.cluster.release(task.machine, task.request.cpu, task.request.memory, now)
            self._room_freed = True
        reason = status if status != "killed" or task.stop_reason is None else task.stop_reason.value
        self.ledger.attempts.append(
            Attempt(task.task_id, job_id, task.restarts, task.machine, task.start_time, now, reason)
        )
        if status == "success":
            self.ledger.end(task, Outcome.COMPLETED)
        elif status == "walltime":
            self.ledger.end(task, Outcome.KILLED_BY_DESIGN, "end of lifetime")
        elif status == "killed" and task.stop_reason is StopReason.USER_KILL:
            self.ledger.end(task, Outcome.KILLED_BY_USER)
        elif status == "killed" and task.stop_reason is not None:
            self._restart(task, now)
        else:
            self.ledger.end(task, Outcome.NOT_RESTARTED, f"job ended with status {status}")

    def machines_unavailable(self, now: float, machines) -> None:
        """Machines failed: kill what runs there; they get nothing until they come back."""
        machines = np.atleast_1d(machines)
        self.cluster.available[machines] = False
        on_them = set(machines.tolist())
        victims = [t for t in self.running.values() if t.state is TaskState.RUNNING and t.machine in on_them]
        self._stop(victims, StopReason.MACHINE_FAILURE, now)

    def machines_available(self, now: float, machines) -> None:
        machines = np.atleast_1d(machines)
        self.cluster.available[machines] = True
        self.cluster.idle_since[machines] = now
        self._room_freed = True

    def power_changed(self, now: float, machines, on: bool) -> None:
        """Batsim finished switching ``machines`` on (or to sleep)."""
        self.cluster.set_power(machines, Power.ON if on else Power.SLEEPING, now)
        self._room_freed = self._room_freed or on

    def user_kill(self, now: float, task_id: str) -> None:
        """Kill a task at its user's request, whatever it is doing."""
        task = self.ledger.tasks.get(task_id)
        if task is None or task.state is TaskState.ENDED:
            return
        if task.state is TaskState.RUNNING:
            self._stop([task], StopReason.USER_KILL, now)
        elif task.state is TaskState.STOPPING:
            task.stop_reason = StopReason.USER_KILL
        elif task.state is TaskState.PENDING and self._dequeue(task):
            self._decisions.append(Reject((task.job_id,)))
            self.ledger.end(task, Outcome.KILLED_BY_USER, "while pending")
        elif task.state is TaskState.SUSPENDED:
            self.suspended = [entry for entry in self.suspended if entry[2] is not task]
            heapq.heapify(self.suspended)
            self.ledger.end(task, Outcome.KILLED_BY_USER, "while suspended")
        elif task.state is TaskState.RESUBMITTING:  # reject the new job when it arrives
            self._kill_on_submission.add(task.job_id)

    def woken(self, now: float) -> None:
        """A requested wake-up: suspended tasks whose time came are resubmitted."""
        self._timers = {time for time in self._timers if time > now}
        while self.suspended and self.suspended[0][0] <= now:
            _, _, task = heapq.heappop(self.suspended)
            self._resubmit(task)

    # ----- decisions ----------------------------------------------------------------------------

    def decide(self, now: float) -> list[Decision]:
        """Scheduling pass after a batch of events; returns and forgets the decisions."""
        if not self.finished:
            full = self._room_freed or self.no_more_jobs
            self._room_freed = False
            fresh, self._fresh = self._fresh, []
            unplaced = self._schedule(now, None if full else fresh)
            if self.config.energy == "idle-sleep":
                self._manage_power(now, unplaced)
            self._finish_if_done(unplaced)
        decisions, self._decisions = self._decisions, []
        return decisions

    def _schedule(self, now: float, only: list[Task] | None) -> list[Task]:
        """One pass over the pending queue in priority order, or over ``only`` those tasks (in the
        same order) when nothing else can have become placeable. Returns the tasks left queued."""
        unplaced: list[Task] = []
        failed_shapes: list[tuple[float, float]] = []
        victims = None
        if only is None:
            entries = list(self.pending)
        else:
            entries = sorted(((t.queue_key, t) for t in only if t.queue_key is not None), key=lambda e: e[0])
        for entry in entries:
            task = entry[1]
            cpu, memory = task.request.cpu, task.request.memory
            if any(cpu >= c and memory >= m for c, m in failed_shapes):
                unplaced.append(task)
                continue
            machine = self.place(self.cluster, cpu, memory, None)
            if machine < 0 and self.config.preemption:
                victims = victims if victims is not None else self._running_by_priority()
                machine = self._evict_for(task, victims, now)
            if machine < 0:
                failed_shapes.append((cpu, memory))
                unplaced.append(task)
                continue
            self._dequeue(task)
            self._start(task, machine, now)
            if victims is not None:
                victims = None  # the running set changed: rebuild it if needed again
        return unplaced

    def _running_by_priority(self) -> list[Task]:
        running = [t for t in self.running.values() if t.state is TaskState.RUNNING]
        running.sort(key=lambda t: t.request.priority)
        return running

    def _evict_for(self, task: Task, victims: list[Task], now: float) -> int:
        """Make room for ``task`` by evicting strictly lower priorities; the machine or -1."""
        level = self._level(task)
        lower = [v for v in victims if self._level(v) < level]
        if not lower:
            return -1
        cluster = self.cluster
        machines = np.fromiter((v.machine for v in lower), dtype=np.int64, count=len(lower))
        size = len(cluster)
        freeable_cpu = np.bincount(machines, [v.request.cpu for v in lower], minlength=size)
        freeable_memory = np.bincount(machines, [v.request.memory for v in lower], minlength=size)
        free_cpu, free_memory = cluster.free_cpu(), cluster.free_memory()
        candidates = (
            cluster.usable()
            & (free_cpu + freeable_cpu >= task.request.cpu)
            & (free_memory + freeable_memory >= task.request.memory)
        )
        if not candidates.any():
            return -1
        machine = int(np.argmax(np.where(candidates, free_cpu + free_memory, -np.inf)))
        chosen = []
        cpu_needed = task.request.cpu - free_cpu[machine]
        memory_needed = task.request.memory - free_memory[machine]
        for victim in lower:  # lowest priority first
            if cpu_needed <= 0 and memory_needed <= 0:
                break
            if victim.machine == machine:
                chosen.append(victim)
                cpu_needed -= victim.request.cpu
                memory_needed -= victim.request.memory
        self._stop(chosen, StopReason.EVICTION, now)
        return machine

    def _level(self, task: Task) -> float:
        """The priority level eviction compares (the raw priority with 0 levels)."""
        levels = self.config.priority_levels
        return math.ceil(task.request.priority * levels) if levels else task.request.priority

    def _start(self, task: Task, machine: int, now: float) -> None:
        self.cluster.allocate(machine, task.request.cpu, task.request.memory)
        task.state = TaskState.RUNNING
        task.machine = machine
        task.start_time = now
        task.stop_reason = None
        self.running[task.job_id] = task
        self._decisions.append(Execute(task.job_id, machine))

    def _stop(self, tasks: list[Task], reason: StopReason, now: float) -> None:
        """Kill running tasks; their room is free at once for the pass that evicted them."""
        if not tasks:
            return
        for task in tasks:
            task.state = TaskState.STOPPING
            task.stop_reason = reason
            self.cluster.release(task.machine, task.request.cpu, task.request.memory, now)
        self._room_freed = True
        self._decisions.append(Kill(tuple(task.job_id for task in tasks)))

    def _restart(self, task: Task, now: float) -> None:
        if task.stop_reason is StopReason.EVICTION and self.config.restart == "none":
            self.ledger.end(task, Outcome.NOT_RESTARTED, "evicted; restart policy 'none'")
            return
        if task.restarts >= self.config.max_restarts:
            self.ledger.end(task, Outcome.NOT_RESTARTED, f"{task.stop_reason.value}; restart cap reached")
            return
        if self.config.resume:
            task.remaining = max(task.remaining - (now - task.start_time), MIN_WORK)
        else:
            task.remaining = task.request.work
        task.restarts += 1
        if task.stop_reason is StopReason.EVICTION and self.config.restart == "delayed":
            task.state = TaskState.SUSPENDED
            wake = now + self.config.restart_delay
            heapq.heappush(self.suspended, (wake, next(self._sequence), task))
            self._wake_at(wake, now)
        else:
            self._resubmit(task)

    def _resubmit(self, task: Task) -> None:
        local = task.task_id.replace("!", "_")
        task.job_id = f"{RESUBMIT_WORKLOAD}!{local}#{task.restarts}"
        task.state = TaskState.RESUBMITTING
        self.by_job[task.job_id] = task
        self._decisions.append(Register(task.job_id, task.request.kind, task.remaining))

    def _enqueue(self, task: Task, now: float) -> None:
        task.state = TaskState.PENDING
        task.queued_since = now
        task.queue_key = (-task.request.priority, now, next(self._sequence))
        self.pending.add((task.queue_key, task))
        self._fresh.append(task)

    def _dequeue(self, task: Task) -> bool:
        if task.queue_key is None:
            return False
        self.pending.remove((task.queue_key, task))
        task.queue_key = None
        return True

    def _wake_at(self, time: float, now: float) -> None:
        if time > now and time not in self._timers:
            self._timers.add(time)
            self._decisions.append(WakeAt(time))

    # ----- power --------------------------------------------------------------------------------

    def _manage_power(self, now: float, unplaced: list[Task]) -> None:
        cluster = self.cluster
        sleeping = np.array([power is Power.SLEEPING for power in cluster.power]) & cluster.available
        waking = np.array([power is Power.SWITCHING_ON for power in cluster.power])
        # Room already on its way: machines switching on, filled virtually by the unplaced tasks.
        room_cpu = np.where(waking, cluster.cpu_capacity, 0.0)
        room_memory = np.where(waking, cluster.memory_capacity, 0.0)
        to_wake: list[int] = []
        for task in unplaced:
            cpu, memory = task.request.cpu, task.request.memory
            fits = (room_cpu >= cpu) & (room_memory >= memory)
            if not fits.any():
                candidates = sleeping & (cluster.cpu_capacity >= cpu) & (cluster.memory_capacity >= memory)
                if not candidates.any():
                    continue
                machine = int(np.argmax(candidates))
                sleeping[machine] = False
                to_wake.append(machine)
                room_cpu[machine], room_memory[machine] = cluster.cpu_capacity[machine], cluster.memory_capacity[machine]
                fits = np.zeros_like(fits)
                fits[machine] = True
            machine = int(np.argmax(fits))
            room_cpu[machine] -= cpu
            room_memory[machine] -= memory
        if to_wake:
            cluster.set_power(to_wake, Power.SWITCHING_ON, now)
            self._decisions.append(SwitchOn(tuple(to_wake)))
        if self.pending:
            return  # demand exceeds what is awake: put nothing to sleep
        idle = cluster.usable() & (cluster.tasks == 0)
        expired = idle & (now - cluster.idle_since >= self.config.idle_timeout)
        if expired.any():
            machines = tuple(np.flatnonzero(expired).tolist())
            cluster.set_power(machines, Power.SWITCHING_OFF, now)
            self._decisions.append(SwitchOff(machines))
        still_idle = idle & ~expired
        if still_idle.any():
            self._wake_at(float(cluster.idle_since[still_idle].min()) + self.config.idle_timeout, now)

    # ----- end ----------------------------------------------------------------------------------

    def _finish_if_done(self, unplaced: list[Task]) -> None:
        """End the simulation once nothing can happen any more.

        That is: no job or external event will come, nothing runs, stops, waits to be
        resubmitted or switches power, and what is still queued fits nowhere usable.
        """
        if not self.no_more_jobs or self.running or self.suspended:
            return
        if self.ledger.open != len(unplaced):
            return  # some task is being resubmitted
        if any(power in (Power.SWITCHING_ON, Power.SWITCHING_OFF) for power in self.cluster.power):
            return
        if unplaced and not self.no_more_events and not self.cluster.available.all():
            return  # failed machines may come back
        for task in unplaced:
            self._dequeue(task)
            self._decisions.append(Reject((task.job_id,)))
            self.ledger.end(task, Outcome.PENDING_AT_END, "no machine could take it")
        self._decisions.append(RegistrationFinished())
        self.finished = True
