"""Benchmark: the vectorized generator against a one-task-at-a-time implementation of the same laws.

The baseline follows the model paper's listing: one scipy draw per law and per task, and the job
and its profile written to a Batsim JSON workload one at a time. Both run in this process, in the
same run, ``--runs`` times in turn; the figures printed are tasks per second for each and their
ratio, pair by pair: medians, with the spread. With
``--memory-tasks N`` it also generates N tasks in a child process and prints its peak memory
(the streamed writer must keep 10 million tasks under 1 GB). With ``--model FILE`` the generator
draws from that model file instead of the ``google`` preset, e.g. one with job-level arrivals
(jobs, then their tasks); the baseline stays the paper's listing.

    uv run python -m bench.generator [--tasks 1000000] [--baseline-tasks 50000] [--runs 5] [--memory-tasks 10000000] [--model FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.stats

from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import load_model


def one_task_at_a_time(path: Path, tasks: int, seed: int) -> None:
    """The paper's listing, task by task, with each job and profile dumped as it is drawn."""
    model = preset("google")
    requests = load_request_law()
    random.seed(seed)
    rng = np.random.default_rng(seed)
    laws = {c.kind: requests.for_kind(c.kind) for c in model.classes}
    weights = {kind: law.count / law.count.sum() for kind, law in laws.items()}
    clock = 0.0
    with path.open("w") as out, tempfile.TemporaryFile("w+") as profiles:
        out.write('{"nb_res": 12583, "jobs": [')
        for job_id in range(tasks):
            clock += scipy.stats.pareto.rvs(4, loc=-1, random_state=rng) * 3.0 * model.dynamism
            task_class = random.choices(model.classes, weights=[c.frequency for c in model.classes])[0]
            while True:
                priority = scipy.stats.expon.rvs(scale=1.0 / task_class.priority_rate, random_state=rng)
                if priority <= 1.0:
                    break
            mu = np.log(task_class.mass / task_class.disparity)
            sigma = np.sqrt(2 * (np.log(task_class.mass) - mu))
            makespan = scipy.stats.lognorm.rvs(sigma, scale=task_class.mass / task_class.disparity, random_state=rng)
            law = laws[task_class.kind]
            pick = rng.choice(len(law.count), p=weights[task_class.kind])
            job = {
                "id": job_id,
                "subtime": clock,
                "res": 1,
                "profile": str(job_id),
                "walltime": -1,
                "class": task_class.name,
                "kind": task_class.kind,
                "priority": priority,
                "cpu": float(law.cpu[pick]),
                "memory": float(law.memory[pick]),
            }
            out.write(("," if job_id else "") + json.dumps(job))
            profiles.write(
                ("," if job_id else "")
                + json.dumps(str(job_id))
                + ":"
                + json.dumps({"type": "delay", "delay": makespan})
            )
        out.write('], "profiles": {')
        profiles.seek(0)
        out.write(profiles.read())
        out.write("}}")


def peak_memory_mb(tasks: int, folder: str, model: Path | None) -> float:
    """Peak resident memory of a child process running ``batsim-google generate``."""
    output = Path(folder) / "memory.json"
    code = "from batsim_google.cli import main; main()"
    source = [] if model is None else ["--model", str(model)]
    subprocess.run(
        [sys.executable, "-c", code, "generate", *source, "--tasks", str(tasks), "-o", str(output), "--no-progress"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument(
        "--baseline-tasks", type=int, default=50_000, help="the baseline is slow: its rate is measured on fewer tasks"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--memory-tasks", type=int, default=0, help="also measure peak memory generating this many tasks"
    )
    parser.add_argument("--model", type=Path, help="model file to generate from (default: the google preset)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each, in turn: the median is printed")
    args = parser.parse_args()
    model = preset("google") if args.model is None else load_model(args.model)
    vectorized, baseline = [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.runs):  # in turn, so that a drift of the machine's speed hits both
            output = Path(folder) / "vectorized.json"
            start = time.perf_counter()
            write_generated_workload(output, model, load_request_law(), args.seed, Generation(tasks=args.tasks))
            vectorized.append(args.tasks / (time.perf_counter() - start))
            output.unlink()
            start = time.perf_counter()
            one_task_at_a_time(Path(folder) / "baseline.json", args.baseline_tasks, args.seed)
            baseline.append(args.baseline_tasks / (time.perf_counter() - start))
        memory = peak_memory_mb(args.memory_tasks, folder, args.model) if args.memory_tasks else None
    ratios = [v / b for v, b in zip(vectorized, baseline, strict=True)]
    print(f"model                : {model.name}" + (" (job-level arrivals)" if model.jobs is not None else ""))
    print(f"runs                 : {args.runs}, in turn; median (min-max)")
    print(f"vectorized generator : {args.tasks:>9} tasks  {_spread(vectorized, ',.0f')} tasks/s")
    print(f"one task at a time   : {args.baseline_tasks:>9} tasks  {_spread(baseline, ',.0f')} tasks/s")
    print(f"ratio                : {_spread(ratios, '.1f')}x, pair by pair (target >= 100x)")
    if memory is not None:
        print(f"peak memory, {args.memory_tasks} tasks: {memory:,.0f} MB (target < 1 GB)")


def _spread(values: list[float], form: str) -> str:
    return f"{statistics.median(values):{form}} ({min(values):{form}}-{max(values):{form}})"


if __name__ == "__main__":
    main()
