"""From a task table to a workload model: classes, their laws, priorities and the arrivals.

Classes are either the model paper's a-priori split (Finish-ended *tasks*, Kill-ended *services*)
or k-means clusters (:mod:`.kmeans`). For every class, every law of :mod:`.laws` is fitted to
the makespans and the best by the criterion (:mod:`.select`) goes into the model: a log-normal as
the paper's ``mass`` and ``disparity``, any other law as the class's ``makespan``. Priorities get
the truncated-exponential rate by maximum likelihood; the class's empirical mass (mean makespan)
and disparity (mean / median) are reported as in the paper. Arrivals: the arrival-rate profile
is fitted first when asked for, the inter-arrival laws then on the gaps in normalized time. With
a ``job_id`` column, job-level arrivals too (:mod:`.job_arrivals`, an extension of the paper).

Parallel jobs (a ``width`` column, e.g. from an SWF log) get, per class, the empirical law of their
widths (the exact histogram) and, when ``groups`` is given, makespan laws per group of widths
(:mod:`batsim_google.model.widths`): a group of at least :data:`MIN_GROUP_TASKS` tasks gets the best law
fitted to its own makespans; a smaller group gets none, and its jobs draw from the class's law,
fitted on all the class's tasks (counted in the fit, never dropped).

A table with ``censored`` and ``resident`` rows (the tasks an input window cuts, :mod:`.censored`)
gets censored fits: a class with censored rows has its lifetimes fitted by censored maximum
likelihood (log-normal, gamma, exponential, Lomax; best by AIC, since the Kaplan-Meier KS only sees
the window), and the cell is taken as stationary: the tasks running at the input's start are what
the classes' arrivals keep in it. So the classes that hold the cell have their mean lifetimes set by
the start (Little's law: rate x mean lifetime = the tasks they hold; :func:`_holding_the_start`),
either way, and no task of the start is left to a class that would not be submitted again (it
would leave the cell and never come back: a generated cell would empty). The tasks running at an
instant request more than those submitted (the long-lived ones are the larger), so the class
holding the cell (the services) is split into bands of CPU and memory request (:func:`_in_request_bands`), each
with its rate and lifetime and holding its band's share of the start: the warm start's CPU is
then the one the arrivals keep.
An input that does not open on the trace's start (a later part: the tasks running at its start
show no SUBMIT, and those that show no event at all are invisible) cannot tell how long its
longest-lived tasks live, the tail beyond its span: there the trace's own start,
:data:`~batsim_google.platform.google_2011.GOOGLE_2011_START_TASKS` per 12,583 machines, bounds
the stationary tasks the same way (the cell's load is steady: its requested CPU stays within 1.11 to
1.16 of its capacity over the first 3.5 hours).
Arrivals and jobs are fitted without the residents, which were not submitted in the input.

Tasks submitted in the input without a lifetime a law can use (a ``no_lifetime`` reason: never
scheduled, ended by EVICT, FAIL or LOST...) are submissions all the same: each is given a class,
drawn by the shares of the classes among its job's other tasks (among all tasks when its job has
none), and counts in its class's frequency and CPU share, the arrival rate and the jobs (their
sizes and class mixes), but in no lifetime law nor priority rate. The generator then gives it the
lifetime of the class drawn, as it would any task of that class.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from batsim_google.errors import BatsimGoogleError, InputFileError, ParameterError
from batsim_google.fitting.censored import CensoredFit, CensoredSample, fit_all_censored, fit_lognormal_of_mean
from batsim_google.fitting.job_arrivals import JobArrivalFit, fit_job_arrivals
from batsim_google.fitting.kmeans import Clustering, KScore, cluster, elbow
from batsim_google.fitting.priority_groups import (
    PRIORITY_SPLIT,
    Levels,
    by_priority_group,
    in_levels,
    priority_levels,
)
from batsim_google.fitting.priority_rate import PriorityFit, fit_priority_rate
from batsim_google.fitting.profile import ProfileFit, fit_arrival_profile, profile_period
from batsim_google.fitting.select import LawFit, best_fit, fit_all, scored
from batsim_google.fitting.table import NO_LIFETIME, TaskTable, task_table
from batsim_google.fitting.vocabulary import CLASSIFICATIONS, Classification, Criterion, ProfileChoice
from batsim_google.model.laws import Empirical, LogNormal, Lomax
from batsim_google.model.vocabulary import Grouping
from batsim_google.model.widths import group_bounds, group_names
from batsim_google.model.workload_model import (
    INTERARRIVAL_SHAPE,
    ClassRequests,
    Kind,
    TaskClass,
    WorkloadModel,
    in_ranges,
)
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES, GOOGLE_2011_START_TASKS
from batsim_google.trace.row_accounting import RowAccount

#: Fewest tasks a class needs to be fitted; smaller classes are skipped (counted) or, strict, refused.
MIN_CLASS_TASKS = 20
SMALL_CLASS = f"in a class of fewer than {MIN_CLASS_TASKS} tasks"
CONSTANT_CLASS = "in a class whose makespans are all equal (no continuous law)"
#: Fewest tasks a group of widths needs for a makespan law of its own.
MIN_GROUP_TASKS = MIN_CLASS_TASKS
#: Fewest jobs job-level arrivals are fitted from (two positive job gaps at least).
MIN_JOBS = 3


@dataclass(frozen=True)
class GroupFit:
    """The makespan laws of one group of widths (named as in :mod:`batsim_google.model.widths`)."""

    name: str
    tasks: int
    fits: list[LawFit]
    best: LawFit


@dataclass(frozen=True)
class WidthFit:
    """A class's width law and, with a grouping, the groups that have a makespan law of their own,
    how many groups (and tasks) are too small for one, and the groups whose makespans are all
    equal (no continuous law): those draw from the class's law."""

    law: Empirical
    grouping: Grouping | None
    groups: list[GroupFit]
    small_groups: int
    small_group_tasks: int
    constant_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassFit:
    name: str
    kind: Kind
    tasks: int
    frequency: float
    mass: float
    disparity: float
    priority: PriorityFit
    fits: list[LawFit]
    best: LawFit
    widths: WidthFit | None = None
    #: Rows whose lifetime is a lower bound (censored fits only).
    censored: int = 0
    #: The class's share of the CPU the input's rows request (when the input gives requests).
    cpu_share: float | None = None
    #: Tasks submitted in the input without a lifetime, drawn into this class (counted in its
    #: frequency, the rates, the jobs and its CPU share; not in ``tasks`` nor its laws).
    without_lifetime: int = 0
    #: The band of requests (``TaskClass.cpu_range``, ``memory_range``) the class's tasks request within.
    cpu_range: tuple[float, float] | None = None
    memory_range: tuple[float, float] | None = None
    #: The tasks of the input's start the class holds in the stationary cell (rate x mean
    #: lifetime, Little's law), when the start set its mean lifetime.
    population: float | None = None
    #: The priority group the class holds (Google priorities, inclusive), when split by group.
    levels: Levels | None = None
    #: The law of its Google priorities, when the input gives them (else the truncated exponential).
    priorities: Empirical | None = None
    #: A band's own requests: those of the start's tasks in its band and group (with a start).
    requests: ClassRequests | None = None

    def holds(self, cpu: np.ndarray, memory: np.ndarray, priority: np.ndarray | None) -> np.ndarray:
        """Which tasks of the start (their requests, Google priorities) lie in the class's band and group."""
        kept = in_ranges(cpu, memory, self.cpu_range, self.memory_range)
        return kept if priority is None else kept & in_levels(priority, self.levels)

    def task_class(self) -> TaskClass:
        law = self.best.law
        rate = None if self.priorities is not None else self.priority.rate
        widths = {}
        if self.widths is not None:
            widths["width"] = self.widths.law
            if self.widths.groups:
                widths["groups"] = self.widths.grouping
                widths["makespan_by_group"] = {group.name: group.best.law for group in self.widths.groups}
        if isinstance(law, LogNormal):  # the paper's own parametrization
            mass = law.mean()
            return TaskClass(
                self.name,
                self.kind,
                self.frequency,
                mass,
                mass / law.median(),
                rate,
                cpu_range=self.cpu_range,
                memory_range=self.memory_range,
                priorities=self.priorities,
                requests=self.requests,
                **widths,
            )
        return TaskClass(
            self.name,
            self.kind,
            self.frequency,
            None,
            None,
            rate,
            makespan=law,
            cpu_range=self.cpu_range,
            memory_range=self.memory_range,
            priorities=self.priorities,
            requests=self.requests,
            **widths,
        )


@dataclass(frozen=True)
class ArrivalFit:
    """Inter-arrival fits (in normalized time when there is a profile), the profile, and the
    positive gaps fitted (``sample``).

    Simultaneous submissions (zero gaps) have no place in a continuous law: the laws are fitted to
    the positive gaps, and the model draws zero gaps at their observed share (``simultaneous``), so
    that both the shape of the gaps and the arrival rate are the observed ones.
    """

    sample: np.ndarray
    gaps: int
    zero_gaps: int
    mean_gap: float
    fits: list[LawFit]
    best: LawFit
    profile: ProfileFit | None

    @property
    def simultaneous(self) -> float:
        """Share of the gaps that are zero."""
        return self.zero_gaps / self.gaps


@dataclass(frozen=True)
class ModelFit:
    model: WorkloadModel
    table: TaskTable
    classes: list[ClassFit]
    arrivals: ArrivalFit
    criterion: Criterion
    classification: Classification
    elbow: list[KScore] | None = None
    clustering: Clustering | None = None
    jobs: JobArrivalFit | None = None
    #: The input's start: its residents and the CPU and memory they request (censored fits).
    start: StartLoad | None = None
    #: The tasks submitted without a lifetime, by reason (drawn into classes: ``ClassFit.without_lifetime``).
    without_lifetime: dict[str, int] = field(default_factory=dict)
    #: Their share of the CPU the input's rows request (when the input gives requests).
    without_lifetime_cpu: float | None = None


@dataclass(frozen=True)
class StartLoad:
    """Tasks running at a time and the CPU and memory they request."""

    tasks: int
    cpu: float
    memory: float

    def describe(self) -> str:
        return f"{self.tasks:,} tasks, {self.cpu:,.2f} CPU, {self.memory:,.2f} memory"


#: How far a selectable inter-arrival law's mean may be from the mean gap (relative).
ARRIVAL_MEAN_TOLERANCE = 0.1


def _rate_keeping(fits: list[LawFit], sample: np.ndarray, criterion) -> LawFit:
    """The best inter-arrival fit among those whose mean is the sample's mean gap (within
    :data:`ARRIVAL_MEAN_TOLERANCE`), so that the generated arrival rate is the observed one.

    A law chosen on shape alone can miss the mean by orders of magnitude (the trace's gaps are
    mostly microseconds, with a heavy tail that carries the mean). When no fit keeps the mean, the
    model paper's law is used: the Lomax of shape 4 whose mean is the mean gap (its dynamism).
    """
    mean_gap = float(sample.mean())
    keeping = [
        fit for fit in fits if fit.law is not None and abs(fit.law.mean() / mean_gap - 1.0) <= ARRIVAL_MEAN_TOLERANCE
    ]
    if keeping:
        return best_fit(keeping, criterion)
    paper = Lomax(INTERARRIVAL_SHAPE, (INTERARRIVAL_SHAPE - 1.0) * mean_gap)
    note = f"no fitted law kept the mean positive gap ({mean_gap:.4g} s) within {ARRIVAL_MEAN_TOLERANCE:.0%}: the paper's Lomax of that mean"
    return scored("lomax-dynamism", paper, sample, note=note)


def _fit_positive_gaps(positive: np.ndarray, criterion, methods) -> tuple[list[LawFit], LawFit]:
    fits = fit_all(positive, methods)
    return fits, _rate_keeping(fits, positive, criterion)


def _fit_arrivals(subtimes: np.ndarray, profile: ProfileChoice, criterion, methods) -> ArrivalFit:
    subtimes = np.sort(subtimes)
    period = profile_period(profile, float(subtimes[-1] - subtimes[0]))
    profile_fit = None if period is None else fit_arrival_profile(subtimes, period)
    clock = subtimes if profile_fit is None else profile_fit.profile.to_normalized_time(subtimes)
    gaps = np.diff(clock)
    positive = gaps[gaps > 0]
    if len(positive) < 2:
        raise InputFileError("fewer than 2 positive gaps between submissions: no inter-arrival law to fit")
    fits, best = _fit_positive_gaps(positive, criterion, methods)
    return ArrivalFit(positive, len(gaps), int(len(gaps) - len(positive)), float(gaps.mean()), fits, best, profile_fit)


def _fit_widths(rows: pl.DataFrame, grouping: Grouping | None, criterion, methods) -> WidthFit:
    counts = rows.group_by("width").len().sort("width")
    law = Empirical(tuple(counts["width"].cast(pl.Float64).to_list()), tuple((counts["len"] / rows.height).to_list()))
    if grouping is None:
        return WidthFit(law, None, [], 0, 0)
    widths = rows["width"].to_numpy()
    grouped = rows.with_columns(
        pl.Series("group", group_names(widths, grouping)), pl.Series("first", group_bounds(widths, grouping)[0])
    )
    groups, small, small_tasks, constant = [], 0, 0, []
    for name, _, members in grouped.group_by("group", "first").agg("makespan").sort("first").iter_rows():
        if len(members) < MIN_GROUP_TASKS:
            small, small_tasks = small + 1, small_tasks + len(members)
            continue
        if min(members) == max(members):
            constant.append(name)
            continue
        fits = fit_all(np.asarray(members), methods)
        groups.append(GroupFit(name, len(members), fits, best_fit(fits, criterion)))
    return WidthFit(law, grouping, groups, small, small_tasks, tuple(constant))


def _unstationary(law) -> str:
    """Why a lifetime law cannot give a stationary cell ('' when it can): no finite mean, or a tail
    too heavy for the warm start to tabulate its residual life."""
    from batsim_google.generation.warm_start import residual_cdf_table

    if law is None:
        return ""
    try:
        residual_cdf_table(law)
    except (ValueError, ArithmeticError) as error:  # ParameterError included
        return f"not selectable: {error}"
    return ""


def _censored_fits(sample: CensoredSample) -> tuple[list[LawFit], LawFit]:
    """Every censored family as a :class:`LawFit` (method ``FAMILY-censored``), the best by AIC
    among those with a stationary state the warm start can draw (a finite mean, a residual life it
    can tabulate)."""
    fits, selectable = [], []
    for fit in fit_all_censored(sample):
        note = fit.note or _unstationary(fit.law)
        fits.append(LawFit(f"{fit.family}-censored", fit.law, fit.ks, fit.loglik, fit.aic, 0.0, note))
        if fit.law is not None and not note:
            selectable.append(fits[-1])
    if not selectable:
        raise InputFileError("no censored lifetime law with a finite mean fits this class")
    return fits, min(selectable, key=lambda fit: fit.aic)


def _fit_censored_class(name: str, kind: Kind, rows: pl.DataFrame, frequency: float) -> ClassFit:
    """A class some of whose lifetimes the input cut: censored maximum likelihood."""
    sample = CensoredSample.of(
        rows["makespan"].to_numpy(),
        ~rows["censored"].to_numpy(),
        rows["resident"].to_numpy() if "resident" in rows.columns else None,
    )
    fits, best = _censored_fits(sample)
    mean = best.law.mean()
    return ClassFit(
        name,
        kind,
        rows.height,
        frequency,
        mean,
        mean / best.law.median(),
        fit_priority_rate(rows["priority"].to_numpy()),
        fits,
        best,
        censored=int((~sample.ended).sum()),
    )


def _fit_class(name: str, kind: Kind, rows: pl.DataFrame, frequency: float, criterion, methods, grouping) -> ClassFit:
    if "censored" in rows.columns and rows["censored"].any() and "width" not in rows.columns:
        return _fit_censored_class(name, kind, rows, frequency)
    makespans = rows["makespan"].to_numpy()
    fits = fit_all(makespans, methods)
    mass = float(makespans.mean())
    return ClassFit(
        name,
        kind,
        rows.height,
        frequency,
        mass,
        mass / float(np.median(makespans)),
        fit_priority_rate(rows["priority"].to_numpy()),
        fits,
        best_fit(fits, criterion),
        _fit_widths(rows, grouping, criterion, methods) if "width" in rows.columns else None,
    )


def _drawn_into_classes(
    lifeless: pl.DataFrame, labelled: pl.DataFrame, kinds: dict[str, Kind], rng: np.random.Generator
) -> pl.DataFrame:
    """``lifeless`` (tasks without a lifetime) with a ``class`` and its ``kind``, drawn by the
    shares of the classes among the other tasks of the task's job (``labelled``), or among all of
    them when its job has none: such a task is generated like its job's other tasks."""
    names = list(kinds)
    counts = np.zeros((lifeless.height, len(names)))
    if "job_id" in labelled.columns and "job_id" in lifeless.columns:
        per_job = labelled.group_by("job_id", "class").len().pivot(on="class", index="job_id", values="len")
        per_job = per_job.with_columns(pl.lit(0).alias(n) for n in names if n not in per_job.columns)
        joined = lifeless.select("job_id").with_row_index().join(per_job, on="job_id", how="left").sort("index")
        counts = joined.select(names).fill_null(0).to_numpy().astype(float)
    overall = labelled.group_by("class").len()
    shares = dict(zip(overall["class"].to_list(), overall["len"].to_list()))
    counts[counts.sum(axis=1) == 0] = [shares.get(n, 0) for n in names]
    bounds = np.cumsum(counts / counts.sum(axis=1, keepdims=True), axis=1)
    drawn = np.minimum((rng.random(lifeless.height)[:, None] >= bounds).sum(axis=1), len(names) - 1)
    classes = np.array(names)[drawn]
    return lifeless.with_columns(
        pl.Series("class", classes), pl.Series("kind", [kinds[n] for n in classes], dtype=pl.String)
    )


def holding_populations(
    model: WorkloadModel, populations: dict[str, float], rows: pl.DataFrame
) -> tuple[WorkloadModel, dict[str, CensoredFit]]:
    """``model`` whose classes named in ``populations`` have the log-normal lifetime whose mean
    makes their stationary tasks (rate x mean, Little's law) that many, sigma by censored
    likelihood on their ``rows`` (a ``class`` column names them); and those fits."""
    from batsim_google.generation.warm_start import class_rates

    rates = class_rates(model)
    classes, fits = list(model.classes), {}
    for index, task_class in enumerate(model.classes):
        if task_class.name not in populations:
            continue
        own = rows.filter(pl.col("class") == task_class.name)
        censored = own["censored"].to_numpy() if "censored" in own.columns else np.zeros(own.height, dtype=bool)
        sample = CensoredSample.of(own["makespan"].to_numpy(), ~censored)
        fit = fit_lognormal_of_mean(sample, populations[task_class.name] / rates[index])
        fits[task_class.name] = fit
        mean = fit.law.mean()
        classes[index] = replace(task_class, mass=mean, disparity=mean / fit.law.median(), makespan=None)
    return replace(model, classes=tuple(classes)), fits


def _start_requests(residents: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The start's CPU and memory requests, and its Google priorities when the input gives them."""
    cpu = residents["cpu_request"].fill_null(0.0).to_numpy()
    memory = residents["memory_request"].fill_null(0.0).to_numpy()
    priority = residents["google_priority"].to_numpy() if "google_priority" in residents.columns else None
    return cpu, memory, priority


def _start_populations(
    class_fits: list[ClassFit], model: WorkloadModel, residents: pl.DataFrame | None, start_tasks: float
) -> dict[str, float]:
    """The tasks of the start each class holding it keeps: the classes in CPU bands share what the
    others' stationary tasks leave of the start by their bands' shares of the residents; without
    bands, the longest-held class keeps it all."""
    from batsim_google.generation.warm_start import warm_counts

    counts = warm_counts(model)
    banded = [i for i, c in enumerate(class_fits) if c.cpu_range is not None]
    if not banded:
        index = int(np.argmax(counts))
        others = float(np.delete(counts, index).sum())
        return {class_fits[index].name: start_tasks - others} if start_tasks > others else {}
    others = float(np.delete(counts, banded).sum())
    cpu, memory, priority = _start_requests(residents)
    shares = {class_fits[i].name: float(np.mean(class_fits[i].holds(cpu, memory, priority))) for i in banded}
    return {name: share * max(start_tasks - others, 0.0) for name, share in shares.items() if share > 0}


def _holding_the_start(
    class_fits: list[ClassFit],
    model: WorkloadModel,
    labelled: pl.DataFrame,
    residents: pl.DataFrame | None,
    start_tasks: int,
    whose: str = "the input's start",
) -> tuple[list[ClassFit], WorkloadModel]:
    """The fits and model whose stationary tasks are the start's: the mean lifetimes of the
    classes that hold the cell set by Little's law (rate x mean lifetime = the tasks they hold at
    the start), so that the cell a generated workload starts from is the one its arrivals keep.

    The start is a measurement of rate x mean lifetime; a window of a few hours fixes the mean of
    the longest-lived tasks least (most of it lies in the tail beyond the window), so it is that
    mean which gives way, either way: a log-normal of the mean that makes the stationary tasks the
    start's, sigma by censored likelihood (:func:`holding_populations`). With CPU bands
    (:func:`_in_request_bands`), each band holds its share of the start, so that the cell's requested
    CPU is the start's too."""
    from batsim_google.generation.warm_start import warm_counts

    before = warm_counts(model).sum()
    populations = _start_populations(class_fits, model, residents, start_tasks)
    model, kept = holding_populations(model, populations, labelled)
    note = (
        f"mean set by the tasks at {whose}, {start_tasks:,} (Little's law; at the free fits' means the "
        f"classes' stationary tasks were {before:,.0f})"
    )
    fits = []
    for fit in class_fits:
        if fit.name in kept:
            law = kept[fit.name]
            law_fit = LawFit("lognormal-censored-of-mean", law.law, law.ks, law.loglik, law.aic, 0.0, note)
            mean = law.law.mean()
            fit = replace(
                fit,
                fits=[*fit.fits, law_fit],
                best=law_fit,
                mass=mean,
                disparity=mean / law.law.median(),
                population=populations[fit.name],
            )
        fits.append(fit)
    return fits, model


#: How many bands of CPU requests the class holding the cell is split into (at the quantiles of
#: the start's requests), and of memory within each (at the quantiles of the band's start), fewer
#: when a band would have too few tasks to fit.
CPU_BANDS = 6
MEMORY_BANDS = 3
#: The top band's upper bound: past the largest request (1, the largest machine).
TOP_OF_THE_BANDS = 1.000001

Range = tuple[float, float]


def _bounds(start: np.ndarray, own: np.ndarray, count: int) -> list[float]:
    """Bounds of ``count`` bands at the quantiles of ``start``, adjacent bands merged until each
    holds :data:`MIN_CLASS_TASKS` of ``own`` (one band, [0, top), when they cannot)."""
    inner = np.unique(np.quantile(start, np.arange(1, count) / count)) if len(start) else np.array([])
    bounds = [0.0, *(float(b) for b in inner if b > 0.0), TOP_OF_THE_BANDS]
    while len(bounds) > 2:
        counts = np.histogram(own, bounds)[0]
        if counts.min() >= MIN_CLASS_TASKS:
            break
        low = int(np.argmin(counts))
        del bounds[low if low == len(counts) - 1 else low + 1]  # merge the band with the next one up
    return bounds


def _in_request_bands(
    labelled: pl.DataFrame, residents: pl.DataFrame, name: str, ended_only: bool = False
) -> tuple[pl.DataFrame, dict[str, tuple[Range, Range]]]:
    """``labelled`` with the rows of class ``name`` split into bands of requests (``name-1``, ...):
    CPU bands at the quantiles of the start's CPU requests, memory bands within each at the
    quantiles of its start's memory; and each band's (CPU range, memory range).

    The tasks running at an instant request more than those submitted (0.057 CPU on average at the
    trace's start, 0.024 for the tasks Kill ends): the long-lived ones, which the cell holds, are
    the larger. One class cannot keep both the start's tasks and its requests; bands can, each with
    its own rate and lifetime. ``ended_only``: a band needs :data:`MIN_CLASS_TASKS` tasks seen to
    end (a priority group's services are fewer, and a band of lifetimes all cut by the window has
    no law)."""
    requests = residents.select(pl.col("cpu_request", "memory_request").fill_null(0.0))
    start_cpu, start_memory = requests["cpu_request"].to_numpy(), requests["memory_request"].to_numpy()
    rows = labelled["class"].to_numpy() == name
    own = labelled.select(pl.col("cpu_request", "memory_request").fill_null(0.0).cast(pl.Float64))
    own_cpu, own_memory = own["cpu_request"].to_numpy()[rows], own["memory_request"].to_numpy()[rows]
    bands: dict[str, tuple[Range, Range]] = {}
    band = np.zeros(len(own_cpu), dtype=np.int64)
    ended = np.ones(own_cpu.shape, dtype=bool)
    if ended_only and "censored" in labelled.columns:
        ended = ~labelled["censored"].fill_null(False).to_numpy()[rows]
    cpu_bounds = _bounds(start_cpu, own_cpu[ended], CPU_BANDS)
    for cpu_range in zip(cpu_bounds, cpu_bounds[1:]):
        in_cpu = (own_cpu >= cpu_range[0]) & (own_cpu < cpu_range[1])
        started = (start_cpu >= cpu_range[0]) & (start_cpu < cpu_range[1])
        memory_bounds = _bounds(start_memory[started], own_memory[in_cpu & ended], MEMORY_BANDS)
        for memory_range in zip(memory_bounds, memory_bounds[1:]):
            band[in_cpu & (own_memory >= memory_range[0]) & (own_memory < memory_range[1])] = len(bands)
            bands[f"{name}-{len(bands) + 1}"] = (cpu_range, memory_range)
    if len(bands) == 1:
        return labelled, {}
    column = labelled["class"].to_numpy().astype(object)
    column[rows] = np.array(list(bands))[band]
    return labelled.with_columns(pl.Series("class", column.astype(str))), bands


def _with_cpu_shares(
    class_fits: list[ClassFit], labelled: pl.DataFrame, residents: pl.DataFrame | None, everything: pl.DataFrame
) -> list[ClassFit]:
    """Each class's share of the CPU the input's valid rows request (the rest: the rows no class
    kept, e.g. classes too small to fit); the start's tasks count in the classes that hold them:
    a CPU band's residents in its band, else all in the classes holding the start, by their shares
    of it."""
    total = float(everything["cpu_request"].sum())
    if not total > 0:
        return class_fits
    cpu = dict(labelled.group_by("class").agg(pl.col("cpu_request").sum()).iter_rows())
    holders = [c for c in class_fits if c.population]
    if residents is not None and holders:
        requested, memory, priority = _start_requests(residents)
        held = sum(c.population for c in holders)
        for c in holders:
            if c.cpu_range is None:
                share = float(requested.sum()) * c.population / held
            else:
                share = float(requested[c.holds(requested, memory, priority)].sum())
            cpu[c.name] = float(cpu.get(c.name) or 0.0) + share
    return [replace(c, cpu_share=float(cpu.get(c.name) or 0.0) / total) for c in class_fits]


def _with_start_requests(class_fits: list[ClassFit], residents: pl.DataFrame) -> list[ClassFit]:
    """Each band holding tasks of the start gets their requests as its own (:class:`ClassRequests`),
    for its warm tasks and its arrivals alike.

    Within a band of CPU requests the tasks the cell holds are still not its submissions (the
    parts' production services request less memory than the production tasks running at their
    start in the same CPU band), so bands drawing from the submitted tasks' law held 0.85 of the
    start's memory. Drawn from the start's own requests, a band's stationary tasks are the start's
    in requests too, and its arrivals request what the tasks it keeps request: the cell's memory
    holds over time as its CPU does."""
    cpu, memory, priority = _start_requests(residents)
    fits = []
    for c in class_fits:
        held = c.holds(cpu, memory, priority) if c.cpu_range is not None else np.zeros(len(cpu), dtype=bool)
        if held.any():
            pairs, counts = np.unique(np.stack([cpu[held], memory[held]]), axis=1, return_counts=True)
            c = replace(c, requests=ClassRequests(tuple(pairs[0]), tuple(pairs[1]), tuple(counts.astype(float))))
        fits.append(c)
    return fits


def _groups_can_hold(labelled: pl.DataFrame, residents: pl.DataFrame) -> bool:
    """Whether the services of every priority group the start holds have lifetimes enough to fit
    (:data:`MIN_CLASS_TASKS` seen to end): else a group's start would be held by no class, and the
    classes are not split by group."""
    services = labelled.filter(pl.col("kind") == "service")
    if "censored" in services.columns:
        services = services.filter(~pl.col("censored").fill_null(False))
    ended, started = services["google_priority"].to_numpy(), residents["google_priority"].to_numpy()
    return all(
        in_levels(ended, bounds).sum() >= MIN_CLASS_TASKS
        for bounds in PRIORITY_SPLIT.values()
        if in_levels(started, bounds).any()
    )


def _with_priority_levels(
    class_fits: list[ClassFit], labelled: pl.DataFrame, residents: pl.DataFrame | None
) -> list[ClassFit]:
    """Each class of a priority group with the law of its tasks' Google priorities: those it
    submits with a lifetime, and the tasks of the start it holds (a band's, of its group), which
    were submitted before."""
    start = None if residents is None or "cpu_request" not in residents.columns else _start_requests(residents)
    fitted = []
    for fit in class_fits:
        if fit.levels is None:
            fitted.append(fit)
            continue
        priorities = labelled.filter(pl.col("class") == fit.name)["google_priority"].to_numpy()
        if start is not None and fit.cpu_range is not None:
            priorities = np.concatenate([priorities, start[2][fit.holds(*start)]])
        fitted.append(replace(fit, priorities=priority_levels(priorities)))
    return fitted


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("s") else "s")


def _naming_the_source(fit: Callable[..., ModelFit]) -> Callable[..., ModelFit]:
    """A fit's refusal (a sample too small for a law, too few tasks in a class...) names the fitted
    source, unless it names a file already (a bad row of a trace in strict mode)."""

    @functools.wraps(fit)
    def fitting(frame: pl.DataFrame, *settings: Any, **options: Any) -> ModelFit:
        source = options.get("source", "task table")
        try:
            return fit(frame, *settings, **options)
        except ValueError as error:
            if str(error).startswith(source):
                raise
            kind = type(error) if isinstance(error, BatsimGoogleError) else InputFileError
            raise kind(f"{source}: {error}") from error

    return fitting


@dataclass(frozen=True)
class FitSettings:
    """How a workload model is fitted to a task table.

    ``classes="kmeans"`` clusters the tasks into ``k`` classes, or, without ``k``, into the k of
    2..10 with the best mean silhouette; ``seed`` seeds k-means and the silhouette sample.
    ``profile``: the arrival profile; ``criterion`` ranks the ``methods`` (laws and estimators;
    None: all). ``strict`` refuses a bad row or a class too small instead of counting it.
    ``groups`` fits makespan laws per group of widths (needs a ``width`` column). ``jobs`` fits
    job-level arrivals when the table has a ``job_id`` column and at least 3 jobs. ``machines``:
    the input's cell, over which residents are counted per machine.
    """

    classes: Classification = "apriori"
    k: int | None = None
    profile: ProfileChoice = "auto"
    criterion: Criterion = "ks"
    methods: tuple[str, ...] | None = None
    seed: int = 0
    strict: bool = False
    groups: Grouping | None = None
    jobs: bool = True
    machines: int = GOOGLE_2011_MACHINES

    def __post_init__(self) -> None:
        if self.classes not in CLASSIFICATIONS:
            raise ParameterError(f"classes must be one of {', '.join(CLASSIFICATIONS)} (got {self.classes!r})")
        if self.methods is not None:
            object.__setattr__(self, "methods", tuple(self.methods))


@_naming_the_source
def fit_model(
    frame: pl.DataFrame,
    settings: FitSettings = FitSettings(),
    *,
    name: str = "fitted",
    source: str = "task table",
) -> ModelFit:
    """Fit a workload model named ``name`` to a task table (columns: see :mod:`.table`;
    ``source`` names it in errors) as ``settings`` say."""
    classes, k, profile, criterion = settings.classes, settings.k, settings.profile, settings.criterion
    seed, strict, groups = settings.seed, settings.strict, settings.groups
    jobs, machines = settings.jobs, settings.machines
    methods = None if settings.methods is None else list(settings.methods)
    rows = RowAccount(strict=strict)
    table = task_table(frame, rows, source)
    if groups is not None and "width" not in table.frame.columns:
        raise InputFileError(f"{source}: makespan laws per group of widths ({groups}) need a width column")
    if table.frame.height == 0:
        raise InputFileError(f"{source}: no valid task: {rows.summary()}")
    everything, residents, lifeless = table.frame, None, None
    if "resident" in table.frame.columns:
        residents = table.frame.filter(pl.col("resident"))
        table = TaskTable(table.frame.filter(~pl.col("resident")), rows)
    if NO_LIFETIME in table.frame.columns:
        lifeless = table.frame.filter(pl.col(NO_LIFETIME).is_not_null())
        table = TaskTable(table.frame.filter(pl.col(NO_LIFETIME).is_null()), rows)
    scores = clustering = None
    if classes == "kmeans":
        scores = elbow(table, seed)
        chosen = k if k is not None else max(scores, key=lambda score: score.silhouette).k
        clustering = cluster(table, chosen, seed)
        services = clustering.clusters["service_share"].to_numpy()
        names = [f"cluster{i}" for i in range(chosen)]
        kinds = ["service" if share > 0.5 else "task" for share in services]
        labelled = table.frame.with_columns(pl.Series("class", np.array(names)[clustering.labels]))
    else:
        names, kinds = ["task", "service"], ["task", "service"]
        labelled = table.frame.with_columns(pl.col("kind").alias("class"))
    bands: dict[str, tuple[Range, Range]] = {}
    levels: dict[str, Levels] = {}
    if (
        classes == "apriori"
        and residents is not None
        and residents.height >= MIN_CLASS_TASKS
        and "cpu_request" in labelled.columns
    ):
        if table.google_priorities and _groups_can_hold(labelled, residents):
            labelled, names, kinds, levels = by_priority_group(labelled, names, kinds)
        for holder in [n for n, kind in zip(names, kinds) if kind == "service"]:
            held = residents
            if holder in levels:
                held = residents.filter(pl.Series(in_levels(residents["google_priority"], levels[holder])))
            labelled, own = _in_request_bands(labelled, held, holder, ended_only=bool(levels))
            if own:
                at = names.index(holder)
                names = [*names[:at], *own, *names[at + 1 :]]
                kinds = [*kinds[:at], *(kinds[at] for _ in own), *kinds[at + 1 :]]
                bands.update(own)
                levels.update({band: levels[holder] for band in own if holder in levels})
    sizes = dict(labelled.group_by("class").len().iter_rows())
    small = [n for n in names if 0 < sizes.get(n, 0) < MIN_CLASS_TASKS]
    if small and strict:
        raise InputFileError(f"class(es) {small} have fewer than {MIN_CLASS_TASKS} tasks: too few to fit")
    spread = dict(
        labelled.group_by("class")
        .agg((pl.col("makespan").max() > pl.col("makespan").min()).alias("spread"))
        .iter_rows()
    )
    constant = [n for n in names if sizes.get(n, 0) >= MIN_CLASS_TASKS and not spread[n]]
    if constant and strict:
        raise InputFileError(f"class(es) {constant}: all makespans equal: no continuous law to fit")
    kept = [(n, kind) for n, kind in zip(names, kinds) if sizes.get(n, 0) >= MIN_CLASS_TASKS and n not in constant]
    if not kept:
        raise InputFileError(
            f"no class of {MIN_CLASS_TASKS} tasks or more whose makespans differ "
            f"({_counted(len(sizes), 'class')}, the largest of {max(sizes.values(), default=0)} tasks): "
            "fit a workload with more tasks"
        )
    rows.set_aside(SMALL_CLASS, sum(sizes.get(n, 0) for n in small))
    rows.set_aside(CONSTANT_CLASS, sum(sizes[n] for n in constant))
    labelled = labelled.filter(pl.col("class").is_in([n for n, _ in kept]))
    submitted = labelled
    if lifeless is not None and lifeless.height:
        drawn = _drawn_into_classes(lifeless, labelled, dict(kept), np.random.default_rng(seed))
        submitted = pl.concat([labelled, drawn], how="diagonal_relaxed").sort("subtime", maintain_order=True)
    table = TaskTable(submitted, rows)
    per_class = dict(submitted.group_by("class").len().iter_rows())
    class_fits = [
        replace(
            _fit_class(
                n,
                kind,
                labelled.filter(pl.col("class") == n),
                per_class[n] / submitted.height,
                criterion,
                methods,
                groups,
            ),
            without_lifetime=per_class[n] - sizes[n],
            cpu_range=bands[n][0] if n in bands else None,
            memory_range=bands[n][1] if n in bands else None,
            levels=levels.get(n),
        )
        for n, kind in kept
    ]
    if levels:
        class_fits = _with_priority_levels(class_fits, labelled, residents)
    if bands:
        class_fits = _with_start_requests(class_fits, residents)
    arrivals = _fit_arrivals(submitted["subtime"].to_numpy(), profile, criterion, methods)
    job_fit = None
    if jobs and "job_id" in submitted.columns and submitted["job_id"].n_unique() >= MIN_JOBS:
        job_fit = fit_job_arrivals(
            submitted,
            [n for n, _ in kept],
            None if arrivals.profile is None else arrivals.profile.profile.period,
            lambda positive: _fit_positive_gaps(positive, criterion, methods),
            criterion,
            methods,
        )
    model = WorkloadModel(
        dynamism=None,
        classes=tuple(fit.task_class() for fit in class_fits),
        name=name,
        interarrival=arrivals.best.law,
        simultaneous=arrivals.simultaneous,
        arrival_profile=None if arrivals.profile is None else arrivals.profile.profile,
        jobs=None if job_fit is None else job_fit.jobs,
    )
    if residents is not None and residents.height >= MIN_CLASS_TASKS:
        class_fits, model = _holding_the_start(class_fits, model, labelled, residents, residents.height)
    elif residents is not None:  # a censored fit of an input that does not open on the trace's start
        class_fits, model = _holding_the_start(
            class_fits,
            model,
            labelled,
            None,
            round(GOOGLE_2011_START_TASKS * machines / GOOGLE_2011_MACHINES),
            "the trace's start on as many machines (the input does not open on it, so its own start is unknown)",
        )
    start, lifeless_cpu, reasons = None, None, {}
    if lifeless is not None:
        reasons = dict(lifeless.group_by(NO_LIFETIME).len().sort(NO_LIFETIME).iter_rows())
    if "cpu_request" in everything.columns:
        class_fits = _with_cpu_shares(class_fits, submitted, residents, everything)
        if lifeless is not None and float(everything["cpu_request"].sum()) > 0:
            lifeless_cpu = float(lifeless["cpu_request"].sum()) / float(everything["cpu_request"].sum())
        if residents is not None:
            start = StartLoad(
                residents.height, float(residents["cpu_request"].sum()), float(residents["memory_request"].sum())
            )
    return ModelFit(
        model,
        table,
        class_fits,
        arrivals,
        criterion,
        classes,
        scores,
        clustering,
        job_fit,
        start,
        reasons,
        lifeless_cpu,
    )
