"""``validate-replay --windows``: every window of a span replayed and checked, in one table.

Each window is one :func:`.replay_validation.validate_replay` (from its own recorded state, in its
own folder ``windows/START-END/``), run on the workers campaigns use
(:func:`.execution.execute_each`: local processes or a Dask cluster). A window's folder ends with
``window.json``, written last: the window's fingerprint (the trace's parts, the window, the cell,
the scheduler's options), what :func:`validate_replay` said (``log``: the conversion's counts,
the run's balance) and either its report or why it failed. A window whose marker has the
same fingerprint is not run again (a failed one only with ``retry_failed``); anything else in its
folder is cleared first.

The sweep's table has one row per window, group and target (``targets`` of the report): the
figure the target judges, real and simulated, whether it is met, and the p-value of the eviction
target's equal-rates test; a failed window has one row saying why.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from batsim_google.errors import BatsimGoogleError, ParameterError
from batsim_google.experiments.execution import execute_each
from batsim_google.experiments.replay_validation import ATTEMPTS, ReplayWindow, validate_replay, window_policy
from batsim_google.output_files import AtomicFile, output_folder, write_text
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.runner import DEFAULT_TIMEOUT_S
from batsim_google.simulation.settings import SimulationSettings
from batsim_google.trace.reader import part_files
from batsim_google.trace.sampling import MachineSample
from batsim_google.trace.span import last_event_time

MARKER = "window.json"
WINDOWS = "windows"
TABLE = "sweep.csv"
REPORT = "sweep.json"
#: The table's columns, in order.
COLUMNS = ("start", "end", "status", "group", "target", "real", "simulated", "met", "p_value", "error")
#: The figure each band target judges (the report's ``bands`` keys).
BAND_FIGURES = {
    "median_wait": "median_wait_s",
    "share_started_60s": "share_started_60s",
    "evictions": "evictions_per_1000_task_hours",
    "never_started": "never_started",
}


@dataclass(frozen=True)
class SweepWindows:
    """Which windows a sweep replays: every whole window of ``length`` s in ``[start, end)`` (end:
    the trace's last event), on the whole cell or a ``sample`` of it, the running tasks on their
    trace's machines or placed again; a window that failed before only with ``retry_failed``."""

    length: float
    start: float = 0.0
    end: float | None = None
    sample: MachineSample | None = None
    place_again: bool = False
    retry_failed: bool = False


@dataclass(frozen=True)
class WindowReplay:
    """One window of a sweep: what :func:`validate_replay` is given, in a form that pickles to a
    worker (plain values, no callables)."""

    trace: Path
    window: ReplayWindow
    folder: Path
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    batsim: str = "batsim"
    timeout: float = DEFAULT_TIMEOUT_S
    workers: int = 1

    @property
    def start(self) -> float:
        return self.window.start

    @property
    def end(self) -> float:
        return self.window.end

    @property
    def fingerprint(self) -> str:
        """What the window's result depends on: the trace's parts (names, sizes), the window, the
        cell and the scheduler's options (not the Batsim binary, nor the time limit)."""
        parts = [(path.name, path.stat().st_size) for path in part_files(self.trace, "task_events")]
        inputs = {
            "parts": parts,
            "window": [self.start, self.end],
            "policy": dataclasses.asdict(self.policy),
            "cell": [sample.machines, sample.seed] if (sample := self.window.sample) else None,
            "place_again": self.window.place_again,
        }
        return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]


def windows(span: tuple[float, float], length: float) -> list[tuple[float, float]]:
    """The whole windows of ``length`` from the span's start; a last piece shorter is left out."""
    start, end = span
    count = math.floor((end - start) / length + 1e-9)
    return [(start + i * length, start + (i + 1) * length) for i in range(count)]


def window_folder(output: Path, start: float, end: float) -> Path:
    return output / WINDOWS / f"{start:g}-{end:g}"


def recorded(window: WindowReplay) -> dict | None:
    """The window's marker if it has the window's fingerprint, None otherwise."""
    try:
        marker = json.loads((window.folder / MARKER).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return marker if marker.get("fingerprint") == window.fingerprint else None


def replay_window(window: WindowReplay, validate: Callable[..., dict] = validate_replay) -> dict:
    """Replay and check one window in a worker (``validate``: :func:`validate_replay`, or a
    stand-in of its signature); its marker (written in its folder) is returned."""
    if window.folder.exists():
        shutil.rmtree(window.folder)
    marker = {"fingerprint": window.fingerprint, "start": window.start, "end": window.end, "log": []}
    try:
        marker["report"] = validate(
            window.trace,
            window.window,
            window.folder,
            window.policy,
            settings=SimulationSettings(timeout=window.timeout, batsim=window.batsim),
            workers=window.workers,
            say=marker["log"].append,
        )
    except (BatsimGoogleError, ValueError) as error:
        marker["error"] = str(error) or type(error).__name__
    except OSError as error:  # e.g. Batsim not installed: this window failed, not the sweep
        marker["error"] = f"{error.strerror or error}: {error.filename or ''}".strip()
    window.folder.mkdir(parents=True, exist_ok=True)
    write_text(window.folder / MARKER, json.dumps(marker, indent=1) + "\n")
    return marker


def _values(report: dict, group: str, target: str) -> tuple[float | None, float | None]:
    """The figure a target judges, real and simulated."""
    if group == "cpu_in_use":  # a ratio of simulated to real: the real side is 1 by definition
        return 1.0, report["cpu_in_use"]["mean_ratio" if target == "mean" else "worst_ratio"]
    if group == "largest_job":
        job = report["bursts"]["largest_jobs"][0]
        return job["real"]["median_wait_s"], job["simulated"]["median_wait_s"]
    sides = report["bands"][group]
    return sides["real"][BAND_FIGURES[target]], sides["simulated"][BAND_FIGURES[target]]


def table_rows(window: WindowReplay, marker: dict, status: str) -> list[dict]:
    """The table's rows of one window (see the module)."""
    base = dict.fromkeys(COLUMNS) | {"start": window.start, "end": window.end, "status": status}
    if "error" in marker:
        return [base | {"status": "failed", "error": marker["error"]}]
    report = marker["report"]
    p_values = report.get("eviction_p_values", {})
    rows = []
    for group, checked in report["targets"].items():
        for target, met in checked.items():
            real, simulated = _values(report, group, target)
            p_value = p_values.get(group) if target == "evictions" else None
            rows.append(
                base
                | {"group": group, "target": target, "real": real, "simulated": simulated, "met": met}
                | {"p_value": p_value}
            )
    return rows


@dataclass(frozen=True)
class Sweep:
    """What a sweep did: per window its status (``done``, ``reused``, ``failed``) and marker; the
    table's rows; the files written."""

    windows: list[WindowReplay]
    statuses: list[str]
    markers: list[dict]
    rows: list[dict]
    files: list[Path]

    def summary(self) -> str:
        """One line: windows by status, targets met of those checked."""
        counts = summary(self.statuses, self.rows)
        return (
            f"{counts['windows']} windows ({counts['done']} replayed, {counts['reused']} reused, "
            f"{counts['failed']} failed): targets met {counts['targets_met']} of {counts['targets_checked']} checked"
        )


def summary(statuses: list[str], rows: list[dict]) -> dict:
    """Windows by status; targets checked and met."""
    return {
        "windows": len(statuses),
        **{status: statuses.count(status) for status in ("done", "reused", "failed")},
        "targets_checked": sum(row["met"] is not None for row in rows),
        "targets_met": sum(bool(row["met"]) for row in rows),
    }


def sweep_windows(
    trace: Path,
    output: Path,
    plan: SweepWindows,
    policy: PolicyConfig = PolicyConfig(),
    *,
    settings: SimulationSettings = SimulationSettings(),
    workers: int = 1,
    jobs: int | None = None,
    dask_address: str | None = None,
    replay: Callable[[WindowReplay], dict] = replay_window,
) -> Sweep:
    """Replay every window of ``plan`` that is not done yet, ``jobs`` at a time (or on Dask), then
    write the table, the JSON and the figures in ``output``; ``workers``: threads reading the trace
    in each window; ``replay`` runs one window in a worker (:func:`replay_window`); what the sweep
    says goes to ``settings.say``."""
    say = settings.say
    end = last_event_time(trace) if plan.end is None else plan.end
    spans = windows((plan.start, end), plan.length)
    if not spans:
        raise ParameterError(f"[{plan.start:g}, {end:g}) s holds no whole window of --windows {plan.length:g} s")
    if spans[-1][1] < end:
        say(f"left out: [{spans[-1][1]:g}, {end:g}) s, shorter than a window")
    policy = window_policy(policy, *spans[0])  # the same length for every window: checked once
    output = output_folder(output)
    every = [
        WindowReplay(
            Path(trace),
            ReplayWindow(low, high, plan.sample, plan.place_again),
            window_folder(output, low, high),
            policy,
            batsim=settings.batsim,
            timeout=settings.timeout,
            workers=workers,
        )
        for low, high in spans
    ]
    markers: list[dict | None] = [recorded(window) for window in every]
    todo = [i for i, marker in enumerate(markers) if marker is None or ("error" in marker and plan.retry_failed)]
    statuses = ["failed" if marker is not None and "error" in marker else "reused" for marker in markers]

    def finished(position: int, marker: dict) -> None:
        window = every[todo[position]]
        outcome = f"failed: {marker['error']}" if "error" in marker else _met_line(marker["report"])
        say(f"window [{window.start:g}, {window.end:g}) s: {outcome}")

    results = execute_each(
        replay,
        [every[index] for index in todo],
        workers=jobs,
        dask_address=dask_address,
        progress=settings.progress,
        unit="window",
        done=len(every) - len(todo),
        finished=finished,
    )
    for index, marker in zip(todo, results):
        markers[index] = marker
        statuses[index] = "failed" if "error" in marker else "done"
    rows = [
        row for window, marker, status in zip(every, markers, statuses) for row in table_rows(window, marker, status)
    ]
    files = write_sweep(output, every, statuses, markers, rows)
    return Sweep(every, statuses, markers, rows, files)


def _met_line(report: dict) -> str:
    checked = [met for group in report["targets"].values() for met in group.values()]
    return f"targets met {sum(checked)} of {len(checked)}"


def write_sweep(output: Path, every: list[WindowReplay], statuses: list[str], markers: list[dict], rows: list[dict]):
    """``sweep.csv``, ``sweep.json`` and the figures; the paths written."""
    import polars as pl

    table = pl.DataFrame(
        rows,
        schema={
            "start": pl.Float64,
            "end": pl.Float64,
            "status": pl.String,
            "group": pl.String,
            "target": pl.String,
            "real": pl.Float64,
            "simulated": pl.Float64,
            "met": pl.Boolean,
            "p_value": pl.Float64,
            "error": pl.String,
        },
    )
    with AtomicFile(output / TABLE) as temporary:
        table.write_csv(temporary)
    document = {
        "windows": [
            {
                "start": window.start,
                "end": window.end,
                "status": status,
                "folder": str(window.folder),
                **(
                    {"error": marker["error"]}
                    if "error" in marker
                    else {key: marker["report"][key] for key in ("targets", "eviction_p_values", "bursts")}
                ),
            }
            for window, status, marker in zip(every, statuses, markers)
        ],
        "rows": rows,
        "summary": summary(statuses, rows),
    }
    write_text(output / REPORT, json.dumps(document, indent=1) + "\n")
    done = [(window, marker["report"]) for window, marker in zip(every, markers) if "error" not in marker]
    return [output / TABLE, output / REPORT, *sweep_figures(done, output)]


def sweep_figures(done: list[tuple[WindowReplay, dict]], output: Path) -> list[Path]:
    """``sweep_evictions.png`` and ``sweep_largest_jobs.png`` of the windows replayed."""
    from batsim_google.experiments.replay_figures import SWEEP_PANELS, sweep_evictions_figure, sweep_jobs_figure

    def largest(item: tuple[WindowReplay, dict]) -> int:
        jobs = item[1]["bursts"]["largest_jobs"]
        return jobs[0]["tasks"] if jobs else 0

    shown = sorted(sorted(done, key=largest, reverse=True)[:SWEEP_PANELS], key=lambda item: item[0].start)
    panels = [(w.start, w.end, partial(_largest_jobs_attempts, w.folder, report["bursts"])) for w, report in shown]
    return [
        sweep_evictions_figure(
            [(w.start, w.end, report["bursts"]) for w, report in done], output / "sweep_evictions.png"
        ),
        sweep_jobs_figure(panels, output / "sweep_largest_jobs.png"),
    ]


def _largest_jobs_attempts(folder: Path, bursts: dict) -> tuple:
    """A window's attempts of its largest jobs, real and simulated, and its ``bursts``."""
    import polars as pl

    jobs = [job["job"] for job in bursts["largest_jobs"]]
    real, simulated = (
        pl.scan_parquet(folder / ATTEMPTS[side]).filter(pl.col("job").is_in(jobs)).collect()
        for side in ("real", "simulated")
    )
    return real, simulated, bursts
