"""A warm start: the tasks already running at time 0, drawn from the model's stationary state.

A generated workload starts on an empty cell, and at the ``google`` preset's rate the full cell
reaches its steady state (about 20 tasks/s x 3,590 s of mean lifetime, some 72,000 tasks at once)
only after hours of simulated time: a short run measures the warm-up. The warm start puts the
steady state at time 0.

Derivation. Tasks arrive at rate lambda (the inverse of the mean inter-arrival time, zero gaps
counted, stretched by the arrival scale; with job-level arrivals, the job rate times the mean
tasks per job), a share f_c of them in class c, and run for a makespan
S_c drawn from the class's law, independently of each other (each task brings its own share of
a machine; the scheduler's queueing is what the simulation adds). That is an M/G/infinity
system per class when arrivals are Poisson: in its stationary state the tasks present form a
Poisson number of mean lambda f_c E[S_c] (Little's law gives that mean for any arrival process),
and each has a remaining time drawn independently from the equilibrium (residual-life) law of
S_c, of density (1 - F_c(x)) / E[S_c]. Each warm task is therefore submitted at 0 with its
residual life as makespan, and its priority and requests drawn as for any task of its class.

The residual-life law is inverted numerically: its CDF, the integral of the survival function
divided by the mean, is tabulated on a logarithmic grid wide enough to hold all but 1e-9 of it,
then interpolated. A law without a finite mean (a Pareto of shape <= 1) has no stationary state.
The arrival profile (daily/weekly rate) is taken at its mean rate. Warm tasks are single tasks:
with job-level arrivals they carry no job.

A class of resident tasks (``per_machine``, e.g. the long-lived services a trace window finds
running at its start) adds a Poisson number of mean ``per_machine`` x the resources, drawn the
same way: the warm start scales with ``nb_res`` through them, with the arrival scale through the
others. Warm tasks draw their requests from the request law's tasks running at an instant when it
has them (:meth:`~batsim_google.model.request_law.RequestLaw.running`: at the trace's start in the
shipped law), since the long-lived tasks a cell holds at once request more than the average task
submitted. A model with bands of requests (``cpu_range``, ``memory_range``: a fit's) draws
every class's warm tasks from its submitted tasks' law (its band of it, or its own ``requests``),
as its arrivals do: the warm tasks are then the ones the arrivals keep in the cell (a fit sets
each band's rate x mean lifetime to its share of the start, so that the bands together hold the
running tasks' requests).
"""

from __future__ import annotations

import math

import numpy as np

from batsim_google.errors import ParameterError
from batsim_google.generation.generator import TaskBatch
from batsim_google.model.job_sizes import JobSizes
from batsim_google.model.laws import Law
from batsim_google.model.request_law import RequestLaw
from batsim_google.model.workload_model import WorkloadModel
from batsim_google.parameters import MAX_TIME_S
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES, GOOGLE_2011_START_TASKS

GRID_POINTS = 8192
#: Residual-life mass left beyond the grid's end.
TAIL_MASS = 1e-9


def class_rates(model: WorkloadModel, arrival_scale: float = 1.0) -> np.ndarray:
    """Tasks per second of each class the generator submits on average: the task rate times the
    class's share, or with job-level arrivals the job rate times each job class's share, mean
    tasks per job (over the period, with sizes by bin) and class mix."""
    if model.jobs is None:
        mean_gap = model.interarrival_law().mean() * (1.0 - (model.simultaneous or 0.0))
        share = np.array([c.frequency for c in model.classes])
        return share / share.sum() / (mean_gap * arrival_scale)
    jobs = model.jobs
    mean_gap = jobs.interarrival.mean() * (1.0 - jobs.simultaneous)
    frequency = np.array([c.frequency for c in jobs.classes])
    sizes = JobSizes.of(jobs, model.arrival_profile).mean_tasks()
    per_job = sum(
        f / frequency.sum() * size * np.asarray(c.mix)
        for f, size, c in zip(frequency, sizes, jobs.classes, strict=True)
    )
    return per_job / (mean_gap * arrival_scale)


def residual_cdf_table(law: Law) -> tuple[np.ndarray, np.ndarray]:
    """(x, F_e(x)) on a logarithmic grid: the residual-life CDF of ``law``, from 0 to 1."""
    mean = law.mean()
    if not (math.isfinite(mean) and mean > 0):
        raise ParameterError(f"a makespan law without a finite mean ({law.name}) has no stationary state")
    low, high = law.median() * 1e-9, law.median()
    while high * float(1.0 - law.cdf(np.array([high]))[0]) > TAIL_MASS * mean and high < 1e18:
        high *= 10.0
    x = np.concatenate([[0.0], np.geomspace(low, high * 100.0, GRID_POINTS)])
    survival = 1.0 - law.cdf(x)
    integral = np.concatenate([[0.0], np.cumsum(np.diff(x) * (survival[1:] + survival[:-1]) / 2.0)])
    if not abs(integral[-1] / mean - 1.0) < 1e-3:
        raise ParameterError(
            f"the residual life of the {law.name} makespan law could not be tabulated "
            f"(its survival integrates to {integral[-1]:.6g}, its mean is {mean:.6g})"
        )
    return x, integral / integral[-1]


def residual_lives(law: Law, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` remaining times drawn from the residual-life law of ``law``, cut at the longest
    time a workload may hold (2^42 s): a heavy-tailed law's residual life reaches beyond it (the
    ``google-2011-cell`` residents' does a few times in a whole cell), and both outlast any run."""
    x, cdf = residual_cdf_table(law)
    return np.minimum(np.interp(rng.random(size), cdf, x), MAX_TIME_S)


def warm_counts(model: WorkloadModel, arrival_scale: float = 1.0, nb_res: int | None = None) -> np.ndarray:
    """Mean tasks of each class running at time 0: its rate x mean makespan (Little's law), plus,
    for a resident class, ``per_machine`` x ``nb_res``."""
    laws = [c.makespan_law() for c in model.classes]
    stationary = np.array(
        [rate * law.mean() if rate > 0 else 0.0 for rate, law in zip(class_rates(model, arrival_scale), laws)]
    )
    resident = np.array([(c.per_machine or 0.0) * (nb_res or 0) for c in model.classes])
    return stationary + resident


#: Whole Google cells' starts (132,982 tasks each, as many per machine past 12,583 machines) past
#: which a warm start is refused.
MAX_WARM_CELLS = 100


def _check_plausible(model: WorkloadModel, means: np.ndarray, machines: int) -> None:
    """Refuse a steady state no cell could hold (a lifetime law's mean far beyond what its input
    showed), in one line, rather than draw it until memory runs out."""
    if means.sum() <= MAX_WARM_CELLS * GOOGLE_2011_START_TASKS * max(1.0, machines / GOOGLE_2011_MACHINES):
        return
    index = int(np.argmax(means))
    raise ParameterError(
        f"a warm start of {means.sum():,.0f} tasks on {machines:,} machines ({means.sum() / machines:,.0f} per "
        f"machine; the Google cell ran {GOOGLE_2011_START_TASKS / GOOGLE_2011_MACHINES:.1f}): class "
        f"{model.classes[index].name!r} holds {means[index]:,.0f} by Little's law (rate x its mean lifetime, "
        f"{model.classes[index].makespan_law().mean():.4g} s); fit its lifetimes on an input that shows them "
        "(fit --censored of trace parts), or use --preset google-2011-cell"
    )


def warm_start(
    model: WorkloadModel,
    requests: RequestLaw,
    rng: np.random.Generator,
    arrival_scale: float = 1.0,
    nb_res: int | None = None,
) -> TaskBatch:
    """The tasks running at time 0 in the model's stationary state (ids from 0, class by class);
    resident classes need ``nb_res``."""
    if any(c.width is not None for c in model.classes):
        raise ParameterError("a warm start needs a model without widths (every task on one machine)")
    if nb_res is None and any(c.per_machine for c in model.classes):
        raise ParameterError("a warm start with resident tasks (per_machine) needs the number of resources")
    laws = [c.makespan_law() for c in model.classes]
    means = warm_counts(model, arrival_scale, nb_res)
    _check_plausible(model, means, nb_res or GOOGLE_2011_MACHINES)
    counts = rng.poisson(means)
    class_index = np.repeat(np.arange(len(model.classes)), counts)
    makespan = np.concatenate([residual_lives(law, int(n), rng) for law, n in zip(laws, counts)])
    priority = model.draw_priorities(class_index, rng)
    cpu, memory = np.empty(len(class_index)), np.empty(len(class_index))
    banded = any(c.cpu_range or c.memory_range or c.requests for c in model.classes)
    for index, task_class in enumerate(model.classes):
        members = class_index == index
        law = requests.for_class(task_class, f"classes[{index}]") if banded else requests.running(task_class.kind)
        cpu[members], memory[members] = law.sample(int(counts[index]), rng)
    size = len(class_index)
    return TaskBatch(
        np.arange(size), np.zeros(size), class_index, np.ones(size, dtype=np.int64), makespan, priority, cpu, memory
    )
