"""The contention a workload meets on a cell, predicted cheaply: its queue over time and its restarts.

A full cell's run costs more than its jobs' steps: tasks that do not fit wait in the queue, which
the scheduler tries again at each pass, and tasks evicted to make room come back as new attempts.
:func:`predict_contention` plays the load against the cell's capacity, in bins of
:data:`BIN_S` seconds and summed over the machines (no packing), as the scheduler's defaults
allow it (:class:`~batsim_google.scheduling.policy_config.PolicyConfig`):

- the tiers above the free tier are placed within the CPU capacity times ``cpu_overcommit`` and
  within the memory, in priority order, then submission order, as if the free tier's requests
  were free room (``free_tier_room``: the cell then holds more than its capacity);
- the free tier (Google priorities 0-1) fills what is left, all tiers' CPU within
  ``free_tier_overcommit`` times the capacity, memory within it;
- with ``pay_for_room``, where the tiers above take the free tier's room, the free-tier tasks
  started last are evicted and queued again, to restart from the beginning;
- tasks above the free tier are also evicted at the rates drawn besides preemption
  (``eviction_rate_normal``, ``eviction_rate_production``), per task-hour running.

Requests missing from a workload count as nothing (no contention). Every bin costs a few vector
operations over the queue and the running free tier, so a day of the full cell takes seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from batsim_google.scheduling.policy_config import PolicyConfig

#: Width of the bins the load is played in, seconds: placements are decided at most this late.
BIN_S = 60.0
#: Without a horizon, how long past the last submission the queue is followed at most (a service
#: may be given years: the bins stay a bounded array).
DRAIN_S = 7 * 86_400.0
#: Times a bin's placements go on past a task too large for the room left (the scheduler tries
#: every shape's first task; a few rounds take the smaller tasks behind the large ones).
FIT_ROUNDS = 4


@dataclass(frozen=True)
class Contention:
    """What the cell's capacity does to a workload: restarts (evictions, each one more attempt),
    the steps (instants at which jobs are submitted or end, the ends as the queue delays them, past
    the horizon none), the tasks waiting in the queue summed over the steps, the longest queue,
    and the most jobs running at once as played (those waiting hold no SimGrid actor)."""

    restarts: float
    steps: float
    queued_task_steps: float
    peak_queue: int
    peak_running: int


def predict_contention(
    submit: np.ndarray,
    makespan: np.ndarray,
    cpu: np.ndarray,
    memory: np.ndarray,
    priority: np.ndarray,
    capacity: tuple[float, float],
    horizon: float | None = None,
    config: PolicyConfig | None = None,
) -> Contention:
    """The queue and restarts of jobs submitted at ``submit`` (seconds), each running ``makespan``
    once started, asking ``cpu`` and ``memory`` (NaN: nothing) at ``priority``, on a cell of
    ``capacity`` (its machines' CPU and memory capacities summed), until ``horizon`` (without one,
    until every job has run, or :data:`DRAIN_S` past the last submission), by the rules of ``config`` (the
    scheduler's defaults). A pass's queue is the tasks waiting from an earlier bin: a task placed
    in the bin it comes is the cost of a job, not of contention."""
    import numpy as np

    from batsim_google.scheduling.policy import FREE_TIER, NORMAL_TOP, PRODUCTION_TOP
    from batsim_google.scheduling.policy_config import PolicyConfig
    from batsim_google.units import HOUR

    config = config or PolicyConfig()
    submit = np.asarray(submit, dtype=float)
    if submit.size == 0:
        return Contention(0.0, 0.0, 0.0, 0, 0)
    makespan = np.asarray(makespan, dtype=float)
    cpu = np.nan_to_num(np.asarray(cpu, dtype=float))
    memory = np.nan_to_num(np.asarray(memory, dtype=float))
    priority = np.asarray(priority, dtype=float)
    last = float(submit.max())
    end = float(horizon) if horizon is not None else min(float((submit + makespan).max()), last + DRAIN_S) + BIN_S
    bins = max(int(np.ceil(end / BIN_S)), 1)
    free = priority <= FREE_TIER
    length = np.maximum(np.ceil(makespan / BIN_S).astype(np.int64), 1)  # bins a start occupies

    # the jobs by arrival bin, each bin's in queue order (priority, then submission)
    order = np.lexsort((submit, -priority))
    order = order[np.argsort(np.minimum(submit[order] // BIN_S, bins - 1), kind="stable")]
    arrival_bin = np.minimum(submit[order] // BIN_S, bins - 1).astype(np.int64)
    arrivals = np.searchsorted(arrival_bin, np.arange(bins + 1))
    # each job's rank in queue order, so that the queue and the arrivals merge by one sort
    rank = np.empty(submit.size, dtype=np.int64)
    rank[np.lexsort((submit, -priority))] = np.arange(submit.size)

    cpu_limit_above = capacity[0] * config.cpu_overcommit
    cpu_limit_all = capacity[0] * max(config.free_tier_overcommit, config.cpu_overcommit)
    memory_limit = capacity[1]
    # usage ending at each bin (negative steps), per tier
    ending = {name: np.zeros(bins + 1) for name in ("cpu_above", "memory_above", "cpu_free", "memory_free")}
    use = dict.fromkeys(ending, 0.0)
    running_free = np.empty(0, dtype=np.int64)  # free-tier jobs running, in start order
    running_free_end = np.empty(0, dtype=np.int64)
    queue = np.empty(0, dtype=np.int64)
    restarts = 0.0
    queue_sizes = np.zeros(bins, dtype=np.int64)

    started_at = np.full(submit.size, np.nan)

    def start(jobs: np.ndarray, at: int, tier: str) -> None:
        started_at[jobs] = np.maximum(submit[jobs], at * BIN_S)
        stop = np.minimum(at + length[jobs], bins)
        use["cpu_" + tier] += cpu[jobs].sum()
        use["memory_" + tier] += memory[jobs].sum()
        np.add.at(ending["cpu_" + tier], stop, cpu[jobs])
        np.add.at(ending["memory_" + tier], stop, memory[jobs])

    last_arrival = int(arrival_bin[-1])
    for b in range(bins):
        if b > last_arrival and not queue.size:
            break  # nothing comes any more, nothing waits
        for name in use:
            use[name] -= ending[name][b]
        queue_sizes[b] = queue.size  # the tasks waiting since an earlier pass, tried again at this one's
        candidates = np.concatenate([queue, order[arrivals[b] : arrivals[b + 1]]])
        candidates = candidates[np.argsort(rank[candidates], kind="stable")]
        above = candidates[~free[candidates]]
        seen_cpu, seen_memory = use["cpu_above"], use["memory_above"]
        if not config.free_tier_room:  # the free tier's requests are no room for the tiers above
            seen_cpu, seen_memory = seen_cpu + use["cpu_free"], seen_memory + use["memory_free"]
        fits_above = _fitting(cpu[above], memory[above], cpu_limit_above - seen_cpu, memory_limit - seen_memory)
        start(above[fits_above], b, "above")
        # the free tier's room taken by the tiers above: its tasks started last are evicted
        keep = running_free_end > b
        running_free, running_free_end = running_free[keep], running_free_end[keep]
        over_cpu = use["cpu_above"] + use["cpu_free"] - cpu_limit_all
        over_memory = use["memory_above"] + use["memory_free"] - memory_limit
        evicted = np.empty(0, dtype=np.int64)
        if config.pay_for_room and (over_cpu > 1e-9 or over_memory > 1e-9) and running_free.size:
            last = running_free[::-1]
            enough = (np.cumsum(cpu[last]) >= over_cpu - 1e-9) & (np.cumsum(memory[last]) >= over_memory - 1e-9)
            count = int(np.argmax(enough)) + 1 if enough.any() else last.size
            evicted, ends = last[:count], running_free_end[::-1][:count]
            np.subtract.at(ending["cpu_free"], ends, cpu[evicted])
            np.subtract.at(ending["memory_free"], ends, memory[evicted])
            use["cpu_free"] -= cpu[evicted].sum()
            use["memory_free"] -= memory[evicted].sum()
            running_free, running_free_end = running_free[:-count], running_free_end[:-count]
            restarts += count
        tier = np.concatenate([candidates[free[candidates]], evicted])
        tier = tier[np.argsort(rank[tier], kind="stable")]
        fits = _fitting(
            cpu[tier],
            memory[tier],
            cpu_limit_all - use["cpu_above"] - use["cpu_free"],
            memory_limit - use["memory_above"] - use["memory_free"],
        )
        start(tier[fits], b, "free")
        running_free = np.concatenate([running_free, tier[fits]])
        running_free_end = np.concatenate([running_free_end, np.minimum(b + length[tier[fits]], bins)])
        queue = np.concatenate([above[~fits_above], tier[~fits]])

    drawn_at_placement = _placement_evictions(submit, cpu, memory, priority, ~np.isnan(started_at), config)
    # evictions drawn besides preemption, per task-hour running above the free tier
    ran = makespan if horizon is None else np.clip(np.minimum(submit + makespan, horizon) - submit, 0.0, None)
    normal = ~free & (priority <= NORMAL_TOP)
    production = (priority > NORMAL_TOP) & (priority <= PRODUCTION_TOP)
    drawn = (
        config.eviction_rate_normal * ran[normal].sum()
        + config.eviction_rate_production * ran[production].sum()
        + config.reclaim_rate * ran[free].sum()
    ) / (1000 * HOUR)
    steps = _steps_per_bin(submit, started_at + makespan, end, bins)
    return Contention(
        restarts=restarts + float(drawn) + drawn_at_placement,
        steps=float(steps.sum()),
        queued_task_steps=float((steps * queue_sizes).sum()),
        peak_queue=int(queue_sizes.max()),
        peak_running=_peak_running(started_at, makespan, end),
    )


def _placement_evictions(
    submit: np.ndarray,
    cpu: np.ndarray,
    memory: np.ndarray,
    priority: np.ndarray,
    placed: np.ndarray,
    config: PolicyConfig,
) -> float:
    """The evictions the scheduler draws as it places tasks (:mod:`~batsim_google.scheduling.preemption`),
    expected over the jobs ``placed``, but a warm start's (at time 0, placed without evicting):

    - a task above the free tier asking more than ``preempt_memory`` evicts free-tier tasks at
      ``preempt_share`` of its placements (:func:`.large_task_victims`);
    - a free-tier task above the lowest level evicts the lowest level's tasks beside it at a
      share that depends on whether it came in a burst of its shape (within ``BURST_SPAN``) asking
      more memory than CPU (:func:`.lower_tier_victims`);

    each until its memory request is freed: as many victims as its memory over the mean memory
    of the tasks it may evict."""
    import numpy as np

    from batsim_google.model.priority import unit_priority
    from batsim_google.scheduling.policy import FREE_TIER
    from batsim_google.scheduling.preemption import BURST_SPAN

    if not config.preemption:
        return 0.0
    free = priority <= FREE_TIER
    lowest = priority <= float(unit_priority(0)) + 1e-6
    placed = placed & (submit > 0)

    def victims(asked: np.ndarray, evicted: np.ndarray) -> np.ndarray:
        """Victims of each request of memory ``asked``, among tasks like those ``evicted``."""
        mean = memory[evicted].mean() if evicted.any() else 0.0
        return np.ceil(asked / mean) if mean > 0 else np.zeros(asked.size)

    large = placed & ~free & (memory > config.preempt_memory)
    expected = config.preempt_share * victims(memory[large], free).sum()
    upper = placed & free & ~lowest
    if config.priority_levels and upper.any():
        # bursts: tasks of one shape, each within BURST_SPAN of the one before it
        index = np.flatnonzero(upper)
        index = index[np.lexsort((submit[index], memory[index], cpu[index], priority[index]))]
        shape = np.column_stack([priority[index], cpu[index], memory[index]])
        same = np.all(shape[1:] == shape[:-1], axis=1) & (np.diff(submit[index]) <= BURST_SPAN)
        in_burst = np.zeros(index.size, dtype=bool)
        in_burst[1:] |= same
        in_burst[:-1] |= same
        share = np.where(
            in_burst,
            np.where(memory[index] > cpu[index], config.free_tier_preempt_share, config.free_tier_preempt_share_cpu),
            config.free_tier_preempt_share_alone,
        )
        expected += float((share * victims(memory[index], lowest)).sum())
    return float(expected)


def _fitting(cpu: np.ndarray, memory: np.ndarray, room_cpu: float, room_memory: float) -> np.ndarray:
    """Which of the candidates (in queue order) start: in turn, the longest run of those whose
    requests, added up, fit the room, a task too large for the room left passed over as the
    scheduler passes over a shape that fits nowhere (:data:`FIT_ROUNDS` times)."""
    import numpy as np

    fits = np.zeros(cpu.size, dtype=bool)
    for _ in range(FIT_ROUNDS):
        left = np.flatnonzero(~fits & (cpu <= room_cpu + 1e-9) & (memory <= room_memory + 1e-9))
        if not left.size:
            break
        run = (np.cumsum(cpu[left]) <= room_cpu + 1e-9) & (np.cumsum(memory[left]) <= room_memory + 1e-9)
        taken = left[run]
        fits[taken] = True
        room_cpu -= cpu[taken].sum()
        room_memory -= memory[taken].sum()
    return fits


def _peak_running(started_at: np.ndarray, makespan: np.ndarray, end: float) -> int:
    """The most jobs running at once, each from its (last) start as played for its makespan."""
    import numpy as np

    ran = ~np.isnan(started_at)
    starts = np.sort(started_at[ran])
    if not starts.size:
        return 0
    ends = np.sort(np.minimum(started_at[ran] + makespan[ran], end))
    return int((np.arange(1, starts.size + 1) - np.searchsorted(ends, starts, side="right")).max())


def _steps_per_bin(submit: np.ndarray, ends: np.ndarray, end: float, bins: int) -> np.ndarray:
    """The scheduler's passes in each bin: the distinct submission and end instants there (the
    ends as played, NaN for a job never started)."""
    import numpy as np

    ends = ends[~np.isnan(ends)]
    instants = np.concatenate([np.unique(submit), np.unique(np.minimum(ends, end))])
    return np.bincount(np.minimum(instants // BIN_S, bins - 1).astype(np.int64), minlength=bins).astype(float)
