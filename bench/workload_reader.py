"""Benchmark: what the workload reader's input checks cost, against the plain stream they guard.

A generated workload of ``--tasks`` tasks is read (best of ``--rounds``) four ways, in this process:
the plain ijson pass over its jobs (the baseline: what the reader did before it checked keys), the
same pass building objects that note a repeated key, the vectorized shape scan (nesting depth and
the top level's keys), and the whole reader (shape, jobs, fields, profiles; cache bypassed). Then a
200 KB file of 100,000 nested ``[`` is refused: the time it takes, where ijson alone would need
memory in the square of the depth.

    uv run python -m bench.workload_reader [--tasks 300000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import ijson

from batsim_google.errors import InputFileError
from batsim_google.fitting import batsim_input
from batsim_google.fitting.json_shape import check_json_shape
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law


def _best(rounds: int, work) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def _jobs_pass(path: Path, map_type: type) -> None:
    with path.open("rb") as handle:
        for _ in ijson.items(handle, "jobs.item", use_float=True, map_type=map_type):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workload.json"
        write_generated_workload(
            path, preset("google"), load_request_law(), 1, Generation(tasks=arguments.tasks, nb_res=64)
        )
        size = path.stat().st_size
        baseline = _best(arguments.rounds, lambda: _jobs_pass(path, dict))
        timings = {
            "jobs, repeated keys noted": _best(arguments.rounds, lambda: _jobs_pass(path, batsim_input._Object)),
            "shape scan (depth, top keys)": _best(arguments.rounds, lambda: check_json_shape(path)),
            "whole reader": _best(arguments.rounds, lambda: batsim_input._read_file.__wrapped__(path, 0, 0, str(path))),
        }
        print(f"{arguments.tasks:,} tasks, {size / 1e6:.1f} MB; baseline: plain ijson jobs pass {baseline:.3f} s")
        print(f"{'step':32} {'seconds':>8} {'x baseline':>11}")
        for name, seconds in timings.items():
            print(f"{name:32} {seconds:8.3f} {seconds / baseline:11.2f}")
        nested = Path(folder) / "nested.json"
        nested.write_text("[" * 100_000 + "]" * 100_000)
        started = time.perf_counter()
        try:
            batsim_input.read_workload_file(nested)
        except InputFileError as error:
            print(f"100,000 nested [ (200 KB) refused in {time.perf_counter() - started:.3f} s: {error}")


if __name__ == "__main__":
    main()
