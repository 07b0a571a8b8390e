"""Benchmark: a generated cell loaded whole by Batsim against the same workload streamed (``run
--stream-workload``), over a short and a long span, for memory bounded by what runs.

For each seed (``--seeds``) and span (``--spans``, seconds), a warm-started workload of the 2011
cell's model at its load per machine (``generate --preset google-2011-cell --warm-start --nb-res N
--arrival-scale 12583/N --duration SPAN --seed SEED``) runs on ``platform --machines N`` up to its
span (``--horizon``), loaded and streamed (``--modes``), one run at a time. Each run prints its wall
time (the ``run`` command a user types, process start and metrics included), its CPU seconds
(Batsim's and the scheduler's included), Batsim's peak resident memory (the ``batsim_peak_rss`` the
run writes) and the scheduler's (its ``VmHWM``, read from ``/proc`` while it runs), and whether the
streamed run's tasks ended as the loaded run's. Then the ratios: long span / short span, per mode
(the issue's targets: peak memory <= 1.25x, wall <= 3.3x for 3 days over 1), with the workload's
own growth beside them (jobs, attempts, the messages Batsim and the scheduler exchanged) and the
CPU a message costs, and streamed / loaded, per span. Over several seeds, the long / short ratios'
minimum, median and maximum: the preset's weekly rhythm gives its first three days 3.37 times
its first day's arrivals, and its bursty arrivals move one seed's far from that (from 2.74 to
3.62 times the first day's tasks over seeds 1 to 5 on 1,024 machines), so that one seed says
little of the others.

Then what Batsim keeps per job once it ended (``--per-job N1 N2``): N tasks of 1 s submitted
0.5 s apart on 16 machines (never more than two running), N1 then N2 of them, loaded and streamed:
Batsim's peak grows by (peak(N2) - peak(N1)) / (N2 - N1) bytes per job (``--per-job`` with no
number skips it).

    uv run python -m bench.streaming [--machines 1024] [--spans 86400 259200] [--batsim batsim-patched]
        [--seeds 1 ...] [--modes load stream] [--timeout 7200] [--keep FOLDER] [--per-job 20000 80000]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from batsim_google.simulation.batsim_binary import binary_name

MB = 1 << 20
CELL_MACHINES = 12583
MODES = ("load", "stream")


def command(*arguments: object) -> list[str]:
    """The ``batsim-google`` command a user types, in this environment."""
    return [str(Path(sys.executable).parent / "batsim-google"), *map(str, arguments)]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _peak_and_name(pid: int) -> tuple[int, str] | None:
    """(VmHWM in bytes, the command line) of a live process, None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    kilobytes = next((int(row.split()[1]) for row in status.splitlines() if row.startswith("VmHWM:")), 0)
    return kilobytes * 1024, line


def run_measured(arguments: list[object], timeout: float) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, the scheduler's peak resident memory, standard output) of one
    command, polling its processes' peaks (the last one read before a process ends is its peak).
    The CPU seconds are its processes' (Batsim's and the scheduler's included: each is waited for):
    unlike the wall time, they do not depend on what else the machine runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command(*arguments), stdout=out, stderr=subprocess.STDOUT, text=True)
        scheduler = 0
        while process.poll() is None:
            if time.monotonic() - started > timeout:
                process.kill()
                raise SystemExit(f"{' '.join(command(*arguments))}: over {timeout} s")
            for pid in _descendants(process.pid):
                seen = _peak_and_name(pid)
                if seen and "googleCell.py" in seen[1]:
                    scheduler = max(scheduler, seen[0])
            time.sleep(0.2)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out.seek(0)
        printed = out.read()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command(*arguments))} failed:\n{printed[-2000:]}")
    return wall, cpu, scheduler, printed


def simulate(platform: Path, workload: Path, output: Path, mode: str, span: float, args) -> dict:
    wall, cpu, scheduler, printed = run_measured(
        [
            "run", "--platform", platform, "--workload", workload, "-o", output, f"--{mode}-workload",
            "--horizon", span, "--batsim", args.batsim, "--no-progress", "--no-figures", "--timeout", args.timeout,
        ],
        args.timeout + 600,
    )  # fmt: skip
    summary = json.loads((output / "out_accounting.json").read_text())
    return {
        "wall": wall,
        "cpu": cpu,
        "batsim": int((output / "batsim_peak_rss").read_text()),
        "scheduler": scheduler,
        "summary": summary,
        "printed": printed,
    }


def same_tasks(first: Path, second: Path) -> str:
    """Whether two runs' tasks ended the same way, and their attempts' largest time gap."""
    import polars as pl

    tasks = [pl.read_csv(folder / "out_tasks.csv", infer_schema_length=0).sort("task_id") for folder in (first, second)]
    columns = ["task_id", "restarts", "outcome"]
    same = tasks[0].select(columns).equals(tasks[1].select(columns))
    attempts = [pl.read_csv(folder / "out_attempts.csv").sort("job_id", "attempt") for folder in (first, second)]
    if attempts[0].height != attempts[1].height:
        return f"tasks ended the same {same}; {attempts[0].height} vs {attempts[1].height} attempts"
    gap = max(float((attempts[0][c] - attempts[1][c]).abs().max() or 0.0) for c in ("start", "end"))
    moved = int((attempts[0]["machine"] != attempts[1]["machine"]).sum())
    return f"tasks ended the same {same}, attempts' largest time gap {gap:.2g} s, {moved} on other machines"


def per_job(folder: Path, sizes: list[int], args) -> None:
    """Batsim's peak memory over sequential one-second tasks, N1 and N2 of them, loaded and streamed."""
    import polars as pl

    from batsim_google.generation.batsim_json import WorkloadWriter

    platform = folder / "cell-16.xml"
    subprocess.run(command("platform", "--machines", 16, "-o", platform), check=True, capture_output=True)
    peaks: dict[tuple[int, str], int] = {}
    for size in sizes:
        workload = folder / f"sequential-{size}.json"
        tasks = {"id": range(size), "subtime": [0.5 * i for i in range(size)], "delay": [1.0] * size}
        with WorkloadWriter(workload, nb_res=16) as writer:
            writer.write(pl.DataFrame({**tasks, "kind": "task", "priority": 0.5, "cpu": 0.1, "memory": 0.1}))
        for mode in MODES:
            output = folder / f"sequential-{mode}-{size}"
            wall, _, _, _ = run_measured(
                [
                    "run", "--platform", platform, "--workload", workload, "-o", output, f"--{mode}-workload",
                    "--placement-latency", 0, "--no-energy-outputs", "--batsim", args.batsim, "--no-progress",
                    "--no-figures", "--timeout", args.timeout,
                ],
                args.timeout + 600,
            )  # fmt: skip
            peaks[size, mode] = int((output / "batsim_peak_rss").read_text())
            print(f"{size:,} sequential tasks, {mode:<6} {wall:7.1f} s  Batsim peak {peaks[size, mode] / MB:6.0f} MB")
    small, large = sizes
    for mode in MODES:
        grown = (peaks[large, mode] - peaks[small, mode]) / (large - small)
        print(f"Batsim keeps {grown / 1024:.1f} KB per job that ended ({mode})")


def run_seed(folder: Path, platform: Path, seed: int, args) -> dict[tuple[float, str], dict]:
    """Each span's workload of ``seed``, run in each mode: {(span, mode): run}, each run with its
    workload's job count."""
    runs: dict[tuple[float, str], dict] = {}
    for span in args.spans:
        workload = folder / f"warm-{span:g}-seed{seed}.json"
        subprocess.run(
            command(
                "generate", "--preset", "google-2011-cell", "--warm-start", "--nb-res", args.machines,
                "--arrival-scale", f"{CELL_MACHINES / args.machines:.6g}", "--duration", span,
                "--seed", seed, "-o", workload, "--no-progress",
            ),
            check=True, capture_output=True,
        )  # fmt: skip
        jobs = sum(1 for line in workload.open() if line.startswith('{"id"'))
        print(
            f"seed {seed}, {span:g} s on {args.machines} machines: {jobs:,} jobs, {workload.stat().st_size / MB:.0f} MB"
        )
        outputs = {mode: folder / f"{mode}-{span:g}-seed{seed}" for mode in args.modes}
        for mode, output in outputs.items():
            run = runs[span, mode] = {**simulate(platform, workload, output, mode, span, args), "jobs": jobs}
            print(
                f"  {mode:<6} {run['wall']:8.1f} s ({run['cpu']:.1f} CPU s)  Batsim peak {run['batsim'] / MB:7.0f} MB  "
                f"scheduler peak {run['scheduler'] / MB:6.0f} MB  {run['summary']['attempts']:,} attempts  "
                f"{run['summary']['messages']:,} messages"
            )
        if len(args.modes) == 2:
            print(f"  streamed vs loaded: {same_tasks(outputs['load'], outputs['stream'])}")
    return runs


def growth(short: dict, long: dict) -> dict[str, float]:
    """A long run's figures over a short one's: what the run cost and what its workload held."""
    ratios = {key: long[key] / short[key] for key in ("wall", "cpu", "batsim", "scheduler", "jobs")}
    ratios |= {key: long["summary"][key] / short["summary"][key] for key in ("attempts", "messages")}
    ratios["cpu per message"] = ratios["cpu"] / ratios["messages"]
    return ratios


GROWTH_SHOWN = {
    "wall": "wall", "cpu": "CPU", "batsim": "Batsim peak", "scheduler": "scheduler peak", "jobs": "jobs",
    "attempts": "attempts", "messages": "messages", "cpu per message": "CPU per message",
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, default=1024)
    parser.add_argument("--spans", type=float, nargs=2, default=[86400.0, 259200.0], metavar=("SHORT", "LONG"))
    parser.add_argument("--batsim", default=binary_name("patched"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--timeout", type=float, default=7200.0)
    parser.add_argument("--keep", type=Path, help="keep the workloads and runs in this folder")
    parser.add_argument("--per-job", type=int, nargs="*", default=[20000, 80000], metavar="N")
    args = parser.parse_args()
    if args.per_job and len(args.per_job) != 2:
        parser.error("--per-job takes two task counts (or none, to skip it)")
    args.modes = [mode for mode in MODES if mode in args.modes]
    short, long = args.spans
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        platform = folder / f"cell-{args.machines}.xml"
        subprocess.run(
            command("platform", "--machines", args.machines, "-o", platform), check=True, capture_output=True
        )
        grown: dict[str, list[dict[str, float]]] = {mode: [] for mode in args.modes}
        for seed in args.seeds:
            runs = run_seed(folder, platform, seed, args)
            print(
                f"seed {seed}, ratios {long:g} s / {short:g} s (targets: peak memory <= 1.25x, wall <= 3.3x for 3 days / 1):"
            )
            for mode in args.modes:
                ratios = growth(runs[short, mode], runs[long, mode])
                grown[mode].append(ratios)
                print(f"  {mode:<6} " + "  ".join(f"{GROWTH_SHOWN[key]} {value:.2f}x" for key, value in ratios.items()))
            if len(args.modes) == 2:
                print("  streamed / loaded:")
                for span in args.spans:
                    a, b = runs[span, "load"], runs[span, "stream"]
                    print(
                        f"    {span:g} s: wall {b['wall'] / a['wall']:.2f}x  CPU {b['cpu'] / a['cpu']:.2f}x  "
                        f"Batsim peak {b['batsim'] / a['batsim']:.2f}x  "
                        f"scheduler peak {b['scheduler'] / a['scheduler']:.2f}x"
                    )
        if len(args.seeds) > 1:
            print(f"ratios {long:g} s / {short:g} s over seeds {', '.join(map(str, args.seeds))}: min / median / max")
            for mode in args.modes:
                print(f"  {mode}")
                for key, shown in GROWTH_SHOWN.items():
                    values = sorted(ratios[key] for ratios in grown[mode])
                    median = statistics.median(values)
                    print(f"    {shown:<16} {values[0]:.2f}x / {median:.2f}x / {values[-1]:.2f}x")
        if args.per_job:
            per_job(folder, args.per_job, args)


if __name__ == "__main__":
    main()
