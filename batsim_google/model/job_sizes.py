"""Tasks per job over the period: the job sizes that make the task rate follow its profile.

With job-level arrivals the task rate of a bin is its job rate times its mean tasks per job. The
trace's task rate does not follow its job rate: its first hour has 2.5 times the tasks of the next
ones from as many jobs. When the jobs have their own rate profile (``jobs.profile``, fitted on
job submissions), a job submitted in bin ``b`` draws its number of tasks from its class's law
*tilted* so that the mean over the job classes is ``task_rate[b] / job_rate[b]`` times the
untilted one: the weight of ``k`` tasks becomes proportional to ``weight * k ** theta``, one
``theta`` per bin (exponential tilting in ``log k``: it keeps the values, moves weight towards
large jobs when ``theta > 0`` and is the law itself at ``theta = 0``). A factor out of reach
(beyond the largest or under the smallest mean) takes the nearest tilt in ``[-THETA_BOUND,
THETA_BOUND]``. Without a job profile every bin draws the laws as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.job_arrivals import JobArrivals
from batsim_google.model.laws import Empirical, draw_categories

#: The largest tilt exponent, either way: past it a law is its largest (or smallest) value.
THETA_BOUND = 50.0

__all__ = ["JobSizes", "size_factors", "tilted_weights"]


def tilted_weights(law: Empirical, theta: float) -> np.ndarray:
    """The weights of ``law`` times ``value ** theta``, normalized (computed in log space)."""
    values, weights = np.asarray(law.values), np.asarray(law.weights)
    present = weights > 0
    log = np.full(len(weights), -np.inf)
    log[present] = np.log(weights[present]) + theta * np.log(values[present])
    tilted = np.exp(log - log[present].max())
    return tilted / tilted.sum()


@dataclass(frozen=True)
class _Stacked:
    """The job classes' laws as padded rows (log values, log weights: -inf for a weight of 0 and
    for padding), so that a tilted mean over all classes is a few array operations: the tilt is
    solved per bin of a weekly profile (336 bins) in some twenty evaluations each."""

    values: np.ndarray
    log_values: np.ndarray
    log_weights: np.ndarray
    frequencies: np.ndarray

    @classmethod
    def of(cls, laws: Sequence[Empirical], frequencies: np.ndarray) -> _Stacked:
        width = max(len(law.values) for law in laws)
        values = np.ones((len(laws), width))
        log_weights = np.full((len(laws), width), -np.inf)
        for row, law in enumerate(laws):
            weights = np.asarray(law.weights)
            values[row, : len(weights)] = law.values
            log_weights[row, : len(weights)] = np.log(weights, where=weights > 0, out=np.full(len(weights), -np.inf))
        return cls(values, np.log(values), log_weights, np.asarray(frequencies, dtype=float))

    def mean(self, theta: float) -> float:
        """The mean over the classes (weighted by their frequencies) of the laws tilted by ``theta``."""
        log = self.log_weights + theta * self.log_values
        tilted = np.exp(log - log.max(axis=1, keepdims=True))
        return float(self.frequencies @ ((tilted * self.values).sum(axis=1) / tilted.sum(axis=1)))


def _tilt(stacked: _Stacked, target: float) -> float:
    """The ``theta`` whose tilted mean over the classes is ``target`` (the nearest bound if none)."""
    gap = lambda theta: stacked.mean(theta) - target  # noqa: E731
    if gap(-THETA_BOUND) >= 0:
        return -THETA_BOUND
    if gap(THETA_BOUND) <= 0:
        return THETA_BOUND
    from scipy import optimize

    return float(optimize.brentq(gap, -THETA_BOUND, THETA_BOUND, xtol=1e-12))


def size_factors(task_profile: ArrivalProfile, job_profile: ArrivalProfile) -> np.ndarray:
    """Per bin, the mean tasks per job relative to the mean: task rate over job rate (1 where no
    job is submitted, as it is never used there)."""
    tasks, jobs = np.array(task_profile.rates), np.array(job_profile.rates)
    return np.divide(tasks, jobs, out=np.ones_like(tasks), where=jobs > 0)


@dataclass(frozen=True)
class JobSizes:
    """How a job's number of tasks is drawn: from its class's law, tilted by the bin it is
    submitted in when the jobs have a rate profile of their own."""

    laws: tuple[Empirical, ...]
    profile: ArrivalProfile | None = None
    #: Per bin of ``profile``, per job class: the tilted weights.
    weights: tuple[tuple[np.ndarray, ...], ...] = ()

    @classmethod
    def of(cls, jobs: JobArrivals, task_profile: ArrivalProfile | None) -> JobSizes:
        laws = tuple(c.tasks for c in jobs.classes)
        if jobs.profile is None or task_profile is None:
            return cls(laws)
        stacked = _Stacked.of(laws, np.array([c.frequency for c in jobs.classes]))
        mean = stacked.mean(0.0)
        thetas = [_tilt(stacked, f * mean) for f in size_factors(task_profile, jobs.profile)]
        return cls(laws, jobs.profile, tuple(tuple(tilted_weights(law, t) for law in laws) for t in thetas))

    def mean_tasks(self) -> np.ndarray:
        """Per job class, its mean tasks per job over a period (bins weighted by their job rate)."""

        def means(weights) -> np.ndarray:
            return np.array([np.dot(law.values, w) for law, w in zip(self.laws, weights, strict=True)])

        if self.profile is None:
            return means([law.weights for law in self.laws])
        rates = np.array(self.profile.rates)
        return sum(rate * means(weights) for rate, weights in zip(rates, self.weights, strict=True)) / rates.sum()

    def draw(self, job_class: np.ndarray, submitted: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The number of tasks of jobs of classes ``job_class`` submitted at real times ``submitted``."""
        if self.profile is None:
            return Empirical.draw(self.laws, job_class, rng).astype(np.int64)
        classes = len(self.laws)
        rows = self.profile.bin_of(submitted) * classes + job_class
        category = draw_categories([w for per_bin in self.weights for w in per_bin], rows, rng)
        values = np.zeros((len(self.laws), max(len(law.values) for law in self.laws)))
        for index, law in enumerate(self.laws):
            values[index, : len(law.values)] = law.values
        return values[job_class, category].astype(np.int64)
