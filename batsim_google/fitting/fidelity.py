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

from dataclasses import asdict, dataclass

import numpy as np
import polars as pl
from scipy import stats

from batsim_google.fitting.job_fidelity import JobFidelity, job_fidelity
from batsim_google.generation.generator import generate
from batsim_google.model.request_law import RequestLaw, load_request_law
from batsim_google.model.workload_model import WorkloadModel

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
class Fidelity:
    seed: int
    classes: list[ClassFidelity]
    interarrival_ks: float
    jobs: JobFidelity | None = None

    @property
    def worst_makespan_ks(self) -> float:
        return max(c.makespan_ks for c in self.classes)

    def to_mapping(self) -> dict:
        mapping = {**asdict(self), "worst_makespan_ks": self.worst_makespan_ks}
        if self.jobs is not None:
            mapping["jobs"] |= {"worst_ks": self.jobs.worst_ks, "worst_hourly_error": self.jobs.worst_hourly_error}
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
    batches = list(generate(model, requests or load_request_law(), np.random.default_rng(seed), tasks=count))
    class_index = np.concatenate([b.class_index for b in batches])
    makespan = np.concatenate([b.makespan for b in batches])
    priority = np.concatenate([b.priority for b in batches])
    subtime = np.concatenate([b.subtime for b in batches])
    width = np.concatenate([b.width for b in batches])
    classes = []
    for index, name in enumerate(names):
        rows = original.filter(pl.col("class") == name)
        drawn = class_index == index
        if rows.height == 0 or not drawn.any():
            continue
        classes.append(
            ClassFidelity(
                name,
                rows.height,
                int(drawn.sum()),
                rows.height / count,
                float(drawn.mean()),
                float(stats.ks_2samp(rows["makespan"].to_numpy(), makespan[drawn]).statistic),
                float(rows["priority"].mean()),
                float(priority[drawn].mean()),
                float(stats.ks_2samp(rows["width"].to_numpy(), width[drawn]).statistic)
                if "width" in rows.columns
                else None,
            )
        )
    original_gaps = np.diff(np.sort(original["subtime"].to_numpy()))
    interarrival_ks = float(stats.ks_2samp(original_gaps, np.diff(subtime)).statistic)
    jobs = None
    if model.jobs is not None and "job_id" in original.columns:
        generated_job = np.concatenate([b.job for b in batches])
        original_subtime = original["subtime"].to_numpy()
        draws = _hourly_draws(model, requests or load_request_law(), seed, float(original_subtime.max()), count)
        jobs = job_fidelity(original_subtime, original["job_id"].to_numpy(), subtime, generated_job, draws)
    return Fidelity(seed, classes, interarrival_ks, jobs)


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
