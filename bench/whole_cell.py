"""Benchmark: the stock Batsim 4.2.1 against ours with the patch of ``engine/``, on the trace's
first hour with its initial state, then the whole cell with the patched binary.

For each sampled cell (``trace convert --end HOUR --sample-cell N --seed 1`` on ``platform
--machines N``), both binaries run the same replay with the Google-cell scheduler and ``-E``: the
stock one with its per-event energy sweep, the patched one without it (its energy computed from
the power-state changes). It prints each run's wall time (the ``run`` command's simulation, the
scheduler's process included) and Batsim's peak memory, the ratio stock / patched, the two
energies and whether the jobs ended the same. Then the patched binary alone runs the whole cell
(``platforms/google-2011-cell.xml``) on the same hour, and on any ``--extra`` workload, each
timed as the ``batsim-google run`` command a user types (process start and metrics included).

    uv run python -m bench.whole_cell [--trace ../shared/data/google-2011] [--machines 512 1024 2048]
        [--hour 3600] [--no-full-cell] [--extra WORKLOAD:HORIZON ...] [--stock BATSIM] [--patched BATSIM]

The binaries default to ``batsim`` and ``batsim-patched``, or ``$BATSIM_STOCK`` and
``$BATSIM_PATCHED`` when set (docs/batsim.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from batsim_google.simulation.batsim_binary import BatsimBinary, batsim_binary, binary_name
from batsim_google.simulation.cost_model import estimate, read_workload_cost

REPO = Path(__file__).resolve().parents[1]
CELL = REPO / "platforms" / "google-2011-cell.xml"
MB = 1 << 20


def command(*arguments: object) -> list[str]:
    """The ``batsim-google`` command a user types, in this environment."""
    return [str(Path(sys.executable).parent / "batsim-google"), *map(str, arguments)]


def run_cli(*arguments: object, timeout: float) -> tuple[float, str]:
    """(wall seconds, standard output) of one ``batsim-google`` command."""
    started = time.monotonic()
    done = subprocess.run(command(*arguments), capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command(*arguments))} failed:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return time.monotonic() - started, done.stdout


def simulate(
    binary: BatsimBinary, platform: Path, workload: Path, output: Path, timeout: float, horizon: float
) -> dict:
    """One ``run`` up to ``horizon`` (the services alive then are censored, not run for days): its
    wall time, Batsim's peak memory and the metrics."""
    wall, printed = run_cli(
        "run", "--platform", platform, "--workload", workload, "-o", output, "--batsim", binary.path,
        "--horizon", horizon, "--no-progress", "--no-figures", "--timeout", timeout, timeout=timeout + 600,
    )  # fmt: skip
    metrics = json.loads((output / "metrics.json").read_text())
    return {
        "wall": wall,
        "peak": int((output / "batsim_peak_rss").read_text()),
        "metrics": metrics,
        "balanced": "accounting does not balance" not in printed,
    }


def job_differences(first: Path, second: Path) -> str:
    """Whether two runs' jobs ended the same, their largest time gap and how many ran elsewhere."""
    columns = ["job_id", "final_state", "starting_time", "finish_time", "allocated_resources"]
    schema = {"job_id": pl.String, "allocated_resources": pl.String}
    jobs = [
        pl.read_csv(path / "out_jobs.csv", columns=columns, schema_overrides=schema).sort("job_id")
        for path in (first, second)
    ]
    same = jobs[0].select("job_id", "final_state").equals(jobs[1].select("job_id", "final_state"))
    gap = max(float((jobs[0][c] - jobs[1][c]).abs().max() or 0.0) for c in columns[2:4])
    moved = int((jobs[0]["allocated_resources"] != jobs[1]["allocated_resources"]).sum())
    return f"same jobs and final states {same}, largest time gap {gap:.2g} s, {moved} jobs on other machines"


def describe(name: str, workload: Path, machines: int, binary: BatsimBinary, run: dict) -> str:
    predicted = estimate(read_workload_cost(workload), machines, binary.kind)
    energy = run["metrics"]["energy_j"]
    return (
        f"{name:<28} {run['wall']:8.1f} s (predicted {predicted.wall_seconds:7.1f} s, "
        f"{run['wall'] / predicted.wall_seconds:4.2f}x)  peak {run['peak'] / MB:7.0f} MB  "
        f"energy {energy:.6g} J  balanced {run['balanced']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=REPO.parent / "shared" / "data" / "google-2011")
    parser.add_argument("--machines", type=int, nargs="*", default=[512, 1024, 2048])
    parser.add_argument("--hour", type=float, default=3600.0, help="the window's end, seconds")
    parser.add_argument("--stock", default=binary_name("stock"))
    parser.add_argument("--patched", default=binary_name("patched"))
    parser.add_argument("--no-full-cell", action="store_true", help="skip the patched whole-cell hour")
    parser.add_argument(
        "--extra", nargs="*", default=[], help="more workloads for the whole cell, each PATH:HORIZON (seconds)"
    )
    parser.add_argument("--timeout", type=float, default=7200.0)
    args = parser.parse_args()
    try:
        stock, patched = batsim_binary(args.stock), batsim_binary(args.patched)
    except Exception as error:  # noqa: BLE001 (any reason: say it and stop)
        print(f"needs a stock and a patched Batsim ({error}); skipped")
        return
    if stock.patched or not patched.patched:
        print(f"{stock.describe()} / {patched.describe()}: not a stock and a patched binary; skipped")
        return
    print(f"stock:   {stock.describe()}\npatched: {patched.describe()}")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for machines in args.machines:
            platform, workload = folder / f"cell-{machines}.xml", folder / f"hour-{machines}.json"
            run_cli("platform", "--machines", machines, "-o", platform, timeout=600)
            run_cli(
                "trace", "convert", args.trace, "--end", args.hour, "--sample-cell", machines, "--seed", 1,
                "-o", workload, timeout=1800,
            )  # fmt: skip
            runs = {
                name: simulate(binary, platform, workload, folder / f"{name}-{machines}", args.timeout, args.hour)
                for name, binary in (("stock", stock), ("patched", patched))
            }
            for name, binary in (("stock", stock), ("patched", patched)):
                print(describe(f"{machines} machines, {name}", workload, machines, binary, runs[name]))
            energies = [runs[name]["metrics"]["batsim_energy_j"] for name in ("stock", "patched")]
            print(
                f"{machines} machines: stock / patched wall {runs['stock']['wall'] / runs['patched']['wall']:.2f}x, "
                f"peak {runs['stock']['peak'] / runs['patched']['peak']:.2f}x; energy (sweep / power states) "
                f"{energies[0] / energies[1] - 1:+.2e}; "
                f"{job_differences(folder / f'stock-{machines}', folder / f'patched-{machines}')}"
            )
        cell_workloads = [] if args.no_full_cell else [(folder / "hour-cell.json", args.hour)]
        if cell_workloads:
            run_cli("trace", "convert", args.trace, "--end", args.hour, "-o", cell_workloads[0][0], timeout=1800)
        for text in args.extra:
            path, _, horizon = text.rpartition(":")
            cell_workloads.append((Path(path), float(horizon)))
        for index, (workload, horizon) in enumerate(cell_workloads):
            run = simulate(patched, CELL, workload, folder / f"cell-{index}", args.timeout, horizon)
            print(describe(f"whole cell, {workload.name} to {horizon:g} s", workload, 12_583, patched, run))


if __name__ == "__main__":
    main()
