"""Property-based tests of the policy core's invariants under random event sequences (hypothesis).

Whatever the order of submissions, completions, failures, recoveries, user kills and clock moves:
no machine holds more than its capacity, evictions only hit strictly lower priorities, Batsim is
never asked to kill a job that is not running, and in the end every task ended exactly once.
"""

from __future__ import annotations

import math

import numpy as np
from fake_batsim import FakeBatsim
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from uncalibrated import mechanics_config

from batsim_google.scheduling.decisions import Execute, Kill
from batsim_google.scheduling.policy import FREE_TIER, CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.tasks import JobRequest, StopReason

MACHINES = 4
CPU = np.array([1.0, 0.5, 0.5, 0.25])
MEMORY = np.array([1.0, 0.5, 0.25, 0.25])
SIZES = st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5])


class CellMachine(RuleBasedStateMachine):
    #: with the defaults calibrated on Borg (latency, the free tier's room, reclaims, group evictions)
    calibrated = False

    def __init__(self) -> None:
        super().__init__()
        self.sim: FakeBatsim | None = None
        self.count = 0

    @rule(
        placement=st.sampled_from(["first-fit", "best-fit"]),
        restart=st.sampled_from(["none", "immediate", "delayed"]),
        resume=st.booleans(),
        energy=st.sampled_from(["always-on", "idle-sleep"]),
        overcommit=st.sampled_from([1.0, 1.5]),
        levels=st.sampled_from([0, 12]),
        wake_first=st.booleans(),
        free_tier_overcommit=st.sampled_from([1.0, 1.5]),
    )
    @precondition(lambda self: self.sim is None)
    def configure(self, placement, restart, resume, energy, overcommit, levels, wake_first, free_tier_overcommit):
        config = (PolicyConfig if self.calibrated else mechanics_config)(
            placement=placement,
            restart=restart,
            restart_delay=30.0,
            resume=resume,
            energy=energy,
            idle_timeout=50.0,
            cpu_overcommit=overcommit,
            max_restarts=3,
            priority_levels=levels,
            wake_before_evicting=wake_first,
            free_tier_overcommit=free_tier_overcommit,
        )
        self.overcommit = overcommit
        self.sim = FakeBatsim(CellPolicy(CPU, MEMORY, config))
        self._watch_kills()

    def _watch_kills(self) -> None:
        """Record, for each eviction, the priorities evicted and those placed in the same batch."""
        self.evictions: list[tuple[list[float], list[tuple[int, float]]]] = []
        policy = self.sim.policy
        decide = policy.decide

        def watched(now):
            decisions = decide(now)
            placed = [
                (d.machine, policy.by_job[d.job_id].request.priority) for d in decisions if isinstance(d, Execute)
            ]
            for decision in decisions:
                if isinstance(decision, Kill):
                    evicted = [policy.by_job[j] for j in decision.job_ids]
                    evicted = [t for t in evicted if t.stop_reason is StopReason.EVICTION]
                    if evicted:
                        self.evictions.append(([(t.machine, t.request.priority) for t in evicted], placed))
            return decisions

        policy.decide = watched

    @precondition(lambda self: self.sim is not None and not self.sim.finished)
    @rule(priority=st.floats(0.01, 1.0), cpu=SIZES, memory=SIZES, service=st.booleans(), work=st.floats(1.0, 200.0))
    def submit(self, priority, cpu, memory, service, work):
        self.count += 1
        kind = "service" if service else "task"
        self.sim.submit(JobRequest(f"w0!{self.count}", self.sim.now, kind, priority, cpu, memory, work))

    @precondition(lambda self: self.sim is not None and self.sim.running)
    @rule(data=st.data())
    def complete(self, data):
        job_id = data.draw(st.sampled_from(sorted(self.sim.running)))
        service = self.sim.policy.by_job[job_id].is_service
        self.sim.complete(job_id, "walltime" if service else "success")

    @precondition(lambda self: self.sim is not None and self.sim.policy.cluster.available.any())
    @rule(data=st.data())
    def fail(self, data):
        up = np.flatnonzero(self.sim.policy.cluster.available).tolist()
        machines = data.draw(st.lists(st.sampled_from(up), min_size=1, unique=True))
        self.sim.policy.machines_unavailable(self.sim.now, machines)
        self.sim.step()

    @precondition(lambda self: self.sim is not None and not self.sim.policy.cluster.available.all())
    @rule(data=st.data())
    def recover(self, data):
        down = np.flatnonzero(~self.sim.policy.cluster.available).tolist()
        machines = data.draw(st.lists(st.sampled_from(down), min_size=1, unique=True))
        self.sim.policy.machines_available(self.sim.now, machines)
        self.sim.step()

    @precondition(lambda self: self.sim is not None and self.count > 0)
    @rule(data=st.data())
    def user_kill(self, data):
        task_id = f"w0!{data.draw(st.integers(1, self.count))}"
        self.sim.policy.user_kill(self.sim.now, task_id)
        self.sim.step()

    @precondition(lambda self: self.sim is not None)
    @rule(dt=st.floats(0.5, 100.0))
    def advance(self, dt):
        self.sim.advance(self.sim.now + dt)

    @precondition(lambda self: self.sim is not None and self.sim.switching)
    @rule()
    def finish_switches(self):
        self.sim.finish_switches()

    @invariant()
    def capacity_is_never_exceeded(self):
        if self.sim is None:
            return
        # with the free tier's room or over-commit, what runs above the free tier and the free tier each
        # fit (the free tier's CPU within its over-commit); without the room, the machine's total too
        config = self.sim.policy.config
        split = config.free_tier_room or config.free_tier_overcommit > 1
        tiers = np.zeros((2, 2, MACHINES))  # [free tier or not][cpu, memory][machine]
        for job_id, machine in self.sim.running.items():
            request = self.sim.policy.by_job[job_id].request
            tiers[int(split and request.priority <= FREE_TIER), :, machine] += request.cpu, request.memory
        for (cpu, memory), ratio in zip(tiers, (1.0, config.free_tier_overcommit), strict=True):
            assert np.all(cpu <= CPU * self.overcommit * ratio + 1e-9)
            assert np.all(memory <= MEMORY + 1e-9)
        if not config.free_tier_room:
            assert np.all(tiers[:, 0].sum(axis=0) <= CPU * self.overcommit * config.free_tier_overcommit + 1e-9)
            assert np.all(tiers[:, 1].sum(axis=0) <= MEMORY + 1e-9)
        assert not any(self.sim.policy.cluster.available[m] == False for m in self.sim.running.values())  # noqa: E712
        powered = self.sim.policy.cluster.powered
        assert all(powered[m] for m in self.sim.running.values())

    @invariant()
    def no_queued_task_could_start(self):
        """After each batch, no job Batsim holds as submitted fits on a usable machine, even by
        evicting lower levels (unless it waits for a wake-up): skipping groups of same-shape tasks
        never leaves a placeable one."""
        if self.sim is None:
            return
        policy, levels = self.sim.policy, self.sim.policy.config.priority_levels

        def level(request):
            return math.ceil(request.priority * levels) if levels else request.priority

        usable = policy.cluster.usable()
        asleep = policy.cluster.available & ~policy.cluster.powered
        waking_first = policy.config.wake_before_evicting and policy.config.energy == "idle-sleep"
        for job_id in self.sim.submitted:
            request = policy.by_job[job_id].request
            # with wake_before_evicting, a task some sleeping machine could hold may wait instead of evicting
            evicts = not (
                waking_first and (asleep & (CPU * self.overcommit >= request.cpu) & (MEMORY >= request.memory)).any()
            )
            room_cpu, room_memory = CPU * self.overcommit, MEMORY.copy()
            for running_id, machine in self.sim.running.items():
                other = policy.by_job[running_id].request
                if level(other) >= level(request) or not evicts:
                    room_cpu[machine] -= other.cpu
                    room_memory[machine] -= other.memory
            fits = usable & (room_cpu >= request.cpu + 1e-9) & (room_memory >= request.memory + 1e-9)
            ratio = policy.config.free_tier_overcommit
            if ratio > 1 and request.priority <= FREE_TIER:  # nor, without evicting, past the capacity
                fits |= (
                    usable
                    & (CPU * self.overcommit * ratio - policy.cluster.cpu_used >= request.cpu + 1e-9)
                    & (MEMORY - policy.cluster.memory_used >= request.memory + 1e-9)
                )
            assert not fits.any(), f"{job_id} queued while machines {np.flatnonzero(fits)} could take it"

    @invariant()
    def evictions_only_hit_lower_priorities(self):
        if self.sim is None:
            return
        for evicted, placed in self.evictions:
            for machine, priority in evicted:
                assert any(m == machine and p > priority for m, p in placed)

    def teardown(self):
        if self.sim is None:
            return
        sim, policy = self.sim, self.sim.policy
        policy.no_more_jobs = True
        policy.no_more_events = True
        down = np.flatnonzero(~policy.cluster.available).tolist()
        if down:
            policy.machines_available(sim.now, down)
        sim.step()
        for _ in range(10_000):
            if sim.finished:
                break
            if sim.switching:
                sim.finish_switches()
            elif sim.running:
                job_id = sorted(sim.running)[0]
                sim.complete(job_id, "walltime" if policy.by_job[job_id].is_service else "success")
            else:
                sim.advance(max(sim.wakeups, default=sim.now) + 1.0)
                sim.step()
        assert sim.finished, "the simulation never ended"
        assert policy.ledger.balanced()
        assert sum(policy.ledger.outcomes().values()) == len(policy.ledger.tasks) == self.count
        assert not sim.submitted and not sim.running  # no job left behind in Batsim


class CalibratedCellMachine(CellMachine):
    """The same sequences with the calibrated defaults: what runs above the free tier stays within
    capacity, and every task still ends exactly once. (Tasks wait out the placement latency, and
    evictions without a placement are the groups' draws: the other two invariants do not hold.)"""

    calibrated = True

    def no_queued_task_could_start(self):
        pass

    def evictions_only_hit_lower_priorities(self):
        pass


CellMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
CalibratedCellMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
TestCellInvariants = CellMachine.TestCase
TestCalibratedCellInvariants = CalibratedCellMachine.TestCase
