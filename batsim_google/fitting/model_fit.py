"""From a task table to a workload model: classes, their laws, priorities and the arrivals.

Classes are either the model paper's a-priori split (Finish-ended *tasks*, Kill-ended *services*)
or k-means clusters (:mod:`.kmeans`). For every class, every law of :mod:`.laws` is fitted to
the makespans and the best by the criterion (:mod:`.select`) goes into the model: a log-normal as
the paper's ``mass`` and ``disparity``, any other law as the class's ``makespan``. Priorities get
the truncated-exponential rate by maximum likelihood; the class's empirical mass (mean makespan)
and disparity (mean / median) are reported as in the paper. Arrivals: the arrival-rate profile
is fitted first when asked for, the inter-arrival laws then on the gaps in normalized time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal

import numpy as np
import polars as pl

from ..distributions import LogNormal
from ..model import Kind, TaskClass, WorkloadModel
from .kmeans import Clustering, KScore, cluster, elbow
from .priority import PriorityFit, fit_priority_rate
from .profile import ProfileChoice, ProfileFit, fit_arrival_profile, profile_period
from .select import Criterion, LawFit, best_fit, fit_all
from .table import FitInputError, TaskTable, task_table

Classification = Literal["apriori", "kmeans"]
CLASSIFICATIONS: tuple[Classification, ...] = ("apriori", "kmeans")
#: Fewest tasks a class needs to be fitted; smaller classes are skipped (counted) or, strict, refused.
MIN_CLASS_TASKS = 20
SMALL_CLASS = f"in a class of fewer than {MIN_CLASS_TASKS} tasks"


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

    def task_class(self) -> TaskClass:
        law = self.best.law
        if isinstance(law, LogNormal):  # the paper's own parametrization
            mass = law.mean()
            return TaskClass(self.name, self.kind, self.frequency, mass, mass / law.median(), self.priority.rate)
        return TaskClass(self.name, self.kind, self.frequency, None, None, self.priority.rate, makespan=law)


@dataclass(frozen=True)
class ArrivalFit:
    """Inter-arrival fits (in normalized time when there is a profile), the profile, and the
    positive gaps fitted (``sample``)."""

    sample: np.ndarray
    gaps: int
    zero_gaps: int
    mean_gap: float
    fits: list[LawFit]
    best: LawFit
    profile: ProfileFit | None


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


def _fit_arrivals(subtimes: np.ndarray, profile: ProfileChoice, criterion, methods) -> ArrivalFit:
    subtimes = np.sort(subtimes)
    period = profile_period(profile, float(subtimes[-1] - subtimes[0]))
    profile_fit = None if period is None else fit_arrival_profile(subtimes, period)
    clock = subtimes if profile_fit is None else profile_fit.profile.to_normalized_time(subtimes)
    gaps = np.diff(clock)
    positive = gaps[gaps > 0]
    if len(positive) < 2:
        raise FitInputError("fewer than 2 positive gaps between submissions: no inter-arrival law to fit")
    fits = fit_all(positive, methods)
    return ArrivalFit(
        positive, len(gaps), int(len(gaps) - len(positive)), float(gaps.mean()), fits, best_fit(fits, criterion), profile_fit
    )


def _fit_class(name: str, kind: Kind, rows: pl.DataFrame, total: int, criterion, methods) -> ClassFit:
    makespans = rows["makespan"].to_numpy()
    fits = fit_all(makespans, methods)
    mass = float(makespans.mean())
    return ClassFit(
        name, kind, rows.height, rows.height / total, mass, mass / float(np.median(makespans)),
        fit_priority_rate(rows["priority"].to_numpy()), fits, best_fit(fits, criterion),
    )


def fit_model(
    frame: pl.DataFrame,
    *,
    classes: Classification = "apriori",
    k: int | None = None,
    profile: ProfileChoice = "auto",
    criterion: Criterion = "ks",
    methods: Iterable[str] | None = None,
    seed: int = 0,
    strict: bool = False,
    name: str = "fitted",
) -> ModelFit:
    """Fit a workload model to a task table (columns: see :mod:`.table`).

    ``classes="kmeans"`` clusters the tasks into ``k`` classes, or, without ``k``, into the k of
    2..10 with the best mean silhouette. ``seed`` seeds k-means and the silhouette sample.
    """
    if classes not in CLASSIFICATIONS:
        raise ValueError(f"classes must be one of {', '.join(CLASSIFICATIONS)} (got {classes!r})")
    methods = None if methods is None else list(methods)
    table = task_table(frame, strict=strict)
    if table.frame.height == 0:
        raise FitInputError(f"no valid task among {table.rows_read} rows (skipped: {table.skipped})")
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
    sizes = dict(labelled.group_by("class").len().iter_rows())
    small = [n for n in names if 0 < sizes.get(n, 0) < MIN_CLASS_TASKS]
    if small and strict:
        raise FitInputError(f"class(es) {small} have fewer than {MIN_CLASS_TASKS} tasks: too few to fit")
    kept = [(n, kind) for n, kind in zip(names, kinds) if sizes.get(n, 0) >= MIN_CLASS_TASKS]
    if not kept:
        raise FitInputError(f"no class has {MIN_CLASS_TASKS} tasks or more (sizes: {sizes})")
    skipped = dict(table.skipped)
    dropped = sum(sizes.get(n, 0) for n in small)
    if dropped:
        skipped[SMALL_CLASS] = dropped
    labelled = labelled.filter(pl.col("class").is_in([n for n, _ in kept]))
    table = TaskTable(labelled, table.rows_read, skipped)
    class_fits = [
        _fit_class(n, kind, labelled.filter(pl.col("class") == n), labelled.height, criterion, methods)
        for n, kind in kept
    ]
    arrivals = _fit_arrivals(labelled["subtime"].to_numpy(), profile, criterion, methods)
    model = WorkloadModel(
        dynamism=None,
        classes=tuple(fit.task_class() for fit in class_fits),
        name=name,
        interarrival=arrivals.best.law,
        arrival_profile=None if arrivals.profile is None else arrivals.profile.profile,
    )
    return ModelFit(model, table, class_fits, arrivals, criterion, classes, scores, clustering)
