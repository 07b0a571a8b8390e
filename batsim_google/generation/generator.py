"""Vectorized generator of Google-like tasks (Da Costa et al. 2018, Section 6).

Tasks are drawn in fixed-size batches, each law once per batch with per-task parameter arrays, so
the cost per task is a few numpy operations. All draws come from the one ``numpy.random.Generator``
given, in a fixed order, so a seed fixes the output; since every batch is drawn whole before it is
cut, a shorter run is a prefix of a longer one with the same seed. Widths are drawn (after the
classes, before the makespans, which may depend on them) only when a class has a width law, so
models without one draw exactly as before. A model with job-level arrivals draws jobs, then their
tasks (:mod:`.jobs`), then the same task attributes; models without them draw exactly as before.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from batsim_google.errors import ParameterError
from batsim_google.generation.jobs import draw_jobs, jobs_per_batch
from batsim_google.model.job_sizes import JobSizes
from batsim_google.model.laws import Law, draw_by_class
from batsim_google.model.request_law import RequestLaw
from batsim_google.model.workload_model import KINDS, TaskClass, WorkloadModel
from batsim_google.parameters import MAX_ARRIVAL_SCALE, MAX_TASKS, MAX_TIME_S

BATCH_SIZE = 65_536


@dataclass(frozen=True)
class TaskBatch:
    """Consecutive generated tasks, one array per attribute."""

    id: np.ndarray
    subtime: np.ndarray
    class_index: np.ndarray
    width: np.ndarray
    makespan: np.ndarray
    priority: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray
    #: The job of each task, with job-level arrivals (ids from 0); None without.
    job: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.id)

    def head(self, count: int) -> TaskBatch:
        return TaskBatch(**{name: None if values is None else values[:count] for name, values in vars(self).items()})

    def thinned(self, share: float, rng: np.random.Generator) -> TaskBatch:
        """Each task kept with probability ``share`` (one uniform per task), ids renumbered from
        the first one's: what a sample of a cell's machines sees of its jobs."""
        kept = rng.random(len(self.id)) < share
        values = {name: None if v is None else v[kept] for name, v in vars(self).items()}
        values["id"] = self.id[0] + np.arange(int(kept.sum())) if len(self.id) else self.id
        return TaskBatch(**values)


def _draw_widths(
    classes: tuple[TaskClass, ...], class_index: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, list[Law]]:
    """Each task's width, and the makespan law it draws from: ``laws[law_index[j]]``.

    ``laws`` lists the classes' own laws first, so that without groups ``law_index`` is the class
    index; the groups' laws follow.
    """
    laws = [c.makespan_law() for c in classes]
    if all(c.width is None for c in classes):
        return np.ones(len(class_index), dtype=np.int64), class_index, laws
    width = draw_by_class([c.width_law() for c in classes], class_index, rng).astype(np.int64)
    law_index = class_index.copy()
    for index, task_class in enumerate(classes):
        if task_class.groups is None:
            continue
        members = class_index == index
        position = task_class.makespan_law_index(width[members])
        law_index[members] = np.where(position == 0, index, len(laws) + position - 1)
        laws += task_class.makespan_laws()[1:]
    return width, law_index, laws


def _draw_batch(
    model: WorkloadModel,
    requests: RequestLaw,
    rng: np.random.Generator,
    first_id: int,
    start: float,
    arrival_scale: float,
) -> tuple[TaskBatch, float]:
    """The next batch, its arrival clock starting at ``start``; and the clock at its last arrival.

    With an arrival profile the clock runs in normalized time, where arrivals are stationary, and
    submission times are its image in real time.
    """
    classes = model.classes
    size = BATCH_SIZE
    gaps = model.interarrival_law().sample(size, rng)
    if model.simultaneous:  # (no draw otherwise: models without it draw as they always did)
        gaps[rng.random(size) < model.simultaneous] = 0.0
    clock = start + np.cumsum(gaps * arrival_scale)
    profile = model.arrival_profile
    subtime = clock if profile is None else profile.to_real_time(clock)
    frequency = np.array([c.frequency for c in classes])
    class_index = rng.choice(len(classes), size=size, p=frequency / frequency.sum())  # sums to 1 within 1e-6
    ids = np.arange(first_id, first_id + size)
    return _draw_attributes(model, requests, rng, ids, subtime, class_index), float(clock[-1])


def _draw_job_batch(
    model: WorkloadModel,
    job_sizes: JobSizes,
    requests: RequestLaw,
    rng: np.random.Generator,
    first_id: int,
    first_job: int,
    start: float,
    arrival_scale: float,
) -> tuple[TaskBatch, float]:
    """The tasks of the next batch of jobs (:mod:`.jobs`), the job clock starting at ``start``;
    and the clock at its last job."""
    count = jobs_per_batch(model.jobs, BATCH_SIZE)
    tasks, clock = draw_jobs(
        model.jobs,
        job_sizes,
        model.arrival_profile,
        model.draw_priorities,
        rng,
        count=count,
        first_job=first_job,
        start=start,
        arrival_scale=arrival_scale,
    )
    ids = np.arange(first_id, first_id + len(tasks.job))
    batch = _draw_attributes(model, requests, rng, ids, tasks.subtime, tasks.class_index, tasks.priority, tasks.job)
    return batch, clock


def _no_later_task_before(batch: TaskBatch, duration: float) -> bool:
    """Whether no batch after ``batch`` can have a task submitted by ``duration``: true of task
    batches, whose clock only goes on; with jobs, once a job of ``batch`` starts after it (a job's
    tasks may spread past the next batch's first jobs)."""
    return batch.job is None or bool(batch.subtime[batch.job == batch.job.max()].min() > duration)


def _draw_attributes(
    model: WorkloadModel,
    requests: RequestLaw,
    rng: np.random.Generator,
    ids: np.ndarray,
    subtime: np.ndarray,
    class_index: np.ndarray,
    priority: np.ndarray | None = None,
    job: np.ndarray | None = None,
) -> TaskBatch:
    """The tasks' widths, makespans, priorities (unless given: a job's tasks share one) and requests."""
    classes = model.classes
    size = len(ids)
    width, law_index, laws = _draw_widths(classes, class_index, rng)
    makespan = draw_by_class(laws, law_index, rng)
    if priority is None:
        priority = model.draw_priorities(class_index, rng)
    cpu = np.empty(size)
    memory = np.empty(size)
    if any(c.cpu_range or c.memory_range or c.requests for c in classes):  # requests by class (bands, own)
        for index, task_class in enumerate(classes):
            members = class_index == index
            if members.any():
                law = requests.for_class(task_class, f"classes[{index}]")
                cpu[members], memory[members] = law.sample(int(members.sum()), rng)
    else:  # by kind, as models without bands always drew
        kind_index = np.array([KINDS.index(c.kind) for c in classes])[class_index]
        for k, kind in enumerate(KINDS):
            members = kind_index == k
            if members.any():
                cpu[members], memory[members] = requests.for_kind(kind).sample(int(members.sum()), rng)
    return TaskBatch(ids, subtime, class_index, width, makespan, priority, cpu, memory, job)


def _refuse_too_many(drawn: int, span: float, duration: float) -> None:
    """Refuse at once a ``duration`` whose tasks, at the rate of the first ``drawn`` ones (over
    ``span`` s), would outnumber :data:`~batsim_google.parameters.MAX_TASKS`: it would run for hours."""
    expected = drawn * duration / span if span > 0 else math.inf
    if expected > MAX_TASKS and duration > span:
        raise ParameterError(
            f"duration {duration:g} s would give about {expected:.3g} tasks at this model's rate, more than "
            f"{MAX_TASKS:.0e}: give a shorter duration"
        )


def check_extent(tasks: int | None, duration: float | None, arrival_scale: float) -> None:
    """Refuse a generation bound (``tasks`` or ``duration``, exactly one) or a stretch of the
    arrivals out of range."""
    if (tasks is None) == (duration is None):
        raise ParameterError("give exactly one of tasks (a count) and duration (seconds)")
    if tasks is not None and not 0 <= tasks <= MAX_TASKS:
        raise ParameterError(f"tasks must be >= 0 and <= {MAX_TASKS:.0e} (got {tasks})")
    if duration is not None and not (0 <= duration <= MAX_TIME_S):
        raise ParameterError(f"duration must be a number of seconds >= 0 and <= {MAX_TIME_S:.4g} (got {duration})")
    if not 0 < arrival_scale <= MAX_ARRIVAL_SCALE:
        raise ParameterError(f"arrival_scale must be > 0 and at most {MAX_ARRIVAL_SCALE:g} (got {arrival_scale})")


def generate(
    model: WorkloadModel,
    requests: RequestLaw,
    rng: np.random.Generator,
    *,
    tasks: int | None = None,
    duration: float | None = None,
    arrival_scale: float = 1.0,
    task_share: float = 1.0,
) -> Iterator[TaskBatch]:
    """Yield batches of tasks until ``tasks`` tasks or the first submission after ``duration`` s.

    Exactly one bound must be given. Task ids count from 0; submission times from 0 (the first
    task arrives one inter-arrival time after 0, as in the paper's listing). ``arrival_scale``
    multiplies every inter-arrival time (the same draws, stretched): a model of a whole cell keeps
    its load per machine on a platform that many times smaller.

    With job-level arrivals, batches are whole jobs (the last ones cut by ``tasks``) and the first
    task arrives at the first job's submission, one job gap after 0; tasks are in submission
    order within a batch, and a job whose tasks spread past the next batch's first job (a spread
    longer than the job gap between them) overlaps it by that much; with ``duration`` every task
    submitted by then is yielded, whichever batch draws it.

    ``task_share`` < 1: a sampled cell (that share of a whole cell's machines). A sampled real cell
    sees a part of many jobs (a job's tasks spread over the machines), not all of a few: jobs
    arrive as on the whole cell and each task is kept with probability ``task_share`` (drawn
    after each batch, from ``rng``), so the task rate is the share's and the hours do not swing
    with whole jobs coming or not. ``arrival_scale`` then stays 1 for the same load per machine.
    """
    check_extent(tasks, duration, arrival_scale)
    if not 0 < task_share <= 1:
        raise ParameterError(f"task_share must be in ]0, 1] (got {task_share})")
    for index, task_class in enumerate(model.classes):
        requests.for_class(task_class, f"classes[{index}]")
    job_sizes = None if model.jobs is None else JobSizes.of(model.jobs, model.arrival_profile)
    produced, clock, first_job = 0, 0.0, 0
    while tasks is None or produced < tasks:
        if model.jobs is None:
            full, next_clock = _draw_batch(model, requests, rng, produced, clock, arrival_scale)
        else:
            full, next_clock = _draw_job_batch(
                model, job_sizes, requests, rng, produced, first_job, clock, arrival_scale
            )
            first_job = int(full.job.max()) + 1
        batch = full if task_share == 1 else full.thinned(task_share, rng)
        keep = len(batch) if tasks is None else min(len(batch), tasks - produced)
        if duration is not None and not produced:
            _refuse_too_many(len(batch), float(full.subtime[-1]), duration)
        if duration is not None:
            keep = int(np.searchsorted(batch.subtime, duration, side="right"))
        if keep:
            yield batch.head(keep)
        if tasks is not None and keep < len(batch):
            return
        if duration is not None and full.subtime[-1] > duration and _no_later_task_before(full, duration):
            return
        produced += keep
        clock = next_clock
