"""Benchmark: what a ``run`` costs on this machine, and how close the estimator comes.

Batsim 4.2.1 forces SimGrid's ``ptask_L07`` model, which scans every running action at each
simulation step, so with the stock binary a run costs about (jobs running) x (steps); the patched
one (``engine/``) waits on timers instead, and costs a message each way per step. Both add a
start-up that grows with the machines and a cost per job (its messages, its placement, its line in
the outputs and metrics). Each machine count is measured with six workloads, each run by the
whole ``batsim-google run`` command with its defaults (energy, metrics, figures) on the platform
``batsim-google platform --machines N`` writes; the four synthetic ones hold 1-machine ``delay``
tasks that fit at once:

- ``empty``: one job (start-up: platform loading, the scheduler's process);
- ``steps``: ``--tasks`` short tasks (0.5 s), one a second: 2 steps a task, one job at a time;
- ``burst``: ``--residents`` jobs submitted at time 0 that run past the tasks;
- ``both``: the residents and the tasks together;
- ``google``: ``--google-tasks`` tasks of the ``google`` model at the cell's load per machine;
- ``warm``: ``--warm-duration`` seconds of the ``google-2011-cell`` preset at the cell's load per
  machine, warm-started (the cell full from time 0, as a replay's initial state fills it), run
  to that horizon: what the synthetic jobs lack, placements in a full cell, evictions, restarts;
- ``stress``: the same at ``--stress`` times the cell's load per machine: a queue that the
  scheduler tries at each pass, which :mod:`batsim_google.simulation.contention` predicts.

Each run prints its wall time (and the CPU time of all its processes) and Batsim's peak memory
against the estimator's prediction (with the contention it plays: the queue, the restarts) (:mod:`batsim_google.simulation.cost_model`, whose
coefficients were measured once by this benchmark), then the coefficients fitted (least squares)
to this run's measures, to store in ``COEFFICIENTS`` when the machine changes. On a machine shared
with other work, ``--fit-on cpu`` fits the CPU seconds instead: Batsim and the scheduler take
turns, so alone the command's wall time is about its CPU time. The job counts are scaled down
from the real cell's (~130,000 tasks at once) so that the whole benchmark takes minutes, not hours.

    uv run python -m bench.batsim_cost [--machines 512 2048 12583] [--residents 8000] [--tasks 1000] [--google-tasks 10000] [--warm-duration 600] [--stress 2] [--fit-on cpu]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from batsim_google.generation.workload import (
    Generation,
    cell_load_scale,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.cell import google_2011_cell
from batsim_google.platform.energy import load_energy_model
from batsim_google.platform.simgrid_xml import read_hosts, write_platform
from batsim_google.simulation.batsim_binary import batsim_binary
from batsim_google.simulation.contention import Contention
from batsim_google.simulation.cost_model import (
    COEFFICIENTS,
    MEASURED_ON,
    STEP_SECONDS,
    Coefficients,
    WorkloadCost,
    cell_capacity,
    estimate,
    read_contention,
    read_workload_cost,
)
from batsim_google.simulation.runner import SimulationError

MB = 1 << 20
#: The estimator's target: within this factor of the measured wall time and memory.
MAX_RATIO = 1.5
#: A task's makespan and the time between two tasks' submissions, seconds.
TASK_DELAY, TASK_INTERVAL = 0.5, 1.0


def write_workload(path: Path, machines: int, residents: int, tasks: int) -> Path:
    """``residents`` jobs at time 0 lasting past the tasks, then ``tasks`` short ones, one a second."""
    horizon = tasks * TASK_INTERVAL + 10.0
    jobs = [(0.0, horizon) for _ in range(residents)]
    jobs += [(1.0 + index * TASK_INTERVAL, TASK_DELAY) for index in range(tasks)]
    jobs = jobs or [(0.0, TASK_DELAY)]
    request = {"class": "task", "kind": "task", "priority": 0.5, "cpu": 1e-4, "memory": 1e-4}
    lines = [
        {"id": index, "subtime": submit, "res": 1, "profile": f"d{delay:g}", "walltime": -1, **request}
        for index, (submit, delay) in enumerate(jobs)
    ]
    profiles = {f"d{delay:g}": {"type": "delay", "delay": delay} for delay in {delay for _, delay in jobs}}
    path.write_text(json.dumps({"nb_res": machines, "jobs": lines, "profiles": profiles}))
    return path


def fit(rows: list[tuple[int, WorkloadCost, Contention, float, float]], patched: bool) -> Coefficients:
    """Least squares of the cost model's terms over the measured runs (machines, cost, contention,
    seconds, peak), on relative errors, so that short runs weigh as much as long ones. The stock
    binary pays per job-step (its delay jobs are model actions SimGrid scans at each step), the
    patched one per step (a message each way), its delay jobs being timers, and per task waiting
    in the queue at a step; a restart is one more job and one more step."""
    import numpy as np

    machines = np.array([row[0] for row in rows], dtype=float)
    jobs = np.array([row[1].jobs + row[2].restarts for row in rows], dtype=float)
    seconds = np.array([row[3] for row in rows])
    peak = np.array([row[4] for row in rows])

    def relative_fit(columns: list, measured: np.ndarray, known: np.ndarray | float = 0.0) -> list[float]:
        """The coefficients of a start-up, the machines and the columns, with the ``known`` part
        of each measure taken out."""
        terms = np.column_stack([np.ones_like(machines), machines, *columns]) / measured[:, None]
        return [float(value) for value in np.linalg.lstsq(terms, 1.0 - known / measured, rcond=None)[0]]

    running = [row[1].peak_running for row in rows]
    if patched:
        # the step's cost shows in long runs only, whose steps outweigh their start-up: it is theirs
        steps = np.array([row[2].steps + row[2].restarts for row in rows], dtype=float) * STEP_SECONDS
        startup, per_machine, per_job, per_queued = relative_fit(
            [jobs, [row[2].queued_task_steps for row in rows]], seconds, steps
        )
        time_terms = (startup, per_machine, per_job, 0.0, STEP_SECONDS, per_queued)
        # these runs' jobs mostly run to their end: what a loaded job keeps once ended is
        # bench.streaming's measure (--per-job), as what a streamed one keeps
        per_job_bytes = COEFFICIENTS["patched"].bytes_per_job
        startup_bytes, machine_bytes, running_bytes = relative_fit([running], peak, jobs * per_job_bytes)
        memory = (startup_bytes, machine_bytes, per_job_bytes, running_bytes)
    else:
        time_terms = (*relative_fit([jobs, [row[1].job_steps for row in rows]], seconds), 0.0, 0.0)
        memory = relative_fit([jobs, running], peak)
    # a streamed run's shares are bench.streaming's measure (--per-job) and the long streamed runs', not these runs'
    kept = COEFFICIENTS["patched" if patched else "stock"]
    return Coefficients(*time_terms, *memory, kept.bytes_per_streamed_job, kept.bytes_per_streamed_running_job)


def run_command(
    platform: Path, workload: Path, output: Path, batsim: str, timeout: float, horizon: float | None = None
) -> tuple[float, float, int]:
    """``batsim-google run`` with its defaults (energy, metrics, figures): its wall seconds, the CPU
    seconds of the command and every process it started, and Batsim's peak memory (bytes)."""
    import resource

    command = [str(Path(sys.executable).with_name("batsim-google")), "run", "--platform", str(platform)]
    command += ["--workload", str(workload), "-o", str(output), "--batsim", batsim, "--no-progress"]
    command += ["--timeout", str(timeout)] + (["--horizon", str(horizon)] if horizon else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int((output / "batsim_peak_rss").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, nargs="+", default=[512, 2048, 12_583])
    parser.add_argument("--residents", type=int, default=8000, help="jobs at time 0 (the cell holds ~130,000)")
    parser.add_argument("--tasks", type=int, default=1000, help="short tasks, one a second")
    parser.add_argument(
        "--google-tasks", type=int, default=10_000, help="tasks of the 'google' model at the cell's load per machine"
    )
    parser.add_argument(
        "--warm-duration",
        type=float,
        default=600.0,
        help="seconds of a warm-started cell (the google-2011-cell preset at its load per machine), run to that "
        "horizon: the cell full from time 0, its placements, evictions and restarts (0: not run)",
    )
    parser.add_argument(
        "--stress",
        type=float,
        default=2.0,
        help="load, in times the cell's per machine, of a second warm-started cell run to --warm-duration: "
        "a queue the scheduler tries at each pass (0: not run)",
    )
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--batsim", default="batsim", help="the binary, stock or patched (engine/)")
    parser.add_argument(
        "--fit-on",
        choices=("cpu", "wall"),
        default="wall",
        help="fit the command's wall seconds, or its CPU seconds (all its processes: on a machine shared "
        "with other work, what its wall time would be alone, as Batsim and the scheduler take turns)",
    )
    args = parser.parse_args()
    try:
        binary = batsim_binary(args.batsim)
    except SimulationError as error:
        print(f"{error}: this benchmark needs Batsim 4.2.1; skipped")
        return
    print(binary.describe())
    energy = load_energy_model()
    cases = {
        "empty": (0, 0),
        "steps": (0, args.tasks),
        "burst": (args.residents, 0),
        "both": (args.residents, args.tasks),
    }
    rows, within = [], []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for machines in args.machines:
            platform = folder / f"cell-{machines}.xml"
            write_platform(platform, google_2011_cell(machines), energy)
            workloads = {
                name: write_workload(folder / f"{name}-{machines}.json", machines, residents, tasks)
                for name, (residents, tasks) in cases.items()
            }
            workloads["google"] = folder / f"google-{machines}.json"
            write_generated_workload(
                workloads["google"],
                preset("google"),
                load_request_law(),
                1,
                Generation(tasks=args.google_tasks, nb_res=machines, arrival_scale=cell_load_scale(machines)),
            )
            horizons = dict.fromkeys(workloads)
            if args.warm_duration:
                workloads["warm"], horizons["warm"] = folder / f"warm-{machines}.json", args.warm_duration
                write_generated_workload(
                    workloads["warm"],
                    preset("google-2011-cell"),
                    load_request_law(),
                    1,
                    Generation(
                        duration=args.warm_duration, nb_res=machines, arrival_scale=cell_load_scale(machines), warm=True
                    ),
                )
            if args.warm_duration and args.stress:
                workloads["stress"], horizons["stress"] = folder / f"stress-{machines}.json", args.warm_duration
                write_generated_workload(
                    workloads["stress"],
                    preset("google-2011-cell"),
                    load_request_law(),
                    1,
                    Generation(
                        duration=args.warm_duration,
                        nb_res=machines,
                        arrival_scale=cell_load_scale(machines) / args.stress,
                        warm=True,
                    ),
                )
            capacity = cell_capacity(read_hosts(platform))
            for name, workload in workloads.items():
                wall, cpu, peak = run_command(
                    platform, workload, folder / f"out-{name}-{machines}", binary.path, args.timeout, horizons[name]
                )
                cost = read_workload_cost(workload, horizon=horizons[name])
                contention = read_contention(workload, capacity=capacity, horizon=horizons[name])
                seconds = cpu if args.fit_on == "cpu" else wall
                predicted = estimate(cost, machines, binary.kind, contention)
                ratios = (seconds / predicted.wall_seconds, peak / predicted.peak_bytes)
                within.append(all(1 / MAX_RATIO <= ratio <= MAX_RATIO for ratio in ratios))
                rows.append((machines, cost, contention, seconds, peak))
                print(
                    f"{machines:>6} machines {name:>6}: {cost.jobs:>6} jobs, {cost.steps:>6} steps, "
                    f"{cost.job_steps:>9.3g} job-steps, {cost.peak_running:>5} at once, queue up to "
                    f"{contention.peak_queue:>5}, {contention.restarts:>6.0f} restarts: {wall:7.2f} s "
                    f"({cpu:7.2f} CPU s), peak {peak / MB:6.1f} MB; predicted {predicted.wall_seconds:7.2f} s "
                    f"({ratios[0]:.2f}x), {predicted.peak_bytes / MB:6.1f} MB ({ratios[1]:.2f}x)"
                )
    fitted = fit(rows, binary.patched)
    print(f"fitted here: {fitted}")
    print(f"stored ({MEASURED_ON}): {COEFFICIENTS[binary.kind]}")
    print(f"predictions within {MAX_RATIO}x of the measures: {sum(within)} of {len(within)} runs")


if __name__ == "__main__":
    main()
