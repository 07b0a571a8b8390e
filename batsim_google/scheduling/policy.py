"""The Google-cell policy: priorities, eviction, restarts, kills, failures and power, without I/O.

Events come in as method calls (a job was submitted, a job ended, machines failed, ...); after each
batch of simultaneous events, :meth:`CellPolicy.decide` runs a scheduling pass and returns the
decisions for the simulator. A front-end (pybatsim, batsim-py, or a unit test) does the transport.

Semantics (the trace's format document and the ICCP study):

- pending tasks are served by priority, then by the time they were queued;
- a task that fits nowhere may *evict* running tasks of strictly lower priority level (Google's
  EVICT; :mod:`.eviction` chooses the machine and the victims);
- evicted tasks restart per ``restart``: ``none``, ``immediate``, or ``delayed`` (suspended for
  ``restart_delay`` seconds, the ICCP study's suspend-restart-K); at most ``max_restarts`` times;
  with ``resume`` they restart with the work left, else with all of it;
- tasks on a machine that fails are killed and resubmitted at once (counting as restarts);
- services end at their lifetime (their walltime): that is a kill by design, not a failure;
- a user kill stops a running task, and a pending one is rejected instead (Batsim aborts on a
  KILL_JOB for a job that is not running);
- with ``energy = "idle-sleep"``, machines idle for ``idle_timeout`` seconds go to sleep and are
  woken when queued tasks fit nowhere awake (:mod:`.power`). A task that fits nowhere awake
  waits for a machine to wake (``wake_before_evicting``, the default), as long as a sleeping (or
  switching) machine could hold it, so that sleeping throws no work away; without it, it evicts
  at once, as in the Google cell, which does not sleep.
- with a ``horizon``, the scheduler stops at that simulated time (a wake-up call asked of Batsim):
  running tasks are killed, pending and suspended ones and every job submitted later rejected,
  and all of them end ``censored``; once nothing runs, registrations finish and Batsim ends
  after its last submission (each rejected at once).

- a task queued (submitted or resubmitted) can be placed ``placement_latency`` seconds later
  only (Borg's scheduling delay, which the trace shows in its waits; 0: at once), except a task
  of the initial state at its first submission (its delay is behind it);
- the tasks queued within a pass's span (:mod:`.passes`) are Borg's pass: past ``pass_tasks`` of
  them, none can be placed before the pass's first arrival plus the latency plus one second per
  ``pass_rate`` tasks beyond (0: no limit): Borg placed a big pass later, all of it together;
- with ``reclaim_rate``, a free-tier task (a priority of Google's free band, 0-1) is also evicted
  at that rate per 1,000 hours running, a seeded exponential draw at each start: Borg reclaims
  resources from the free tier for reasons requests do not show (usage), and the trace's
  free-tier evictions outnumber what preemption explains;
- with ``eviction_rate_normal`` and ``eviction_rate_production``, tasks of those groups are
  evicted the same way at those rates: the trace evicts them one at a time, not near a placement;
- with ``reclaim_on_placement``, each time the scheduler starts a task above the free tier on a
  machine running free-tier tasks, it evicts a seeded Poisson number of them (that mean, at most
  all of them), chosen at random: in the trace, most free-tier evictions come within seconds of a
  higher-priority task scheduled on their machine, at a rate per such placement that does not
  depend on the machine's requests, so they follow the placements from hour to hour;
- with ``free_tier_room``, a task above the free tier is placed as if the free tier's requests were
  free room: Borg runs the free tier on resources it reclaims, so in the trace a machine's requests
  pass its capacity by the free tier's and nearly every higher-priority placement lands beside
  free-tier tasks (then ``reclaim_on_placement`` evicts some of them);
- with ``free_tier_overcommit`` above 1, a free-tier task is placed within that many times its
  machine's CPU capacity less every request there, on the machine its requests fill least
  (:func:`.placement.free_tier_spread`): Borg's over-capacity is the free tier's, spread over the
  cell; a warm start's tiers are all spread so (:mod:`.initial_placement`). With idle-sleep, a
  machine running tasks is taken first, so that the spread leaves idle machines to sleep;
- with ``pay_for_room`` (and ``free_tier_room``), a task above the free tier starts where it fits
  without evicting if it can; else in the free tier's room, evicting free-tier tasks there (lowest
  priority first) until the machine's requests are within its capacity again (:mod:`.preemption`);
- with ``preempt_share``, a task above the free tier asking more memory than ``preempt_memory``,
  placed beside free-tier tasks, preempts them at that seeded share of its placements, freeing its
  memory (:mod:`.preemption`): in the trace, large tasks preempted about half the time;
- with ``free_tier_preempt_share`` (and its ``_cpu`` and ``_alone`` variants), a free-tier task
  placed beside free-tier tasks of a lower level (Google's priority 1 beside priority 0)
  preempts them at that seeded share of its placements, freeing its memory (:mod:`.preemption`):
  in the trace, 82 % of a burst's asking more memory than CPU, 9 % of the others', 6 % alone;
  held for the delay, it is then placed where such tasks run;
- a task that can start only by evicting (those, or preemption by requests) waits
  ``preemption_delay`` seconds first (with ``preemption_delay_spread``, a seeded draw of a
  logistic law of that median and scale, per held task), then is queued again where it was and
  may evict: Borg's preemptions come tens of seconds after the submission, spread over tens of
  seconds, its other placements in a couple;
- a task that carries the trace's machine it was running on at a replay's start
  (``trace_machine``) starts on its own machine at once, even past the machine's capacity, as Borg
  had it; the trace's machines are given the cell's machines by rank with ``machines_by_load``
  (:mod:`.trace_machines`), else in the order they first appear (the ``n``-th on machine ``n``
  modulo the cell's size). Its restarts are placed freely.
- the tasks running at time 0 without a machine (a generated warm start, a replay's initial state
  without ``--faithful``) are placed together at
  the first pass, a request shape at a time (:mod:`.initial_placement`), without evicting: one
  that fits nowhere waits in the queue, as Borg's pending tasks do.

A pass tries the heads of the queue's shape groups (:mod:`.queue`), not every queued task, and a
group blocked at an earlier pass only on the machines freed since: its cost follows the number of
request shapes and of freed machines, not the length of the queue.
"""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np

from batsim_google.model.priority import unit_priority
from batsim_google.scheduling.cluster import Cluster, Power
from batsim_google.scheduling.decisions import Decision, Execute, Kill, Register, RegistrationFinished, Reject
from batsim_google.scheduling.eviction import Evictions
from batsim_google.scheduling.initial_placement import initial_placements
from batsim_google.scheduling.passes import Pass, Passes
from batsim_google.scheduling.placement import PLACEMENTS, among, free_tier_spread
from batsim_google.scheduling.policy_api import BatsimNeeds, Policy
from batsim_google.scheduling.policy_config import ALWAYS_ON, IDLE_SLEEP, PolicyConfig
from batsim_google.scheduling.power import PowerManager
from batsim_google.scheduling.preemption import (
    Bursts,
    PreemptionWaits,
    large_task_victims,
    lower_tier_victims,
    room_overflow,
    victims_for_room,
)
from batsim_google.scheduling.queue import PendingQueue
from batsim_google.scheduling.switch_guard import SwitchGuard
from batsim_google.scheduling.tasks import Attempt, JobRequest, Outcome, StopReason, Task, TaskState
from batsim_google.scheduling.trace_machines import assign_by_load
from batsim_google.scheduling.wake_ups import WakeUps
from batsim_google.units import HOUR

#: Workload name of resubmitted jobs (Batsim job ids are ``workload!job``).
RESUBMIT_WORKLOAD = "resubmit"
#: The highest priority of Google's free tier (priorities 0-1), in ]0, 1].
FREE_TIER = float(unit_priority(1)) + 1e-6
#: The highest priorities of Google's normal (2-8) and production (9) groups, in ]0, 1].
NORMAL_TOP = float(unit_priority(8)) + 1e-6
PRODUCTION_TOP = float(unit_priority(9)) + 1e-6
#: Shortest work a resubmitted job is given, so that it lasts a positive time.
MIN_WORK = 1e-6


def _in_free_tier(task: Task) -> bool:
    return task.request.priority <= FREE_TIER


class CellPolicy(Policy):
    """Decision core of the Google-cell scheduler: the first implementation of the policy API
    (:mod:`.policy_api`), on its base's state (cluster, ledger, running tasks) with its own queue,
    restarts and evictions (machines to sleep with an energy policy); its handlers take the
    base's bookkeeping over whole."""

    needs = BatsimNeeds(compute_sharing=True, dynamic_jobs=True, user_kills=True)

    def __init__(
        self,
        cpu: np.ndarray,
        memory: np.ndarray,
        config: PolicyConfig = PolicyConfig(),
        switch_guard: SwitchGuard | None = None,
    ) -> None:
        cluster = Cluster(cpu, memory, config.cpu_overcommit, config.free_tier_room, config.free_tier_overcommit)
        super().__init__(cpu, memory, cluster)
        self.config = config
        self.evictions = Evictions(self.cluster, config.priority_levels)
        self.power = PowerManager(self.cluster, config.idle_timeout, switch_guard)
        self.place = PLACEMENTS[config.placement]
        self._power_changed = False  # a machine switched, failed or came back in this batch
        self.by_job: dict[str, Task] = {}
        # under the free tier's over-commit, the free tier sees more CPU than the tiers above: its
        # tasks form groups of their own
        self.pending = PendingQueue(_in_free_tier if config.free_tier_overcommit > 1 else None)
        self.suspended: list[tuple[float, int, Task]] = []
        self.finished = False
        self.horizon_reached = False
        self._wake_ups = WakeUps()  # the earliest time wanted is the one asked of Batsim
        self._sequence = itertools.count()
        self._kill_on_submission: set[str] = set()
        # Machines whose room grew since the last pass: the only ones a blocked group may fit on.
        self._freed: set[int] = set()
        self._pinned: list[Task] = []  # tasks to start on their trace's machine at the next pass
        self._running_at_start: list[Task] = []  # a warm start's, to place together at the next pass
        # (placeable at, _, task, arrived at, its pass) within the placement latency
        self._arriving: list[tuple[float, int, Task, float, Pass]] = []
        self._passes = Passes(config.placement_latency, config.pass_tasks, config.pass_rate)
        self._reclaims: list[tuple[float, int, Task, float]] = []  # (when, _, task, its start) to evict
        self._reclaim_rng = np.random.default_rng(config.reclaim_seed)
        # the normal and production groups' draws on a stream of their own: turning them on leaves
        # the free tier's draws as they were
        self._group_eviction_rng = np.random.default_rng([config.reclaim_seed, 1])
        self._trace_machines: dict[int, int] = {}  # the trace's machine -> the cell's
        self._victim_rng = np.random.default_rng([config.reclaim_seed, 2])  # a stream of its own
        self._tier_rng = np.random.default_rng([config.reclaim_seed, 3])  # the free tier's own preemptions
        self.preemption_waits = PreemptionWaits(
            config.preemption_delay, config.preemption_delay_spread, np.random.default_rng([config.reclaim_seed, 4])
        )
        self._bursts = Bursts()  # the free tier's, whose preemption share they set

    @property
    def switch_guard(self) -> SwitchGuard | None:
        """Failures known in advance: the power manager starts no switch that one interrupts."""
        return self.power.switch_guard

    @switch_guard.setter
    def switch_guard(self, guard: SwitchGuard | None) -> None:
        self.power.switch_guard = guard

    # ----- events -------------------------------------------------------------------------------

    def job_submitted(self, now: float, request: JobRequest) -> None:
        """A workload job arrived, or a resubmitted job was acknowledged."""
        task = self.by_job.get(request.job_id)
        if task is None:
            task = Task(request, request.job_id, remaining=request.work, level=self.evictions.level(request.priority))
            self.ledger.tasks[task.task_id] = task
            self.by_job[request.job_id] = task
            if request.machines != 1:
                self._decisions.append(Reject((request.job_id,)))
                self.ledger.end(
                    task, Outcome.REJECTED, now, f"asks for {request.machines} machines; tasks here take one"
                )
                return
            if not self.cluster.fits_somewhere(request.cpu, request.memory):
                self._decisions.append(Reject((request.job_id,)))
                self.ledger.end(task, Outcome.REJECTED, now, "larger than every machine")
                return
        if request.job_id in self._kill_on_submission:
            self._kill_on_submission.discard(request.job_id)
            self._decisions.append(Reject((request.job_id,)))
            note = "before its submission" if task.job_id == task.task_id else "while being resubmitted"
            self.ledger.end(task, Outcome.KILLED_BY_USER, now, note)
            return
        if self.horizon_reached:
            self._decisions.append(Reject((request.job_id,)))
            self.ledger.end(task, Outcome.CENSORED, now, "submitted at or after the horizon")
            return
        if request.trace_machine is not None and task.restarts == 0:
            task.state = TaskState.PENDING
            self._pinned.append(task)
            return
        if request.running_at_start and task.restarts == 0:
            task.state = TaskState.PENDING
            self._running_at_start.append(task)
            return
        self._arrive(task, now)

    def job_ended(self, now: float, job_id: str, status: str) -> None:
        """A job ended in Batsim: ``success``, ``walltime`` (reached), ``killed`` or ``failed``."""
        task = self.by_job.pop(job_id)  # no event names a job once it ended
        if task.job_id != job_id or task.state not in (TaskState.RUNNING, TaskState.STOPPING):
            raise AssertionError(f"job {job_id} ended but task {task.task_id} is {task.state.value}")
        self.running.pop(job_id, None)
        if task.state is TaskState.RUNNING:
            self._vacate(task, now)
        reason = status if status != "killed" or task.stop_reason is None else task.stop_reason.value
        self.ledger.record(Attempt(task.task_id, job_id, task.restarts, task.machine, task.start_time, now, reason))
        if status == "killed" and task.stop_reason not in (None, StopReason.USER_KILL):
            self._restart(task, now)
        else:
            self.end_task(task, now, status)

    def machines_unavailable(self, now: float, machines) -> None:
        """Machines failed: kill what runs there; they get nothing until they come back."""
        machines = np.atleast_1d(machines)
        self.cluster.set_available(machines, False)
        self._stop(self.evictions.tasks_on(machines.tolist()), StopReason.MACHINE_FAILURE, now)
        self._power_changed = True

    def machines_available(self, now: float, machines) -> None:
        machines = np.atleast_1d(machines)
        self.cluster.set_available(machines, True)
        self.cluster.idle_since[machines] = now
        self._freed.update(machines.tolist())
        self._power_changed = True

    def power_changed(self, now: float, machines, on: bool) -> None:
        """Batsim finished switching ``machines`` on (or to sleep)."""
        self.cluster.set_power(machines, Power.ON if on else Power.SLEEPING, now)
        if on:
            self._freed.update(np.atleast_1d(machines).tolist())
        self._power_changed = True

    def user_kill(self, now: float, task_id: str) -> None:
        """Kill a task at its user's request, whatever it is doing."""
        task = self.ledger.tasks.get(task_id)
        if task is None:  # Batsim delivers an event before a job submitted at the same time
            self._kill_on_submission.add(task_id)
            return
        if task.state is TaskState.ENDED:
            return
        if task.state is TaskState.RUNNING:
            self._stop([task], StopReason.USER_KILL, now)
        elif task.state is TaskState.STOPPING:
            task.stop_reason = StopReason.USER_KILL
        elif task.state is TaskState.PENDING and (
            self._dequeue(task) or self._unpin(task) or self._unarrive(task) or self.preemption_waits.remove(task)
        ):
            self._decisions.append(Reject((task.job_id,)))
            self.ledger.end(task, Outcome.KILLED_BY_USER, now, "while pending")
        elif task.state is TaskState.SUSPENDED:
            self.suspended = [entry for entry in self.suspended if entry[2] is not task]
            heapq.heapify(self.suspended)
            self.ledger.end(task, Outcome.KILLED_BY_USER, now, "while suspended")
        elif task.state is TaskState.RESUBMITTING:  # reject the new job when it arrives
            self._kill_on_submission.add(task.job_id)

    def woken(self, now: float) -> None:
        """A requested wake-up: suspended tasks whose time came are resubmitted."""
        while self.suspended and self.suspended[0][0] <= now:
            _, _, task = heapq.heappop(self.suspended)
            self._resubmit(task)
        reclaimed = []
        while self._reclaims and self._reclaims[0][0] <= now:
            _, _, task, started = heapq.heappop(self._reclaims)
            if task.state is TaskState.RUNNING and task.start_time == started:
                reclaimed.append(task)
        self._stop(reclaimed, StopReason.EVICTION, now)

    # ----- decisions ----------------------------------------------------------------------------

    def decide(self, now: float) -> list[Decision]:
        """Scheduling pass after a batch of events; returns and forgets the decisions."""
        if not self.finished and self.config.horizon:
            if now >= self.config.horizon and not self.horizon_reached:
                self._stop_at_horizon(now)
            self._wake_at(self.config.horizon, now)
        if not self.finished and not self.horizon_reached:
            self._start_pinned(now)
            self._start_running_at_start(now)
            self._queue_arrived(now)
            for task, queued_at in self.preemption_waits.ready(now):
                self._enqueue(task, queued_at)
            self._schedule(now)
            if self.config.energy == IDLE_SLEEP:
                switches, recheck = self.power.adjust(self.pending, now)
                self._decisions.extend(switches)
                self._power_changed |= bool(switches)
                if recheck is not None:
                    self._wake_at(recheck, now)
        if not self.finished:
            self._finish_if_done(now)
        if not self.finished:
            self._decisions.extend(self._wake_ups.ask(now))
        if self._power_changed and self.config.energy != ALWAYS_ON:  # what Batsim mislabels (.sleep_log)
            self.sleep_log.record(now, int((self.cluster.asleep & self.cluster.available).sum()))
        self._power_changed = False
        decisions, self._decisions = self._decisions, []
        return decisions

    def _schedule(self, now: float) -> None:
        """Place queued tasks in queue order, trying each worth-trying group's head in turn.

        A blocked group is tried on the machines freed since the last pass only. A head that fits
        nowhere blocks its group, and any later group asking for at least as much (with no higher
        priority, as heads come in queue order) is blocked without a try.
        """
        freed = np.fromiter(self._freed, dtype=np.int64, count=len(self._freed))
        self._freed = set()
        if not self.pending:
            return
        freed_machines = None  # sorted at the first blocked group tried: most passes try none
        queue = self.pending
        heads = queue.heads(self._worth_trying(freed))
        # the smallest shapes that fit nowhere, per tier (above the free tier or not: their rooms differ)
        failed: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        while heads:
            _, group = heapq.heappop(heads)
            cpu, memory = group.shape
            failed_shapes = failed[group.head.request.priority > FREE_TIER]
            if any(cpu >= c and memory >= m for c, m in failed_shapes):
                queue.blocked[group.index] = True
                continue
            task = group.head
            allowed = None
            if queue.blocked[group.index]:
                if freed_machines is None:
                    freed_machines = np.unique(freed)
                allowed = freed_machines
            machine, victims = self._place(task, allowed)
            if machine < 0 and self.config.preemption:
                if self._waits_for_wake(cpu, memory, now):
                    queue.blocked[group.index] = False  # once machines have woken, tried everywhere again
                    continue
                machine, victims = self.evictions.make_room(task, allowed)
            if machine < 0:
                failed_shapes[:] = [(c, m) for c, m in failed_shapes if c < cpu or m < memory] + [(cpu, memory)]
                queue.blocked[group.index] = True
                continue
            if victims and self.preemption_waits.must_wait(task):
                self._hold_for_preemption(task, now)
            else:
                self._stop(victims, StopReason.EVICTION, now)
                self._dequeue(task)
                self._start(task, machine, now)
                self.preemption_waits.started(task)
                self._reclaim_for(task, now)
            if group.tasks:
                heapq.heappush(heads, (group.head.queue_key, group))

    def _place(self, task: Task, allowed: np.ndarray | None) -> tuple[int, list[Task]]:
        """The machine for ``task`` and the tasks it evicts there (-1 when it fits nowhere without
        preemption by requests): with ``pay_for_room``, a task above the free tier takes the free
        tier's room only where it fits nowhere else, and evicts free-tier tasks to pay for it."""
        cpu, memory = task.request.cpu, task.request.memory
        above = task.request.priority > FREE_TIER
        if not above and self._preempts_in_free_tier(task):
            machine = self._beside_lower_levels(task, allowed)
            if machine >= 0:
                lower = [v for v in self._free_tier_on(machine) if v.level < task.level]
                cpu_over, memory_over = room_overflow(self.cluster, machine, cpu, memory)
                return machine, victims_for_room(lower, cpu_over, max(memory_over, memory), self._tier_rng)
        if not above and self.config.free_tier_overcommit > 1:
            machine = self._place_free_tier(cpu, memory, allowed)
            return machine, self._evicts_though_it_fits(task, machine)
        if not (above and self.config.pay_for_room and self.config.free_tier_room):
            machine = self.place(self.cluster, cpu, memory, allowed, above)
            return machine, self._evicts_though_it_fits(task, machine)
        machine = self.place(self.cluster, cpu, memory, allowed, False)
        if machine >= 0:
            return machine, self._evicts_though_it_fits(task, machine)
        machine = self.place(self.cluster, cpu, memory, allowed, True)
        if machine < 0:
            return machine, []
        overflow = room_overflow(self.cluster, machine, cpu, memory)
        return machine, victims_for_room(self._free_tier_on(machine), *overflow, self._victim_rng)

    def _place_free_tier(self, cpu: float, memory: float, allowed: np.ndarray | None) -> int:
        """The machine for a free-tier task under its over-commit (:func:`.free_tier_spread`); with
        idle-sleep, one running tasks if one fits, so that the spread leaves idle machines to sleep."""
        if self.config.energy == IDLE_SLEEP:
            busy = self.cluster.tasks > 0
            machine = free_tier_spread(self.cluster, cpu, memory, np.flatnonzero(among(busy, allowed)))
            if machine >= 0:
                return machine
        return free_tier_spread(self.cluster, cpu, memory, allowed)

    def _evicts_though_it_fits(self, task: Task, machine: int) -> list[Task]:
        """The tasks that ``task`` evicts on ``machine`` though it fits: a task above the free tier
        evicts free-tier tasks by its size (:func:`.large_task_victims`), a free-tier task those of
        the free tier's lower levels (:func:`.lower_tier_victims`)."""
        config = self.config
        if task.request.priority <= FREE_TIER:
            share = self._free_tier_share(task)
            if machine < 0 or not share:
                return []
            lower = [v for v in self._free_tier_on(machine) if v.level < task.level]
            return lower_tier_victims(task, lower, self.preemption_waits.waited(task), share, self._tier_rng)
        if machine < 0 or not config.preempt_share:
            return []
        return large_task_victims(
            task,
            self._free_tier_on(machine),
            self.preemption_waits.waited(task),
            config.preempt_memory,
            config.preempt_share,
            self._victim_rng,
        )

    def _free_tier_share(self, task: Task) -> float:
        """The share of the free-tier ``task``'s placements that preempt its tier's lower levels:
        in the trace, priority 1 alone seldom preempted, in a burst asking more memory than CPU
        mostly."""
        config = self.config
        if not self._bursts.in_burst(task):
            return config.free_tier_preempt_share_alone
        if task.request.memory > task.request.cpu:
            return config.free_tier_preempt_share
        return config.free_tier_preempt_share_cpu

    def _preempts_in_free_tier(self, task: Task) -> bool:
        """Whether the free-tier ``task`` waited the delay to preempt its tier's lower levels: it is
        then placed where such tasks run, in their room (98 % of the trace's priority-1 placements
        were beside priority 0). Else a burst's held tasks, drawn on the same best-fit machine,
        come back to it once the first of them has evicted all there, and most evict nothing."""
        return bool(self._free_tier_share(task) and self.config.priority_levels and self.preemption_waits.waited(task))

    def _beside_lower_levels(self, task: Task, allowed: np.ndarray | None) -> int:
        """The machine (among ``allowed``, machine indexes, if given) where ``task`` fits best once the tasks of lower levels
        there are evicted, among those that run some; -1 if none. Borg's preempting placements
        came after the tasks that fit had started: they take the room of those they evict."""
        cpu, memory = task.request.cpu, task.request.memory
        below_cpu, below_memory = self.evictions.freeable(np.array([task.level]), np.arange(len(self.cluster)))
        room_cpu = self.cluster.free_cpu() + below_cpu[0]
        room_memory = self.cluster.free_memory() + below_memory[0]
        fits = among(
            self.cluster.usable() & (below_memory[0] > 1e-12) & (room_cpu >= cpu) & (room_memory >= memory), allowed
        )
        if not fits.any():
            return -1
        return int(np.argmin(np.where(fits, room_cpu - cpu + room_memory - memory, np.inf)))

    def _free_tier_on(self, machine: int) -> list[Task]:
        return [v for v in self.evictions.tasks_on([machine]) if v.request.priority <= FREE_TIER]

    def _hold_for_preemption(self, task: Task, now: float) -> None:
        """Hold ``task``, which can start only by evicting, for the preemption delay; it is then
        queued again where it was, and may evict."""
        queued_at = task.queue_key[1]
        self._dequeue(task)
        task.state = TaskState.PENDING
        self._wake_at(self.preemption_waits.hold(task, now, queued_at), now)

    def _start_pinned(self, now: float) -> None:
        """Start the tasks kept on their trace's machine there; one whose machine is not up
        (failed, asleep) joins the queue instead."""
        pinned, self._pinned = self._pinned, []
        if self.config.machines_by_load:
            assign_by_load(self._trace_machines, pinned, self.cluster)
        usable = self.cluster.usable()
        for task in pinned:
            trace_machine = task.request.trace_machine
            machine = self._trace_machines.setdefault(trace_machine, len(self._trace_machines) % len(self.cluster))
            if usable[machine]:
                self._start(task, machine, now)
            else:
                self._enqueue(task, now)

    def _start_running_at_start(self, now: float) -> None:
        """Place a warm start's tasks together (:mod:`.initial_placement`), without evicting; one
        that fits nowhere waits in the queue, blocked until room is freed."""
        tasks, self._running_at_start = self._running_at_start, []
        for task, machine in initial_placements(self.cluster, tasks, self.config.placement, FREE_TIER):
            if machine >= 0:
                self._start(task, machine, now)
            else:
                self._enqueue(task, now)
                self.pending.block(task)

    def _arrive(self, task: Task, now: float) -> None:
        """Queue ``task``, placeable once the placement latency has passed (at once for a task of
        the initial state, first submitted)."""
        latency = 0.0 if task.request.initial and not task.restarts else self.config.placement_latency
        if task.request.priority <= FREE_TIER:
            self._bursts.submitted(task, now)
        if not latency:
            self._enqueue(task, now)
            return
        task.state = TaskState.PENDING
        joined = self._passes.join(now)
        ready = self._passes.ready(now, joined)
        heapq.heappush(self._arriving, (ready, next(self._sequence), task, now, joined))
        self._wake_at(ready, now)

    def _queue_arrived(self, now: float) -> None:
        """Queue the arrived tasks placeable by ``now``; a task whose pass grew since it arrived
        waits for the pass's new time."""
        while self._arriving and self._arriving[0][0] <= now:
            _, _, task, arrival, joined = heapq.heappop(self._arriving)
            ready = self._passes.ready(arrival, joined)
            if ready > now:
                heapq.heappush(self._arriving, (ready, next(self._sequence), task, arrival, joined))
                self._wake_at(ready, now)
            else:
                self._enqueue(task, arrival)

    def _unarrive(self, task: Task) -> bool:
        kept = [entry for entry in self._arriving if entry[2] is not task]
        if len(kept) == len(self._arriving):
            return False
        self._arriving = kept
        heapq.heapify(self._arriving)
        return True

    def _unpin(self, task: Task) -> bool:
        for waiting in (self._pinned, self._running_at_start):
            if task in waiting:
                waiting.remove(task)
                return True
        return False

    def _waits_for_wake(self, cpu: float, memory: float, now: float) -> bool:
        """Whether a request that fits nowhere awake waits for a wake-up rather than evicting."""
        if not (self.config.wake_before_evicting and self.config.energy == IDLE_SLEEP):
            return False
        return self.power.room_coming(cpu, memory, now)

    def _worth_trying(self, freed: np.ndarray) -> np.ndarray:
        """Indexes of the non-empty groups not blocked, and of the blocked ones whose head fits,
        alone or by evicting, on a freed machine (with raw priorities: on it empty, a bound)."""
        queue, cluster = self.pending, self.cluster
        freed = freed[cluster.usable()[freed]]
        candidates = queue.nonempty() & ~queue.blocked
        if freed.size:
            # the room a task above the free tier sees, or the free tier's CPU past the capacity:
            # a bound for every group
            room_cpu = np.maximum(cluster.free_cpu(above_free_tier=True)[freed], cluster.free_tier_cpu_room()[freed])
            room_cpu = room_cpu[None, :]
            room_memory = cluster.free_memory(above_free_tier=True)[freed][None, :]
            if self.config.preemption and self.config.priority_levels:
                below_cpu, below_memory = self.evictions.freeable(queue.level, freed)
                room_cpu = room_cpu + below_cpu
                room_memory = room_memory + below_memory
            elif self.config.preemption:  # evicting frees at most the capacity (the free tier's room may pass it)
                room_cpu = np.maximum(room_cpu, cluster.cpu_capacity[freed][None, :])
                room_memory = cluster.memory_capacity[freed][None, :]
            fits = ((queue.cpu[:, None] <= room_cpu) & (queue.memory[:, None] <= room_memory)).any(axis=1)
            candidates |= queue.nonempty() & fits
        return np.flatnonzero(candidates)

    def _start(self, task: Task, machine: int, now: float) -> None:
        self._bursts.forget(task)
        task.state = TaskState.RUNNING
        task.machine = machine
        task.start_time = now
        task.stop_reason = None
        self.running[task.job_id] = task
        self.cluster.allocate(machine, task.request.cpu, task.request.memory, task.request.priority <= FREE_TIER)
        self.evictions.started(task)
        self._decisions.append(Execute(task.job_id, machine))
        rate = self._eviction_rate(task.request.priority)
        if rate:
            draws = self._reclaim_rng if task.request.priority <= FREE_TIER else self._group_eviction_rng
            after = draws.exponential(1000 * HOUR / rate)
            if after < task.remaining:  # else it ends first
                heapq.heappush(self._reclaims, (now + after, next(self._sequence), task, now))
                self._wake_at(now + after, now)

    def _eviction_rate(self, priority: float) -> float:
        """Evictions per 1,000 task-hours drawn for a task of ``priority``, besides preemption."""
        if priority <= FREE_TIER:
            return self.config.reclaim_rate
        if priority <= NORMAL_TOP:
            return self.config.eviction_rate_normal
        if priority <= PRODUCTION_TOP:
            return self.config.eviction_rate_production
        return 0.0

    def _reclaim_for(self, task: Task, now: float) -> None:
        """Evict free-tier tasks from the machine ``task`` just started on, if it is above the free tier."""
        if not self.config.reclaim_on_placement or task.request.priority <= FREE_TIER:
            return
        free = self._free_tier_on(task.machine)
        if not free:
            return
        count = min(int(self._reclaim_rng.poisson(self.config.reclaim_on_placement)), len(free))
        if count:
            chosen = self._reclaim_rng.choice(len(free), size=count, replace=False)
            self._stop([free[i] for i in sorted(chosen)], StopReason.EVICTION, now)

    def _vacate(self, task: Task, now: float) -> None:
        """Free the room of a running task, which is no longer a candidate for eviction."""
        machine = task.machine
        self.cluster.release(machine, task.request.cpu, task.request.memory, now, task.request.priority <= FREE_TIER)
        self.evictions.stopped(task)
        self._freed.add(machine)

    def _stop(self, tasks: list[Task], reason: StopReason, now: float) -> None:
        """Kill running tasks; their room is free at once for the pass that evicted them."""
        if not tasks:
            return
        for task in tasks:
            self._vacate(task, now)
            task.state = TaskState.STOPPING
            task.stop_reason = reason
        self._decisions.append(Kill(tuple(task.job_id for task in tasks)))

    def _restart(self, task: Task, now: float) -> None:
        if self.horizon_reached:
            stopped = "running" if task.stop_reason is StopReason.HORIZON else task.stop_reason.value
            self.ledger.end(task, Outcome.CENSORED, now, f"{stopped} at the horizon")
            return
        if task.stop_reason is StopReason.EVICTION and self.config.restart == "none":
            self.ledger.end(task, Outcome.NOT_RESTARTED, now, "evicted; restart policy 'none'")
            return
        if task.restarts >= self.config.max_restarts:
            self.ledger.end(task, Outcome.NOT_RESTARTED, now, f"{task.stop_reason.value}; restart cap reached")
            return
        if self.config.resume:
            task.remaining = max(task.remaining - (now - task.start_time), MIN_WORK)
        else:
            task.remaining = task.request.work
        task.restarts += 1
        if (
            task.stop_reason is StopReason.EVICTION
            and self.config.restart == "delayed"
            and self.config.restart_delay > 0
        ):
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
        task.queue_key = (-task.request.priority, now, next(self._sequence))
        self.pending.add(task)

    def _dequeue(self, task: Task) -> bool:
        return self.pending.remove(task)

    def _wake_at(self, time: float, now: float) -> None:
        self._wake_ups.want(time, now)

    # ----- end ----------------------------------------------------------------------------------

    def _stop_at_horizon(self, now: float) -> None:
        """Censor everything at the horizon: kill what runs (only running jobs: a KILL_JOB of
        another aborts Batsim), reject what is queued, drop what is suspended."""
        self.horizon_reached = True
        self._queue_arrived(math.inf)
        for task, queued_at in self.preemption_waits.ready(math.inf):
            self._enqueue(task, queued_at)
        queued = list(self.pending)
        for task in queued:
            self._dequeue(task)
            self.ledger.end(task, Outcome.CENSORED, now, "pending at the horizon")
        if queued:
            self._decisions.append(Reject(tuple(task.job_id for task in queued)))
        for _, _, task in self.suspended:
            self.ledger.end(task, Outcome.CENSORED, now, "suspended at the horizon")
        self.suspended = []
        self._stop([task for task in self.running.values() if task.state is TaskState.RUNNING], StopReason.HORIZON, now)

    def _finish_if_done(self, now: float) -> None:
        """End the simulation once nothing can happen any more.

        That is: no job or external event will come (or the horizon passed), nothing runs, stops,
        waits to be resubmitted or switches power, and what is still queued fits nowhere usable.
        """
        if not (self.no_more_jobs or self.horizon_reached) or self.running or self.suspended:
            return
        if self.ledger.open != len(self.pending):
            return  # some task is being resubmitted
        if self.cluster.in_power(Power.SWITCHING_ON, Power.SWITCHING_OFF).any():
            return
        if self.pending and not self.no_more_events and not self.cluster.usable().all():
            return  # failed machines may come back, sleeping ones be woken once no failure is near
        for task in list(self.pending):
            self._dequeue(task)
            self._decisions.append(Reject((task.job_id,)))
            self.ledger.end(task, Outcome.PENDING_AT_END, now, "no machine could take it")
        self._decisions.append(RegistrationFinished())
        self.finished = True
