"""Benchmark: the Google-cell scheduler against pybatsim's bundled fillerSched, in real Batsim.

The same generated workload ('google' model, seed 1) on the same 512-machine cell, simulated once
with each scheduler in this run, both with Batsim's energy plugin or both without (``--energy``);
prints wall time, this scheduler's time per protocol message, and the ratio of wall times (target
<= 1.3x fillerSched on 10k tasks). Then the wall time of this scheduler alone at larger sizes, to
show how it grows with the task count, and how much of it is the scheduler's own deciding
(``bench.policy`` measures that alone, without Batsim).

The model's arrival rate is the whole 12,583-machine cell's. By default inter-arrival times are
stretched by 12,583 / 512 (``--arrival-scale``), so the 512-machine cell carries the Google cell's
load per machine, and the task count alone grows. ``--arrival-scale 1`` submits at the whole cell's
rate: 24.6 times that load, a stress test in which the cell saturates and evicts all the time.

pybatsim's schedFcfs cannot parse non-integer job ids, such as those of resubmitted jobs, hence
fillerSched. fillerSched prints its whole queue at every event, 18 GB over 10k jobs here: its
output is discarded.

    uv run python -m bench.scheduler [--tasks 10000] [--growth 50000 100000] [--arrival-scale F] [--energy] [--no-baseline] [--timeout S]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from batsim_google.generation.workload import (
    Generation,
    cell_load_scale,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation
from batsim_google.simulation.schedulers import built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings

PLATFORM = Path(__file__).resolve().parents[1] / "platforms" / "google-2011-cell-512.xml"
PLATFORM_MACHINES = 512


def add_arrival_scale(parser: argparse.ArgumentParser) -> None:
    """``--arrival-scale``, shared with ``bench.policy`` so that both replay the same workloads."""

    def positive(text: str) -> float:
        if not float(text) > 0:
            raise argparse.ArgumentTypeError(f"must be > 0 (got {text})")
        return float(text)

    parser.add_argument(
        "--arrival-scale",
        type=positive,
        default=cell_load_scale(PLATFORM_MACHINES),
        help="multiply inter-arrival times by this (default: the cell's load per machine; 1: 24.6 times that)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--growth", type=int, nargs="*", default=[50_000, 100_000])
    add_arrival_scale(parser)
    parser.add_argument("--energy", action="store_true", help="run Batsim with -E for both schedulers")
    parser.add_argument(
        "--timeout",
        type=float,
        default=6 * 3600.0,
        help="wall-clock limit of each simulation, seconds (with --arrival-scale 1, 50k tasks took 68 min here)",
    )
    parser.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_false",
        help="skip fillerSched (its 10k run takes minutes) when only the growth is wanted",
    )
    args = parser.parse_args()
    if shutil.which("batsim") is None:
        raise SystemExit("no 'batsim' on PATH: this benchmark needs Batsim 4.2.1")
    print(f"'google' model, seed 1, {PLATFORM_MACHINES} machines, inter-arrival times x {args.arrival_scale:.4g}")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        walls = {}
        for tasks in [args.tasks, *args.growth]:
            workload = folder / f"workload-{tasks}.json"
            write_generated_workload(
                workload,
                preset("google"),
                load_request_law(),
                1,
                Generation(tasks=tasks, nb_res=PLATFORM_MACHINES, arrival_scale=args.arrival_scale),
            )
            output = folder / f"google-cell-{tasks}"
            settings = SimulationSettings(timeout=args.timeout, energy_outputs=args.energy)
            run = run_scheduler(built_in(), RunInputs(PLATFORM, [workload]), output, settings)
            summary, walls[tasks] = run.summary, run.simulation.wall_seconds
            per_message = summary["decision_seconds"] / summary["messages"] * 1e6
            deciding = summary["decision_seconds"]
            print(
                f"google-cell  {tasks:>7} tasks: {walls[tasks]:8.2f} s wall, {summary['messages']} messages, "
                f"{per_message:6.1f} us deciding per message ({deciding:.1f} s, {deciding / walls[tasks]:.0%} of the wall "
                f"time; the rest is Batsim and the protocol), {summary['attempts']} attempts"
            )
            if tasks == args.tasks and args.baseline:
                filler = run_simulation(
                    Simulation(
                        PLATFORM,
                        [workload],
                        folder / f"filler-{tasks}",
                        pybatsim_scheduler("fillerSched", timeout_ms=int(args.timeout * 1000)),
                        energy=args.energy,
                        timeout=args.timeout,
                        scheduler_log=False,
                    )
                )
                print(f"fillerSched  {tasks:>7} tasks: {filler.wall_seconds:8.2f} s wall")
                print(f"ratio google-cell / fillerSched: {walls[tasks] / filler.wall_seconds:.2f}x (target <= 1.3x)")
        base = args.tasks
        for tasks in args.growth:
            print(f"growth {base} -> {tasks} tasks ({tasks / base:.0f}x): wall time {walls[tasks] / walls[base]:.1f}x")


if __name__ == "__main__":
    main()
