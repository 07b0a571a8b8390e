"""Best-fit packing by priority, with a waiting deadline: a complete policy on the policy API.

Tasks share machines. At each scheduling pass the pending tasks are taken by priority (highest
first, then in submission order), each placed on the usable machine it fills best (the least CPU
left after it) among those with the CPU and memory it asks for; nothing is ever evicted. A task
that fits no machine of the cell, even empty, is rejected when it arrives; one still waiting
``max_wait`` seconds after its submission is rejected then (a wake-up is asked for at its
deadline, so that the pass runs even if nothing else happens). So every task ends: no task is
left pending when the workload is done. Run it with::

    batsim-google run --platform cell64.xml --workload workload.json -o out \\
        --scheduler python=examples/policies/deadline_best_fit.py:DeadlineBestFit \\
        --scheduler-options '{"max_wait": 600}'

What the policy is handed (see ``batsim_google.scheduling.policy_api`` and docs/schedulers.md):

- ``__init__(cpu, memory, **options)``: each machine's CPU and memory capacities (numpy arrays in
  Batsim's resource order, normalized: 1 is the largest machine) and the scheduler's ``options``;
- events, each with the simulated time ``now``, whose base handlers keep the tasks and the ledger
  (an override calls ``super()`` first): ``job_submitted(now, request)`` with a ``JobRequest``
  (``job_id`` "w0!17", ``subtime``, ``kind`` "task" or "service", ``priority`` in ]0, 1],
  normalized ``cpu`` and ``memory``, ``work``: a task's seconds, a service's lifetime);
  ``job_ended(now, job_id, status)``; ``machines_unavailable`` / ``machines_available(now,
  machines)``; ``power_changed(now, machines, on)``; ``user_kill(now, task_id)``; ``woken(now)``;
- state: ``self.pending`` (tasks waiting, in submission order), ``self.running`` (by Batsim job
  id), ``self.cluster`` (``usable()``, ``free_cpu()``, ``free_memory()``, ``tasks`` per machine),
  ``self.ledger``, ``no_more_jobs`` and ``no_more_events``.

What it may return: after each batch of simultaneous events the front-end calls ``decide(now)``,
which calls ``schedule(now)`` and returns the decisions the helpers recorded, in order:
``execute(task, machine, now)`` (a pending task on a usable machine), ``reject(task, now,
note)`` (a pending task), ``kill(tasks, reason)`` (running tasks; each ends at Batsim's
acknowledgement, ``job_ended(..., "killed")``), ``switch_on`` / ``switch_off(machines, now)``
and ``wake_at(time)`` (a ``woken`` event then, ``time`` after ``now``). The helpers keep the
cluster's allocations and the ledger, so that every task ends exactly once and its attempts are
written beside Batsim's outputs.
"""

from __future__ import annotations

import numpy as np

from batsim_google.scheduling.policy_api import BatsimNeeds, Policy
from batsim_google.scheduling.tasks import JobRequest, Task

#: Seconds of slack when comparing Batsim's clock with a deadline (its times are doubles).
CLOCK_SLACK = 1e-6


class DeadlineBestFit(Policy):
    #: Several tasks per machine (compute sharing); a failed machine's tasks are killed by the
    #: base class's ``machines_unavailable`` and end not restarted.
    needs = BatsimNeeds(compute_sharing=True, failures=True)

    def __init__(self, cpu: np.ndarray, memory: np.ndarray, max_wait: float = 3600.0) -> None:
        super().__init__(cpu, memory)
        if not max_wait > 0:
            raise ValueError(f"max_wait must be a number of seconds > 0 (got {max_wait})")
        self.max_wait = float(max_wait)
        self.deadline_asked: set[str] = set()

    def job_submitted(self, now: float, request: JobRequest) -> None:
        super().job_submitted(now, request)  # the task is now last in self.pending, and in the ledger
        if not self.cluster.fits_somewhere(request.cpu, request.memory):
            self.reject(self.pending[-1], now, "larger than every machine")

    def schedule(self, now: float) -> None:
        for task in [task for task in self.pending if now >= self.deadline(task) - CLOCK_SLACK]:
            self.reject(task, now, f"waited {self.max_wait:g} s")
        for task in sorted(self.pending, key=lambda task: -task.request.priority):  # stable: FCFS within
            machine = self.best_fit(task)
            if machine is not None:
                self.execute(task, machine, now)
        for task in self.pending:
            if task.task_id not in self.deadline_asked:
                self.deadline_asked.add(task.task_id)
                self.wake_at(self.deadline(task))

    def deadline(self, task: Task) -> float:
        return task.request.subtime + self.max_wait

    def best_fit(self, task: Task) -> int | None:
        """The usable machine with the least CPU left once the task is on it, None if none fits."""
        cluster = self.cluster
        cpu_left = cluster.free_cpu() - task.request.cpu
        fits = cluster.usable() & (cpu_left >= 0) & (cluster.free_memory() >= task.request.memory)
        if not fits.any():
            return None
        return int(np.flatnonzero(fits)[np.argmin(cpu_left[fits])])
