"""Benchmark: start-up of the command line and of the scheduler process, as whole processes.

Each command runs ``--runs`` times in a fresh interpreter (``generate --tasks 1`` is the start-up
of a real generation: its laws and writer loaded); the figures printed are the median,
min and max wall times and the median's ratio to the baseline, measured in the same run: importing
the libraries every command imported at start-up before they were imported where they are used.

    uv run python -m bench.startup [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = str(Path(sys.executable).with_name("batsim-google"))
BASELINE = "import scipy.stats, polars, pandas, sklearn.cluster, dask.distributed, matplotlib.pyplot"


def commands(folder: Path) -> dict[str, list[str]]:
    """The processes timed, by name; ``generate`` writes its one task into ``folder``."""
    return {
        "heavy libraries (baseline)": [sys.executable, "-c", BASELINE],
        "batsim-google --help": [CLI, "--help"],
        "batsim-google generate --help": [CLI, "generate", "--help"],
        "generate --tasks 1": [CLI, "generate", "--tasks", "1", "-o", str(folder / "w.json"), "--no-progress"],
        "scheduler import (googleCell)": [sys.executable, "-c", "import batsim_google.simulation.googleCell"],
    }


def wall_times(command: list[str], runs: int) -> list[float]:
    """Seconds each of ``runs`` runs of ``command`` took, start to exit."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="Runs of each command.")
    runs = parser.parse_args().runs
    baseline = None
    print(f"{'process':<32}{'median s':>10}{'min s':>8}{'max s':>8}{'/ baseline':>12}")
    with tempfile.TemporaryDirectory() as folder:
        for name, command in commands(Path(folder)).items():
            times = wall_times(command, runs)
            median = statistics.median(times)
            baseline = baseline or median
            print(f"{name:<32}{median:>10.3f}{min(times):>8.3f}{max(times):>8.3f}{median / baseline:>12.3f}")


if __name__ == "__main__":
    main()
