"""What a Batsim run will cost, known from the workload before launching.

Batsim 4.2.1 runs every job on SimGrid's ``ptask_L07`` model, which scans every running action at
each simulation step (``Model::next_occurring_event_full``): a step costs a little per job running
at that moment. The steps that count are the instants at which jobs are submitted or end; each
job also costs its messages (submission, start, end) through the scheduler. A run's wall time is
therefore about

    start-up(machines) + per-job x jobs + per-job-step x (sum over those instants of the jobs
    running then),

with the stock binary. Our patched one (``engine/``) waits on timers, so its steps cost no scan of
its delay jobs but a message each way: start-up(machines) + per-job x jobs + per-step x steps,
the step's cost measured on long runs (:data:`STEP_SECONDS`). With ``run``'s horizon, the jobs
running then end together at it. Batsim's peak memory is a start-up that grows with the machines,
plus a share per job of the workload (Batsim loads them all) and per job running at once (a
SimGrid actor and its stack). A streamed run (``run --stream-workload``) has
Batsim hold only the jobs submitted and not ended; what it keeps of each job once ended (its id,
its freed profile's name) is the per-job share instead, far smaller with the patch, which frees
the rest.

Fitted on ``bench/batsim_cost.py``'s runs, this model came within 1.5x of each (up to 8,000 jobs
at once). Batsim starts the jobs of a burst one message at a time, which costs little per job up
to about 8,000 jobs at one instant, but grows faster than the model beyond: 16,000 jobs at time 0
on 512 machines took 14.8 s and 40,000 took 231 s; the prediction is a lower bound for such
bursts. Replays of the Google trace cost about five times more per job-step than these runs
(docs/benchmarks.md), for reasons not found yet: for them the prediction is a lower bound too.
The sweep assumes no job waits (each runs from its submission for its makespan); the contention
the cell's capacity brings is played by :mod:`.contention` (:func:`read_contention`): the
restarts, each one more job and step, the steps as waiting jobs end later (none past the
horizon), the most jobs at once as played, and a cost per task waiting in the queue at each
step. The coefficients are measured once, on the machine named in :data:`MEASURED_ON`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batsim_google.errors import InputFileError
from batsim_google.simulation.contention import Contention, predict_contention

if TYPE_CHECKING:
    import numpy as np

    from batsim_google.platform.simgrid_xml import PlatformHost


#: Largest burst (jobs submitted at one instant) the model was measured on (see above).
MEASURED_BURST = 8000


@dataclass(frozen=True)
class WorkloadCost:
    """What a workload asks of Batsim: jobs, steps, job-steps, the most jobs at once, its horizon."""

    jobs: int
    #: Simulation steps: the distinct submission times plus the distinct end times.
    steps: int
    #: Sum over the steps of the jobs running at each.
    job_steps: float
    peak_running: int
    #: Most jobs submitted at one instant.
    largest_burst: int
    #: Last submission time, seconds: where a run's progress ends its count.
    horizon: float


def workload_cost(submit: np.ndarray, makespan: np.ndarray, horizon: float | None = None) -> WorkloadCost:
    """The sweep over the submissions and ends of jobs that each run from ``submit`` for ``makespan``.

    A submission instant counts the jobs running when its jobs arrive (those ending then have
    ended); an end instant counts the jobs running up to it, the ending ones included. With a
    ``horizon`` (``run --horizon``), the jobs running then are killed together at it: their ends
    are one instant, the horizon.
    """
    import numpy as np

    submit = np.asarray(submit, dtype=float)
    if submit.size == 0:
        return WorkloadCost(0, 0, 0.0, 0, 0, 0.0)
    ends = np.sort(submit + np.asarray(makespan, dtype=float))
    if horizon is not None:
        ends = np.minimum(ends, max(horizon, 0.0))
    submit = np.sort(submit)
    arrivals, bursts = np.unique(submit, return_counts=True)
    ended_by_arrival = np.searchsorted(ends, arrivals, side="right")
    at_arrival = np.searchsorted(submit, arrivals, side="left") - ended_by_arrival
    end_instants = np.unique(ends)
    at_end = np.searchsorted(submit, end_instants, side="right") - np.searchsorted(ends, end_instants, side="left")
    return WorkloadCost(
        jobs=int(submit.size),
        steps=int(arrivals.size + end_instants.size),
        job_steps=float(at_arrival.sum() + at_end.sum()),
        peak_running=int((at_arrival + bursts).max()),
        largest_burst=int(bursts.max()),
        horizon=float(submit[-1]),
    )


def workload_times(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(submission times, makespans) of a Batsim JSON workload of ``delay`` jobs, refused as Batsim
    would refuse it; a job's makespan is its profile's delay, cut at its walltime when it has one
    (services). Jobs of other profile types are refused: their durations depend on the platform
    and the network."""
    import polars as pl

    from batsim_google.fitting.batsim_input import job_times

    times = job_times(path)
    others = times["delay"].null_count()
    if others:
        raise InputFileError(
            f"{path}: estimate predicts runs of delay jobs; {others} of {times.height} jobs have other "
            f"profiles ({_other_types(path)}), whose durations depend on the platform and network: time a "
            "short run of it instead"
        )
    makespan = pl.when(pl.col("walltime") > 0).then(pl.min_horizontal("delay", "walltime")).otherwise("delay")
    times = times.select("subtime", makespan.alias("makespan"))
    return times["subtime"].to_numpy().astype(float), times["makespan"].to_numpy().astype(float)


def _other_types(path: str | Path) -> str:
    """The jobs of profiles other than ``delay``, counted by type: ``parallel 3, smpi 1``."""
    import collections

    import ijson

    with open(path, "rb") as handle:
        types = {name: str(profile.get("type")) for name, profile in ijson.kvitems(handle, "profiles")}
    with open(path, "rb") as handle:
        counts = collections.Counter(types.get(str(job.get("profile"))) for job in ijson.items(handle, "jobs.item"))
    counts.pop("delay", None)
    return ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items(), key=str))


def read_workload_cost(*paths: str | Path, horizon: float | None = None) -> WorkloadCost:
    """The sweep over every job of one or more workload files, run together (until ``horizon``)."""
    import numpy as np

    times = [workload_times(path) for path in paths]
    return workload_cost(np.concatenate([t[0] for t in times]), np.concatenate([t[1] for t in times]), horizon)


def cell_capacity(hosts: list[PlatformHost]) -> tuple[float, float]:
    """The summed ``cpu_capacity`` and ``memory_capacity`` of the computing ``hosts`` (1 each
    where not given: the largest machine, as the scheduler reads them)."""
    machines = [host for host in hosts if host.computes]
    return (
        sum(float(host.properties.get("cpu_capacity", 1.0)) for host in machines),
        sum(float(host.properties.get("memory_capacity", 1.0)) for host in machines),
    )


def read_contention(*paths: str | Path, capacity: tuple[float, float], horizon: float | None = None) -> Contention:
    """The contention of one or more workload files run together on a cell of ``capacity`` (its
    machines' CPU and memory capacities summed), by the scheduler's defaults
    (:func:`.contention.predict_contention`); a job without a priority gets the readers'
    default."""
    import numpy as np

    from batsim_google.fitting.batsim_input import DEFAULT_PRIORITY, job_requests

    times = [workload_times(path) for path in paths]
    requests = [job_requests(path) for path in paths]

    def column(name: str) -> np.ndarray:
        return np.concatenate([r[name].cast(float).fill_null(np.nan).to_numpy() for r in requests])

    priority = column("priority")
    priority[np.isnan(priority)] = DEFAULT_PRIORITY
    return predict_contention(
        np.concatenate([t[0] for t in times]),
        np.concatenate([t[1] for t in times]),
        column("cpu"),
        column("memory"),
        priority,
        capacity,
        horizon,
    )


#: Where and how the coefficients below were measured (``uv run python -m bench.batsim_cost``).
MEASURED_ON = (
    "a 2-core x86-64 Linux machine with 23 GB, shared with other work (Batsim 4.2.1 release builds, "
    "SimGrid 3.32, pybatsim front-end; bench.batsim_cost: stock 2026-11-23, its simulations without -E; patched "
    "2026-11-26, the whole run command with its defaults, in CPU seconds, its step cost 2026-11-28 on the long "
    "runs of the whole cell and of 1,024 machines, a loaded job's share 2026-11-28 on the whole cell's day, "
    "three days and week)"
)


@dataclass(frozen=True)
class Coefficients:
    """Seconds and bytes of each term of the model above, measured on one machine."""

    startup_seconds: float
    startup_seconds_per_machine: float
    seconds_per_job: float
    seconds_per_job_step: float
    #: Seconds per step (an instant at which jobs are submitted or end: one message each way).
    seconds_per_step: float
    #: Seconds per task waiting in the queue at a step (the scheduler's pass tries the queue).
    seconds_per_queued_task_step: float
    startup_bytes: float
    bytes_per_machine: float
    bytes_per_job: float
    bytes_per_running_job: float
    #: Bytes kept per job (and restart) once ended, in a streamed run.
    bytes_per_streamed_job: float
    #: Bytes per job running at once in a streamed run (registered with a profile of its own).
    bytes_per_streamed_running_job: float


#: Seconds per queued task per step of the patched binary's runs: the extra CPU seconds, over the
#: model's other terms, of two 1,024-machine warm-started runs at 1.5 and 2 times the cell's load
#: per machine (3 h; queues of up to 8,000 and 17,000 tasks), over their queued task-steps as
#: :func:`.contention.predict_contention` plays them: 2.1e-7 and 1.6e-7 s (docs/benchmarks.md).
QUEUED_TASK_STEP_SECONDS = 1.9e-7

#: Seconds per step of the patched binary's runs: Batsim's message and the scheduler's answer, about
#: 1.3 messages a step in a cell's steady state, the same on 1,024 machines as on the whole cell.
#: The least squares on relative errors of the CPU seconds of the long runs (the whole cell's hours,
#: 6 hours, day, three days and week; 1,024 machines' days and three days over five seeds), the
#: other coefficients kept (docs/benchmarks.md, "the cost of a step"). The runs of minutes
#: (bench.batsim_cost) have too few steps beside their start-up to show it; fitted on the whole
#: cell's runs alone it predicts the 1,024 machines' within 0.77x to 1.14x. The job-steps cost
#: nothing measurable: fitted beside it, 4e-10 s each.
STEP_SECONDS = 5.9e-4

#: The coefficients of each kind of binary (:attr:`~.batsim_binary.BatsimBinary.kind`): the stock
#: Batsim 4.2.1, and ours with the patch of ``engine/`` (delay jobs on timers: no job-step cost).
COEFFICIENTS = {
    "stock": Coefficients(
        startup_seconds=0.47,
        startup_seconds_per_machine=5.9e-5,
        seconds_per_job=5.2e-4,
        seconds_per_job_step=3.2e-7,
        seconds_per_step=0.0,
        seconds_per_queued_task_step=0.0,
        startup_bytes=39.7e6,
        bytes_per_machine=9.9e3,
        bytes_per_job=5.0e3,
        bytes_per_running_job=18.0e3,
        # Batsim 4.2.1 keeps every job that started, loaded or streamed: 5.6 KB each measured
        # (bench.streaming --per-job 20000 80000, docs/benchmarks.md), the loaded share.
        bytes_per_streamed_job=5.0e3,
        bytes_per_streamed_running_job=18.0e3,  # not measured streamed: the loaded share
    ),
    # bench.batsim_cost --batsim batsim-patched --fit-on cpu, 2026-11-26: the least-squares fit of its
    # 18 runs of the whole run command (energy, metrics, figures), six workloads on 512, 2,048 and
    # 12,583 machines, a warm-started cell among them; no job-step cost (timers), the step's cost
    # that of the long runs (STEP_SECONDS).
    "patched": Coefficients(
        startup_seconds=5.4,
        startup_seconds_per_machine=1.6e-4,
        seconds_per_job=1.95e-4,
        seconds_per_job_step=0.0,
        seconds_per_step=STEP_SECONDS,
        seconds_per_queued_task_step=QUEUED_TASK_STEP_SECONDS,
        startup_bytes=39.1e6,
        bytes_per_machine=10.5e3,
        # bench.streaming --per-job 20000 80000 with the patch: 2.6 KB kept per ended job loaded, and
        # streamed with --forget-ended-jobs 1 MB over 60,000 more jobs, the benchmark's resolution
        # (0.24 KB without it: its id, its freed profile's name); bench.batsim_cost's runs of
        # minutes, whose jobs mostly run to their end, cannot tell a job's share from a running one's
        bytes_per_job=2.6e3,
        bytes_per_running_job=14.5e3,
        bytes_per_streamed_job=0.02e3,
        # the streamed runs' peaks over what the model's other terms give, per job running at once
        # (2026-11-28, --forget-ended-jobs): the whole cell's day 22.8 KB, 1,024 machines' three
        # days 22.5 KB (docs/benchmarks.md, "the estimator over a week")
        bytes_per_streamed_running_job=22.6e3,
    ),
}


#: The share of the memory available that a loaded run's Batsim may be predicted to take; past
#: it, ``run`` streams the workloads (unless told): the rest is for the scheduler, ``run``'s own
#: process and the prediction's error (within 1.5x).
LOADED_SHARE_OF_MEMORY = 0.5


@dataclass(frozen=True)
class Estimate:
    """A run's predicted wall time (seconds) and Batsim's peak resident memory (bytes)."""

    wall_seconds: float
    peak_bytes: float


def estimate(
    cost: WorkloadCost,
    machines: int,
    kind: str = "stock",
    contention: Contention | None = None,
    streamed: bool = False,
) -> Estimate:
    """The run's wall time and peak memory by the model above, with a ``kind`` of binary's
    coefficients (:data:`COEFFICIENTS`); with its ``contention``, each restart is one more job
    and one more step, the steps and the most jobs at once are those played with the queue, and
    each task waiting at a step costs the scheduler's pass
    :attr:`~Coefficients.seconds_per_queued_task_step`. ``streamed``: Batsim's memory keeps
    :attr:`~Coefficients.bytes_per_streamed_job` of each job and restart instead of the loaded
    workload's share, and :attr:`~Coefficients.bytes_per_streamed_running_job` of each job running
    at once (the wall time is the same term, though the streamed runs measured took 1.05
    to 1.17 times the loaded ones': docs/benchmarks.md, "five seeds on the quiet machine")."""
    c = COEFFICIENTS[kind]
    jobs, steps, queued = float(cost.jobs), float(cost.steps), 0.0
    if contention is not None:
        jobs += contention.restarts
        steps = contention.steps + contention.restarts
        queued = contention.queued_task_steps
    wall = (
        c.startup_seconds
        + c.startup_seconds_per_machine * machines
        + c.seconds_per_job * jobs
        + c.seconds_per_job_step * cost.job_steps
        + c.seconds_per_step * steps
        + c.seconds_per_queued_task_step * queued
    )
    running = cost.peak_running if contention is None else contention.peak_running
    kept = c.bytes_per_streamed_job * jobs if streamed else c.bytes_per_job * cost.jobs
    per_running = c.bytes_per_streamed_running_job if streamed else c.bytes_per_running_job
    memory = c.startup_bytes + c.bytes_per_machine * machines + kept + per_running * running
    return Estimate(wall, memory)


def available_memory_bytes() -> float:
    """The memory this machine can give without swapping (Linux's MemAvailable), else its free pages."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def too_large_to_load(cost: WorkloadCost, machines: int, kind: str) -> tuple[float, float] | None:
    """(Batsim's predicted peak with the workload loaded whole, the memory available) where that
    peak passes :data:`LOADED_SHARE_OF_MEMORY` of it, so that ``run`` streams the workload; None
    where it fits."""
    needed, available = estimate(cost, machines, kind).peak_bytes, available_memory_bytes()
    return (needed, available) if needed > LOADED_SHARE_OF_MEMORY * available else None
