"""Throughput of trace reading, statistics and conversion against plain gzip decompression.

    uv run python bench/trace.py [PART_FILES...] [--rounds 3] [--workers 2]

Every measurement runs in a fresh process (so its peak memory is its own), pinned to as many cores
as it has workers, over the same files, in rounds that alternate the floor and the targets; the
best time of the rounds is kept (other work on the machine only slows a round down). Throughput is
MB of compressed input per second; the floor is gzip decompression of the same files in Python
(zlib, one core), and the ``gzip -dc`` command is shown for reference. Target: the trace paths at
>= 50 % of the floor on one core, peak memory flat in the length of the input.
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PARTS = sorted((REPO.parent / "shared" / "data" / "google-2011" / "task_events").glob("part-*.csv.gz"))


def gunzip(files: list[Path], workers: int) -> None:
    for path in files:
        with gzip.open(path, "rb") as handle:
            while handle.read(1 << 20):
                pass


def gzip_command(files: list[Path], workers: int) -> None:
    for path in files:
        subprocess.run(["gzip", "-dc", str(path)], stdout=subprocess.DEVNULL, check=True)


def read(files: list[Path], workers: int) -> None:
    from batsim_google.trace.accounting import RowAccount
    from batsim_google.trace.reader import read_batches

    for _ in read_batches(files, "task_events", account=RowAccount(), workers=workers):
        pass


def stats(files: list[Path], workers: int) -> None:
    from batsim_google.trace.accounting import RowAccount
    from batsim_google.trace.lifecycle import rebuild
    from batsim_google.trace.stats import TraceStats

    accumulator = TraceStats()
    for batch in rebuild(files, RowAccount(), workers=workers):
        accumulator.update(batch)
    accumulator.tables()


def convert(files: list[Path], workers: int) -> None:
    from batsim_google.trace.accounting import RowAccount
    from batsim_google.trace.convert import Selection, convert_trace

    with tempfile.TemporaryDirectory() as folder:
        convert_trace(files, Path(folder) / "w.json", Selection(), RowAccount(), nb_res=12583, workers=workers)


MEASURES = {"gunzip (floor)": gunzip, "gzip -dc": gzip_command, "read": read, "stats": stats, "convert": convert}


def _child(name: str, files: list[Path], workers: int) -> tuple[float, float]:
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:workers]))  # "one core" means one
    start = time.perf_counter()
    MEASURES[name](files, workers)
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(name: str, files: list[Path], workers: int = 1) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one run in a fresh process (imports done before timing)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=_warm) as pool:
        return pool.submit(_child, name, files, workers).result()


def _warm() -> None:
    import batsim_google.trace.convert  # noqa: F401  (import cost is not throughput)
    import batsim_google.trace.stats  # noqa: F401


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_PARTS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="threads for the parallel runs")
    args = parser.parse_args()
    if not args.files:
        sys.exit("no part files given and none found in ../shared/data/google-2011/task_events")
    megabytes = sum(path.stat().st_size for path in args.files) / 1e6
    runs = [(name, 1) for name in MEASURES if name != "gzip -dc" or shutil.which("gzip")]
    runs += [(name, args.workers) for name in ("read", "stats", "convert")]
    best: dict[tuple[str, int], tuple[float, float]] = {}
    for _ in range(args.rounds):
        for name, workers in runs:
            seconds, peak = measure(name, args.files, workers)
            previous = best.get((name, workers), (float("inf"), 0.0))
            best[(name, workers)] = (min(seconds, previous[0]), max(peak, previous[1]))
    floor = best[("gunzip (floor)", 1)][0]
    print(f"{len(args.files)} files, {megabytes:.1f} MB compressed; best of {args.rounds} rounds; "
          f"{multiprocessing.cpu_count()} cores")
    print(f"{'measure':<18}{'workers':>8}{'seconds':>10}{'MB/s':>9}{'vs floor':>10}{'peak MB':>10}")
    for (name, workers), (seconds, peak) in best.items():
        print(f"{name:<18}{workers:>8}{seconds:>10.3f}{megabytes / seconds:>9.1f}{floor / seconds:>9.0%}{peak:>10.0f}")
    if len(args.files) > 1:  # memory must not grow with the input: compare with the first part alone
        first = args.files[:1]
        print(f"peak memory of convert on {first[0].name} alone: {measure('convert', first)[1]:.0f} MB; "
              f"python with the package imported: {measure('gunzip (floor)', first)[1]:.0f} MB")


if __name__ == "__main__":
    main()
