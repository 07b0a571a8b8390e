"""Throughput of trace reading, statistics and conversion against plain gzip decompression.

    uv run python -m bench.trace [PART_FILES...] [--rounds 3] [--workers 2]

Every measurement runs in a fresh process (so its peak memory is its own), pinned to its cores
before its imports, over the same files, in rounds that alternate the floor and the targets; the
best time of the rounds is kept (other work on the machine only slows a round down), and apart
from it the least CPU time (all threads and child processes; less sensitive to a busy machine).
Imports, pyarrow's lazy import of pandas included, come before timing. Throughput is MB of
compressed input per second; the floor is gzip decompression of the same files in Python (zlib, one core); the
``gzip -dc`` command, Arrow's CSV parse alone (of the reader's chunks of text) and polars' CSV
reader alone are shown for reference. ``read`` is the reader (parse, checks, accounting), ``stats`` adds the lifecycles and
the tables, ``convert`` the lifecycles and the Batsim workload; ``write JSON`` is convert's last
stage alone, from attempt tables rebuilt before timing. Runs use one core, then all cores
with one worker and with ``--workers`` (reading runs in a
thread ahead of the lifecycles). Target: >= 50 % of the floor, peak memory flat in the length of
the input.
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


def arrow_csv(files: list[Path], workers: int) -> None:
    """Arrow's typed CSV parse alone, as the reader's fast path calls it: the reader's own floor."""
    from batsim_google.trace.reader import parse_csv
    from batsim_google.trace.schema import DEFAULT_COLUMNS
    from batsim_google.trace.text_chunks import TextChunks

    columns = DEFAULT_COLUMNS["task_events"]
    for path in files:
        for chunk in TextChunks(path):
            parse_csv(chunk.data, columns)


def polars_csv(files: list[Path], workers: int) -> None:
    """polars' CSV reader on the gzip parts (its own decompression and parse, nothing else): the
    fastest typed parse we found, to show what any reader built on a library parser can reach."""
    import polars as pl
    import pyarrow as pa

    from batsim_google.trace.schema import DEFAULT_COLUMNS

    columns = DEFAULT_COLUMNS["task_events"]
    schema = pl.from_arrow(pa.schema(columns).empty_table()).schema
    for path in files:
        pl.read_csv(path, has_header=False, new_columns=list(schema), schema_overrides=schema, quote_char=None)


def read(files: list[Path], workers: int) -> None:
    from batsim_google.trace.reader import read_batches
    from batsim_google.trace.row_accounting import RowAccount

    for _ in read_batches(files, "task_events", account=RowAccount(), workers=workers):
        pass


def stats(files: list[Path], workers: int) -> None:
    from batsim_google.trace.rebuild import rebuild
    from batsim_google.trace.row_accounting import RowAccount
    from batsim_google.trace.stats import TraceStats

    accumulator = TraceStats()
    for batch in rebuild(files, RowAccount(), workers=workers):
        accumulator.update(batch)
    accumulator.tables()


def convert(files: list[Path], workers: int) -> None:
    from batsim_google.trace.convert import Selection, convert_trace
    from batsim_google.trace.row_accounting import RowAccount

    with tempfile.TemporaryDirectory() as folder:
        convert_trace(files, Path(folder) / "w.json", Selection(), RowAccount(), nb_res=12583, workers=workers)


def attempt_tables(files: list[Path], workers: int) -> list:
    """The attempt tables of the files, rebuilt before timing: the input of ``write JSON``."""
    from batsim_google.trace.rebuild import rebuild
    from batsim_google.trace.row_accounting import RowAccount

    return [batch.attempts for batch in rebuild(files, RowAccount())]


def write_json(tables: list, workers: int) -> None:
    """convert's last stage alone: selecting the attempts and writing the Batsim workload."""
    from batsim_google.trace.convert import Selection, write_records

    with tempfile.TemporaryDirectory() as folder:
        write_records(Path(folder) / "w.json", tables, Selection(), nb_res=12583)


MEASURES = {
    "gunzip (floor)": gunzip,
    "gzip -dc": gzip_command,
    "arrow csv": arrow_csv,
    "polars csv": polars_csv,
    "read": read,
    "stats": stats,
    "convert": convert,
    "write JSON": write_json,
}
#: Input prepared before timing (default: the files themselves).
PREPARED = {"write JSON": attempt_tables}


def _child(name: str, files: list[Path], workers: int) -> tuple[float, float, float]:
    data = PREPARED.get(name, lambda files, workers: files)(files, workers)
    start, cpu = time.perf_counter(), sum(os.times()[:4])  # this process and its children
    MEASURES[name](data, workers)
    seconds, cpu = time.perf_counter() - start, sum(os.times()[:4]) - cpu
    return seconds, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(name: str, files: list[Path], workers: int = 1, cores: int = 1) -> tuple[float, float, float]:
    """(seconds, CPU seconds of all its threads, peak RSS in MB) of one run in a fresh process
    (imports done before timing)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=_warm, initargs=(cores,)) as pool:
        return pool.submit(_child, name, files, workers).result()


def _warm(cores: int) -> None:
    # "one core" means one, from before the imports: thread pools (polars, Arrow) size themselves
    # on the cores they see then
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
    import batsim_google.trace.convert  # noqa: F401  (import cost is not throughput)
    import batsim_google.trace.stats  # noqa: F401

    try:  # pyarrow imports pandas at its first conversion to numpy: seconds without bytecode cache
        import pandas  # noqa: F401
    except ImportError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_PARTS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="threads for the parallel runs")
    args = parser.parse_args()
    if not args.files:
        sys.exit("no part files given and none found in ../shared/data/google-2011/task_events")
    megabytes = sum(path.stat().st_size for path in args.files) / 1e6
    cores = len(os.sched_getaffinity(0))
    runs = [(name, 1, 1) for name in MEASURES if name != "gzip -dc" or shutil.which("gzip")]
    if cores > 1:  # one worker, but Arrow's reading thread may decompress on another core
        runs += [(name, 1, cores) for name in ("arrow csv", "read", "stats", "convert")]
        runs += [(name, args.workers, cores) for name in ("read", "stats", "convert")]
    best: dict[tuple[str, int, int], tuple[float, float, float]] = {}
    for _ in range(args.rounds):
        for name, workers, use in runs:
            seconds, cpu, peak = measure(name, args.files, workers, use)
            previous = best.get((name, workers, use), (float("inf"), float("inf"), 0.0))
            best[(name, workers, use)] = (min(seconds, previous[0]), min(cpu, previous[1]), max(peak, previous[2]))
    floor = best[("gunzip (floor)", 1, 1)][0]
    print(
        f"{len(args.files)} files, {megabytes:.1f} MB compressed; best of {args.rounds} rounds; {cores} cores; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'measure':<16}{'workers':>8}{'cores':>6}{'seconds':>9}{'cpu s':>7}{'MB/s':>7}{'vs floor':>9}{'peak MB':>9}"
    )
    for (name, workers, use), (seconds, cpu, peak) in best.items():
        print(
            f"{name:<16}{workers:>8}{use:>6}{seconds:>9.3f}{cpu:>7.3f}{megabytes / seconds:>7.1f}{floor / seconds:>9.0%}{peak:>9.0f}"
        )
    if len(args.files) > 1:  # memory must not grow with the input: compare with the first part alone
        first = args.files[:1]
        print(
            f"peak memory of convert on {first[0].name} alone: {measure('convert', first)[2]:.0f} MB; "
            f"python with the package imported: {measure('gunzip (floor)', first)[2]:.0f} MB"
        )


if __name__ == "__main__":
    main()
