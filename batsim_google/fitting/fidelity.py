"""How faithful a model is to the data it was fitted on: generate, then compare per class.

The generator draws as many tasks as the original table holds, from ``seed``; per class, the
two-sample Kolmogorov-Smirnov statistic compares generated and original makespans (the model
paper's log-normal fits reach 0.057 and 0.064 against the trace), and the class frequencies and
mean priorities are set side by side; so are the widths of parallel jobs when the original has
them (the largest gap between the two distribution functions, a KS statistic on whole numbers).
The inter-arrival times of the whole stream are compared the same way; with job-level arrivals
and job ids in the original, so are the jobs (:mod:`.job_fidelity`), and up to
:data:`HOURLY_DRAWS` more draws over the original's span (seeds spawned from ``seed``; fewer when
the original is large, within :data:`HOURLY_TASK_BUDGET` generated tasks) give the hourly rates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
import polars as pl
from scipy import stats

from batsim_google.fitting.job_fidelity import JobFidelity, job_fidelity
from batsim_google.generation.generator import generate
from batsim_google.model.request_law import RequestLaw, load_request_law
from batsim_google.model.workload_model import WorkloadModel
from batsim_google.units import HOUR

#: Draws whose mean hourly counts are the model's hourly rates.
HOURLY_DRAWS = 20
#: Most tasks those draws generate together (about the original's size each).
HOURLY_TASK_BUDGET = 4_000_000


@dataclass(frozen=True)
class ClassFidelity:
    name: str
    original_tasks: int
    generated_tasks: int
    original_frequency: float
    generated_frequency: float
    makespan_ks: float
    original_mean_priority: float
    generated_mean_priority: float
    width_ks: float | None = None


@dataclass(frozen=True)
class RateComparison:
    """Submission rates of two inputs (tasks per hour over each one's span), and their hourly
    profiles over the whole hours both span, from each one's first submission: an hour's count
    over that input's mean hourly count, so that a workload scaled to fewer machines keeps its
    shape."""

    original_rate: float | None  # None: all submitted at once
    other_rate: float | None
    hours: int
    original_profile: list[float]
    other_profile: list[float]

    @property
    def worst_profile_gap(self) -> float | None:
        """The largest gap between the two profiles (None without a whole hour in common)."""
        if not self.hours:
            return None
        return float(np.max(np.abs(np.array(self.original_profile) - np.array(self.other_profile))))


@dataclass(frozen=True)
class Fidelity:
    seed: int | None
    classes: list[ClassFidelity]
    interarrival_ks: float
    jobs: JobFidelity | None = None
    rates: RateComparison | None = None

    @property
    def worst_makespan_ks(self) -> float:
        return max(c.makespan_ks for c in self.classes)

    def to_mapping(self) -> dict:
        mapping = {**asdict(self), "worst_makespan_ks": self.worst_makespan_ks}
        if self.jobs is not None:
            mapping["jobs"] |= {"worst_ks": self.jobs.worst_ks, "worst_hourly_error": self.jobs.worst_hourly_error}
        if self.rates is not None:
            mapping["rates"] |= {"worst_profile_gap": self.rates.worst_profile_gap}
        return mapping


def fidelity_report(
    original: pl.DataFrame, model: WorkloadModel, seed: int, requests: RequestLaw | None = None
) -> Fidelity:
    """Compare ``original`` (columns ``subtime``, ``makespan``, ``priority`` in ]0, 1],
    ``class``, a class name of ``model`` per row, and optionally ``width`` and ``job_id``) with as
    many tasks generated from ``seed``."""
    names = [c.name for c in model.classes]
    unknown = set(original["class"].unique().to_list()) - set(names)
    if unknown:
        raise ValueError(f"original rows of class(es) {sorted(unknown)} that the model does not have")
    count = original.height
    requests = requests or load_request_law()
    batches = list(generate(model, requests, np.random.default_rng(seed), tasks=count))
    with_jobs = model.jobs is not None and "job_id" in original.columns
    generated = pl.DataFrame(
        {
            "subtime": np.concatenate([b.subtime for b in batches]),
            "makespan": np.concatenate([b.makespan for b in batches]),
            "priority": np.concatenate([b.priority for b in batches]),
            "class": np.array(names)[np.concatenate([b.class_index for b in batches])],
            "width": np.concatenate([b.width for b in batches]),
            **({"job_id": np.concatenate([b.job for b in batches])} if with_jobs else {}),
        }
    )
    draws = _hourly_draws(model, requests, seed, float(original["subtime"].max()), count) if with_jobs else None
    return compare_tables(original, generated, seed, names, draws)


def compare_tables(
    original: pl.DataFrame,
    other: pl.DataFrame,
    seed: int | None = None,
    classes: list[str] | None = None,
    hourly_draws: list[np.ndarray] | None = None,
) -> Fidelity:
    """Compare two task tables (columns ``subtime``, ``makespan``, ``priority``, ``class``, and
    ``width`` and ``job_id`` when both have them): per class (``classes``, by default those of
    either in order of appearance), the tasks, frequencies, makespans (two-sample KS), mean
    priorities and widths; the inter-arrival times; the jobs with ``job_id``, their hourly rates
    from ``hourly_draws`` (default: ``other``'s own submissions; rows without a makespan, the
    tasks without a lifetime, count in all but the makespans). ``seed``: the generator's, if
    ``other`` was drawn."""
    names = classes or list(dict.fromkeys(original["class"].to_list() + other["class"].to_list()))
    widths = "width" in original.columns and "width" in other.columns
    compared = []
    for name in names:
        rows, drawn = original.filter(pl.col("class") == name), other.filter(pl.col("class") == name)
        if rows.height == 0 or drawn.height == 0:
            continue
        compared.append(
            ClassFidelity(
                name,
                rows.height,
                drawn.height,
                rows.height / original.height,
                drawn.height / other.height,
                float(stats.ks_2samp(rows["makespan"].drop_nulls().to_numpy(), drawn["makespan"].to_numpy()).statistic),
                float(rows["priority"].mean()),
                float(drawn["priority"].mean()),
                float(stats.ks_2samp(rows["width"].to_numpy(), drawn["width"].to_numpy()).statistic)
                if widths
                else None,
            )
        )
    original_subtime, subtime = original["subtime"].to_numpy(), other["subtime"].to_numpy()
    interarrival_ks = float(stats.ks_2samp(np.diff(np.sort(original_subtime)), np.diff(np.sort(subtime))).statistic)
    jobs = None
    if "job_id" in original.columns and "job_id" in other.columns:
        draws = [subtime] if hourly_draws is None else hourly_draws
        jobs = job_fidelity(original_subtime, original["job_id"].to_numpy(), subtime, other["job_id"].to_numpy(), draws)
    return Fidelity(seed, compared, interarrival_ks, jobs)


def rate_comparison(original_subtime: np.ndarray, other_subtime: np.ndarray) -> RateComparison:
    """The :class:`RateComparison` of two inputs' submission times."""
    starts = [np.asarray(t, dtype=float) - np.min(t) for t in (original_subtime, other_subtime)]
    rates = [len(t) / (t.max() / HOUR) if t.max() > 0 else None for t in starts]
    hours = int(min(t.max() for t in starts) // HOUR)
    profiles = []
    for times in starts:
        counts = np.bincount((times // HOUR).astype(np.int64), minlength=hours)[:hours].astype(float)
        profiles.append((counts / counts.mean()).tolist() if hours and counts.mean() > 0 else [])
    return RateComparison(rates[0], rates[1], hours if all(profiles) else 0, *profiles)


def compare_inputs(original: pl.DataFrame, other: pl.DataFrame) -> Fidelity:
    """Compare two task tables (:func:`compare_tables`, classes by kind: task, service) and
    their submission rates and hourly profiles, each from its own first submission."""
    tables = [
        table.with_columns(pl.col("kind").alias("class"), pl.col("subtime") - pl.col("subtime").min())
        for table in (original, other)
    ]
    compared = compare_tables(*tables, classes=["task", "service"])
    return replace(compared, rates=rate_comparison(tables[0]["subtime"].to_numpy(), tables[1]["subtime"].to_numpy()))


def _hourly_draws(
    model: WorkloadModel, requests: RequestLaw, seed: int, duration: float, size: int
) -> list[np.ndarray]:
    """Submission times of independent draws over ``duration`` seconds."""
    draws = max(1, min(HOURLY_DRAWS, HOURLY_TASK_BUDGET // max(size, 1)))
    return [
        np.concatenate(
            [np.empty(0), *(b.subtime for b in generate(model, requests, np.random.default_rng(c), duration=duration))]
        )
        for c in np.random.SeedSequence(seed).spawn(draws)
    ]
