"""The model paper's trace statistics (Da Costa et al. 2018, Sections 2 and 4), chunk by chunk.

Definitions, from the paper's text:

- Table 1: tasks by their number of events (every task record; tasks still open at the end of the
  input count with the events seen so far, and their number is given).
- Table 2: tasks of exactly three events, by the event that ended them ("open": not ended).
- Tables 3-7 use "the tasks composed of three events" that end with FINISH or KILL (the paper
  keeps only these): counts per scheduling class (3), priority (4), priority group (5), and the
  makespan (end - schedule, seconds) per priority group for FINISH (6) and KILL (7). A task
  scheduled before the trace window or ended after it has no known makespan: it is counted as
  ``censored``, by which of the two.
- Inter-arrival: time between consecutive SUBMIT events inside the window (every submission, as
  the paper's mean of 0.052 s over the month implies), and between first submissions of tasks.
- Running tasks over time (Figs. 5, 6): attempts that ended with FINISH (resp. KILL), counted at
  every multiple of ``bin_width`` seconds while scheduled (from the window start if scheduled
  before it, to the last sample if ended after it).
- ``synthesized=False`` leaves out the records with an event the trace synthesized (missing info
  set): tasks with one anywhere in their life, attempts with one, synthesized submissions. Their
  rows still carry the tasks' states, so no other record changes; the tasks left out are counted.

Nothing here keeps one value per task: counts, exact moments, and log-binned histograms (1000 bins
per decade, so medians and CDFs are exact to 0.23 %).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from batsim_google.errors import ParameterError
from batsim_google.model.vocabulary import GOOGLE_PRIORITY_LEVELS
from batsim_google.trace.attempts import LifecycleBatch
from batsim_google.trace.population import MODELED_ENDS, paper_population
from batsim_google.trace.schema import TaskEvent, priority_group_index
from batsim_google.trace.vocabulary import DEFAULT_BIN_WIDTH, PRIORITY_GROUPS

EVENT_COUNTS = [str(n) for n in range(1, 9)] + ["9+"]
END_NAMES = {
    int(event): event.name.capitalize()
    for event in (TaskEvent.FINISH, TaskEvent.KILL, TaskEvent.FAIL, TaskEvent.EVICT, TaskEvent.LOST)
}
GROUPS = list(PRIORITY_GROUPS)
SCHEDULING_CLASSES = 4


class LogHistogram:
    """Counts of positive values in log-spaced bins, plus zeros; quantiles and CDF from it."""

    def __init__(self, low: float = 1e-6, high: float = 1e9, per_decade: int = 1000) -> None:
        self.edges = np.logspace(np.log10(low), np.log10(high), int(round(np.log10(high / low) * per_decade)) + 1)
        self.counts = np.zeros(len(self.edges) + 1, dtype=np.int64)  # [under, bins..., over]
        self.zeros = 0

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=float)
        self.zeros += int(np.count_nonzero(values == 0))
        positive = values[values > 0]
        self.counts += np.bincount(np.searchsorted(self.edges, positive, side="right"), minlength=len(self.counts))

    @property
    def total(self) -> int:
        return int(self.counts.sum()) + self.zeros

    def quantile(self, q: float) -> float:
        """Quantile, log-interpolated inside its bin (exact to the bin width)."""
        if self.total == 0:
            return float("nan")
        rank = q * self.total
        if rank <= self.zeros:
            return 0.0
        cumulative = self.zeros + np.cumsum(self.counts)
        index = int(np.searchsorted(cumulative, rank, side="left"))
        if index == 0:
            return float(self.edges[0])
        if index >= len(self.edges):
            return float(self.edges[-1])
        before = cumulative[index - 1]
        fraction = (rank - before) / self.counts[index]
        low, high = np.log(self.edges[index - 1]), np.log(self.edges[index])
        return float(np.exp(low + fraction * (high - low)))

    def cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """Upper bin edges and the fraction of values at or below each (non-empty bins only)."""
        cumulative = (self.zeros + self.counts[0] + np.cumsum(self.counts[1:-1])) / max(self.total, 1)
        used = self.counts[1:-1] > 0
        return self.edges[1:][used], cumulative[used]


@dataclass
class Moments:
    """Count, mean and variance, merged batch by batch (Chan et al.), exact and stable."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=float)
        if len(values) == 0:
            return
        n, mean = len(values), float(values.mean())
        m2 = float(((values - mean) ** 2).sum())
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta**2 * self.count * n / total
        self.count = total

    @property
    def std(self) -> float:
        return float(np.sqrt(self.m2 / (self.count - 1))) if self.count > 1 else float("nan")


@dataclass
class MakespanStats:
    """Makespans of one end event, per priority group and for all."""

    moments: dict[str, Moments] = field(default_factory=lambda: {g: Moments() for g in [*GROUPS, "all"]})
    histograms: dict[str, LogHistogram] = field(default_factory=lambda: {g: LogHistogram() for g in [*GROUPS, "all"]})
    #: Makespans unknown, as the task was scheduled before the window or ended after it.
    scheduled_before: int = 0
    ended_after: int = 0

    def add(self, makespan: np.ndarray, group: np.ndarray, schedule: np.ndarray, end: np.ndarray) -> None:
        known = ~np.isnan(makespan)
        before = schedule == -np.inf
        self.scheduled_before += int(np.count_nonzero(~known & before))
        self.ended_after += int(np.count_nonzero(~known & ~before & (end == np.inf)))
        makespan, group = makespan[known], group[known]
        for index, name in enumerate(GROUPS):
            self.moments[name].add(makespan[group == index])
            self.histograms[name].add(makespan[group == index])
        self.moments["all"].add(makespan)
        self.histograms["all"].add(makespan)

    def table(self) -> dict[str, Any]:
        return {
            **{
                name: {
                    "count": self.moments[name].count,
                    "mean": self.moments[name].mean if self.moments[name].count else float("nan"),
                    "std": self.moments[name].std,
                    "median": self.histograms[name].quantile(0.5),
                }
                for name in [*GROUPS, "all"]
            },
            "censored": {"scheduled_before_window": self.scheduled_before, "ended_after_window": self.ended_after},
        }


#: Samples of a running-task curve at most (80 MB): a month of the trace at 0.3 s.
MAX_BINS = 10_000_000


class Timeline:
    """Number of intervals [start, end) covering each multiple of ``width`` seconds (at most
    :data:`MAX_BINS` of them)."""

    def __init__(self, width: float) -> None:
        self.width = width
        self.delta = np.zeros(0, dtype=np.int64)

    def add(self, start: np.ndarray, end: np.ndarray) -> None:
        """Intervals; one that ends after the window (+inf) runs to the last sample."""
        first = np.ceil(np.maximum(start, 0.0) / self.width)
        last = np.ceil(end / self.width)
        keep = np.isfinite(first) & ~np.isnan(last) & (last > first)
        first, last = first[keep], last[keep]
        self._bound(max(first.max(initial=0), last[np.isfinite(last)].max(initial=0)))
        first = first.astype(np.int64)
        stops = last[np.isfinite(last)].astype(np.int64)
        size = int(max(first.max(initial=-1), stops.max(initial=-1))) + 1
        if size > len(self.delta):
            self.delta = np.concatenate([self.delta, np.zeros(size - len(self.delta), dtype=np.int64)])
        self.delta += np.bincount(first, minlength=len(self.delta))[: len(self.delta)]
        self.delta -= np.bincount(stops, minlength=len(self.delta))[: len(self.delta)]

    def _bound(self, last_sample: float) -> None:
        if last_sample >= MAX_BINS:
            raise ParameterError(
                f"--bin {self.width:g}: the running-task curves would need more than {MAX_BINS:,} samples "
                f"(times up to {last_sample * self.width:.4g} s); give a larger --bin"
            )

    def series(self, until: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Sample times and counts, up to ``until`` seconds at least."""
        self._bound(until // self.width)
        running = np.cumsum(self.delta)
        missing = int(until // self.width) + 1 - len(running)
        if missing > 0:  # nothing starts or stops after the last change: the count holds
            running = np.concatenate([running, np.full(missing, running[-1] if len(running) else 0)])
        return np.arange(len(running)) * self.width, running


class TraceStats:
    """Accumulates the statistics over :class:`LifecycleBatch` es."""

    def __init__(self, bin_width: float = DEFAULT_BIN_WIDTH, synthesized: bool = True) -> None:
        self.synthesized = synthesized
        self.synthesized_tasks_dropped = 0
        self.events = np.zeros(len(EVENT_COUNTS), dtype=np.int64)
        self.tasks = 0
        self.open_tasks = 0
        self.three_event_ends: dict[str, int] = {name: 0 for name in [*END_NAMES.values(), "open"]}
        self.classes = np.zeros(SCHEDULING_CLASSES, dtype=np.int64)
        self.priorities = np.zeros(GOOGLE_PRIORITY_LEVELS, dtype=np.int64)
        self.makespans = {name: MakespanStats() for name in MODELED_ENDS}
        self.running = {name: Timeline(bin_width) for name in MODELED_ENDS}
        self.last_time = 0.0  # the latest ordinary time of an attempt: where the running curves end
        self.interarrival = {"submissions": Moments(), "new_tasks": Moments()}
        self.interarrival_histogram = LogHistogram()
        self._last_submit = {"submissions": np.nan, "new_tasks": np.nan}

    def update(self, batch: LifecycleBatch) -> None:
        tasks, attempts, submits = batch.tasks, batch.attempts, np.isfinite(batch.submits)
        if not self.synthesized:
            tasks = tasks.filter(pl.col("synthesized_events") == 0)
            self.synthesized_tasks_dropped += batch.tasks.height - tasks.height
            attempts = attempts.filter(pl.col("missing_info").is_null())
            submits &= ~batch.synthesized_submit
        self._add_tasks(tasks)
        self._add_attempts(attempts)
        self._add_arrivals("submissions", batch.submits[submits])
        self._add_arrivals("new_tasks", batch.submits[submits & batch.new_task])

    def _add_tasks(self, tasks: pl.DataFrame) -> None:
        if tasks.height == 0:
            return
        events = np.minimum(tasks["task_events"].to_numpy(), 9)
        self.events += np.bincount(events - 1, minlength=9)
        self.tasks += tasks.height
        self.open_tasks += int(tasks["end_event"].null_count())
        three = tasks.filter(pl.col("task_events") == 3)
        ends = three["end_event"].fill_null(-1).to_numpy()
        for code, name in END_NAMES.items():
            self.three_event_ends[name] += int(np.count_nonzero(ends == code))
        self.three_event_ends["open"] += int(np.count_nonzero(ends == -1))
        modeled = paper_population(three)
        self.classes += np.bincount(modeled["scheduling_class"].fill_null(-1).to_numpy() + 1, minlength=5)[1:5]
        priority = modeled["priority"].to_numpy()
        self.priorities += np.bincount(priority, minlength=GOOGLE_PRIORITY_LEVELS)[:GOOGLE_PRIORITY_LEVELS]
        group = priority_group_index(priority)
        end = modeled["end_event"].to_numpy()
        makespan = modeled["makespan"].fill_null(np.nan).to_numpy()
        schedule, stop = modeled["schedule"].to_numpy(), modeled["end"].to_numpy()
        for name, code in MODELED_ENDS.items():
            chosen = end == code
            self.makespans[name].add(makespan[chosen], group[chosen], schedule[chosen], stop[chosen])

    def _add_attempts(self, attempts: pl.DataFrame) -> None:
        end = attempts["end_event"].fill_null(-1).to_numpy()
        schedule = attempts["schedule"].fill_null(np.nan).to_numpy()
        stop = attempts["end"].fill_null(np.nan).to_numpy()
        times = np.concatenate([schedule, stop])
        self.last_time = max(self.last_time, float(np.max(times, initial=0.0, where=np.isfinite(times))))
        for name, code in MODELED_ENDS.items():
            chosen = end == code
            self.running[name].add(schedule[chosen], stop[chosen])

    def running_series(self, end: str) -> tuple[np.ndarray, np.ndarray]:
        """Tasks running at each sample (Figs. 5, 6) of the attempts ended by ``end``, up to the
        latest time of any attempt."""
        return self.running[end].series(self.last_time)

    def _add_arrivals(self, kind: str, times: np.ndarray) -> None:
        if len(times) == 0:
            return
        gaps = np.diff(np.concatenate(([self._last_submit[kind]], times)))
        gaps = np.round(gaps[~np.isnan(gaps)], 6)  # times are whole microseconds
        self.interarrival[kind].add(gaps)
        if kind == "submissions":
            self.interarrival_histogram.add(gaps)
        self._last_submit[kind] = times[-1]

    def tables(self) -> dict[str, Any]:
        """All tables as plain data (what ``--json`` writes)."""
        population = int(self.classes.sum())
        groups = np.zeros(len(GROUPS), dtype=np.int64)
        np.add.at(groups, priority_group_index(np.arange(GOOGLE_PRIORITY_LEVELS)), self.priorities)
        three = sum(self.three_event_ends.values())

        def share(counts: np.ndarray | list, total: int) -> list[float]:
            return [100.0 * c / total if total else float("nan") for c in counts]

        return {
            "table1_events_per_task": {
                "events": EVENT_COUNTS,
                "tasks": self.events.tolist(),
                "total": self.tasks,
                "open_at_end": self.open_tasks,
                **({} if self.synthesized else {"synthesized_tasks_dropped": self.synthesized_tasks_dropped}),
            },
            "table2_end_of_three_event_tasks": {
                "event": list(self.three_event_ends),
                "tasks": list(self.three_event_ends.values()),
                "percent": share(list(self.three_event_ends.values()), three),
                "total": three,
            },
            "table3_scheduling_class": {
                "class": list(range(SCHEDULING_CLASSES)),
                "tasks": self.classes.tolist(),
                "percent": share(self.classes, population),
                "total": population,
            },
            "table4_priority": {"priority": list(range(GOOGLE_PRIORITY_LEVELS)), "tasks": self.priorities.tolist()},
            "table5_priority_group": {
                "group": GROUPS,
                "priorities": [f"{low}-{high}" if low != high else str(low) for low, high in PRIORITY_GROUPS.values()],
                "tasks": groups.tolist(),
                "percent": share(groups, population),
            },
            "table6_makespan_finish": self.makespans["finish"].table(),
            "table7_makespan_kill": self.makespans["kill"].table(),
            "interarrival": {
                kind: {"count": moments.count, "mean": moments.mean if moments.count else float("nan")}
                for kind, moments in self.interarrival.items()
            },
        }
