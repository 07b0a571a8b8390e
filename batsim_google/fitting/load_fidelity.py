"""The requested load over time, generated against the input a model was fitted on.

A model can reproduce every law and still leave a cell far emptier than the one it was fitted on
(the tasks running before the input starts and after it ends are the bulk of a cell's load). So
``fit --censored`` also sets the CPU and memory that the tasks running at each instant request
in the input beside those of a workload generated from the model over its span: the warm start
on the input's cell (:func:`~batsim_google.generation.warm_start.warm_start`) and its arrivals
after it. A task counts from its submission for its makespan on both sides (an infinite cell: the
warm start's assumption; the input's waits are not modelled), an input task still running at the
input's end runs on past it. The input side is the rows the fit read with a lifetime: its residents
and the tasks its classes keep (what no class holds, and the tasks without a lifetime, which the
model generates with its classes' lifetimes, are not in it). An input that does not open on the
trace's start has no residents: the tasks running before it are unknown, so the generated side
leaves out its warm start too, and both sides are the tasks submitted over the span.

With a start, the warm-started cell is also followed over a generated day, hour by hour
(:mod:`batsim_google.generation.population`): a model whose arrivals keep its warm start holds its
level; one whose tasks or CPU leave it by more than :data:`DRIFT_TOLERANCE` over the day's last
hours is flagged as drifting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from batsim_google.fitting.model_fit import StartLoad
from batsim_google.generation.generator import generate
from batsim_google.generation.population import Population, generated_population
from batsim_google.generation.warm_start import warm_start
from batsim_google.model.request_law import RequestLaw
from batsim_google.model.workload_model import WorkloadModel

#: Instants the load is taken at, evenly over the input's span (its first and last submissions included).
LOAD_POINTS = 241
#: The generated day the level is followed over, hour by hour (s), and its last hours, whose mean
#: against the start says whether the cell drifts.
DAY_HOURS = np.arange(0, 25) * 3600.0
LAST_HOURS = 5
#: How far the last hours' mean may be from the start before the cell is said to drift.
DRIFT_TOLERANCE = 0.1


@dataclass(frozen=True)
class LoadCurve:
    """Requested CPU and memory of the tasks running at each of ``times`` (s)."""

    times: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray

    def mean_error(self, other: LoadCurve) -> tuple[float, float]:
        """Mean absolute difference of CPU and of memory with ``other`` (same times), each over
        ``other``'s mean."""
        return tuple(
            float(np.mean(np.abs(mine - theirs)) / np.mean(theirs))
            for mine, theirs in ((self.cpu, other.cpu), (self.memory, other.memory))
        )


@dataclass(frozen=True)
class LoadFidelity:
    """The input's load and the generated one over the input's span, and both at time 0."""

    input: LoadCurve
    generated: LoadCurve
    input_start: StartLoad
    warm_start: StartLoad
    machines: int
    seed: int
    #: Whether the input has a start (residents) and the generated side its warm start.
    with_start: bool = True
    #: The warm-started cell over a generated day, hour by hour (with a start only).
    day: Population | None = None

    def day_level(self) -> dict[str, float] | None:
        """The mean over the day's last hours of the tasks, CPU and memory (when the start requests
        some), over the start's (None without a day)."""
        if self.day is None:
            return None
        curves = {"tasks": self.day.tasks, "cpu": self.day.cpu, "memory": self.day.memory}
        return {
            name: float(curve[-LAST_HOURS:].mean() / curve[0])
            for name, curve in curves.items()
            if name != "memory" or curve[0] > 0
        }

    @property
    def drifts(self) -> bool:
        """Whether the generated cell's tasks, CPU or memory leave the start's level by more than
        :data:`DRIFT_TOLERANCE` over the day's last hours."""
        level = self.day_level()
        return level is not None and any(abs(value - 1.0) > DRIFT_TOLERANCE for value in level.values())

    def day_note(self) -> str:
        """One line on the generated day ('' without)."""
        level = self.day_level()
        if level is None:
            return ""
        verdict = "DRIFTS" if self.drifts else "holds its level"
        return (
            f"generated cell over a day (seed {self.seed}, no contention): at hours {24 - LAST_HOURS + 1}-24, "
            f"{level['tasks']:.3f}x the start's tasks, {level['cpu']:.3f}x its CPU"
            + (f" and {level['memory']:.3f}x its memory" if "memory" in level else "")
            + f": {verdict} "
            f"(tolerance {DRIFT_TOLERANCE:.0%})"
        )

    @property
    def span_note(self) -> str:
        """What the comparison over the span leaves out, for the printouts ('' when nothing)."""
        return "" if self.with_start else "; the input has no start: both sides without the tasks running before it"

    @property
    def errors(self) -> tuple[float, float]:
        """Mean absolute error of the generated CPU and memory over time, relative to the input's mean."""
        return self.generated.mean_error(self.input)

    def to_mapping(self) -> dict:
        return {
            "machines": self.machines,
            "seed": self.seed,
            "start": {"input": vars(self.input_start), "generated": vars(self.warm_start)},
            "with_start": self.with_start,
            "mean_error": dict(zip(("cpu", "memory"), self.errors)),
            "times": self.input.times.tolist(),
            "input": {"cpu": self.input.cpu.tolist(), "memory": self.input.memory.tolist()},
            "generated": {"cpu": self.generated.cpu.tolist(), "memory": self.generated.memory.tolist()},
            **(
                {}
                if self.day is None
                else {
                    "day": {
                        "hours": (self.day.times / 3600.0).tolist(),
                        "tasks": self.day.tasks.tolist(),
                        "cpu": self.day.cpu.tolist(),
                        "memory": self.day.memory.tolist(),
                        "submitted_per_hour": self.day.submitted.tolist(),
                        "level": self.day_level(),
                        "drifts": self.drifts,
                        "tolerance": DRIFT_TOLERANCE,
                    }
                }
            ),
        }


def running_load(times, starts, ends, cpu, memory) -> LoadCurve:
    """The CPU and memory requested at each of ``times`` by the tasks running over [start, end)."""
    times = np.asarray(times, dtype=float)
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)

    def at(weights: np.ndarray) -> np.ndarray:
        weights = np.asarray(weights, dtype=float)
        begun = np.concatenate([[0.0], np.cumsum(weights[np.argsort(starts, kind="stable")])])
        over = np.concatenate([[0.0], np.cumsum(weights[np.argsort(ends, kind="stable")])])
        started = begun[np.searchsorted(np.sort(starts), times, side="right")]
        ended = over[np.searchsorted(np.sort(ends), times, side="right")]
        return started - ended

    return LoadCurve(times, at(cpu), at(memory))


def input_load(frame: pl.DataFrame, times: np.ndarray) -> LoadCurve:
    """The load of a fitting table's rows (``subtime``, ``makespan``, ``cpu_request``,
    ``memory_request``; unknown requests count as 0; a ``censored`` row runs past the input's end;
    a row without a makespan does not count)."""
    frame = frame.filter(pl.col("makespan").is_not_null())
    requests = frame.select(pl.col("cpu_request", "memory_request").cast(pl.Float64).fill_null(0.0))
    starts = frame["subtime"].to_numpy()
    ends = starts + frame["makespan"].to_numpy()
    if "censored" in frame.columns:  # still running at the input's end: beyond it
        ends = np.where(frame["censored"].fill_null(False).to_numpy(), np.inf, ends)
    return running_load(
        times,
        starts,
        ends,
        requests["cpu_request"].to_numpy(),
        requests["memory_request"].to_numpy(),
    )


def load_fidelity(
    frame: pl.DataFrame, model: WorkloadModel, requests: RequestLaw, machines: int, seed: int
) -> LoadFidelity:
    """The load of the fitting table ``frame`` (its ``resident`` rows, when it has some, are its
    start) against one workload of ``model`` on ``machines`` over its span: the warm start
    (``numpy.random.default_rng(seed)``), then the arrivals from the same generator."""
    # from the input's first submission (a later part of the trace starts past 0), generated from there
    begin, end = float(frame["subtime"].min()), float(frame["subtime"].max())
    times = np.linspace(begin, end, LOAD_POINTS)
    rng = np.random.default_rng(seed)
    residents = frame.filter(pl.col("resident")) if "resident" in frame.columns else frame.clear()
    warm = warm_start(model, requests, rng, 1.0, machines)
    batches = [warm, *generate(model, requests, rng, duration=end - begin)][0 if residents.height else 1 :]
    subtime = begin + np.concatenate([b.subtime for b in batches])
    generated = running_load(
        times,
        subtime,
        subtime + np.concatenate([b.makespan for b in batches]),
        np.concatenate([b.cpu for b in batches]),
        np.concatenate([b.memory for b in batches]),
    )
    return LoadFidelity(
        input_load(frame, times),
        generated,
        StartLoad(
            residents.height,
            float(residents["cpu_request"].fill_null(0.0).sum()),
            float(residents["memory_request"].fill_null(0.0).sum()),
        ),
        StartLoad(len(warm), float(warm.cpu.sum()), float(warm.memory.sum())),
        machines,
        seed,
        residents.height > 0,
        generated_population(model, requests, seed, DAY_HOURS, machines) if residents.height else None,
    )
