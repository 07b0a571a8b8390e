"""Running a campaign's simulations: in parallel on local cores or on a Dask cluster, resumable.

A run is complete when its folder holds Batsim's jobs file and the completion marker
``done.json``, written last and atomically, whose fingerprint matches the run's (same inputs,
same policy). A complete run is not redone; anything else in a run's folder is what a run that
stopped halfway left, and is cleared before the run is done again.

The worker that simulates a run also computes its metrics from the files it just wrote and keeps
them in the marker. On a Dask cluster every worker needs this package, ``batsim`` on its PATH, and
the output folder on a filesystem it shares with the others.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as local_as_completed
from dataclasses import dataclass
from functools import partial

from tqdm import tqdm

from batsim_google.errors import SimulationError
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import JOBS, RunOutputs
from batsim_google.experiments.plan import Run
from batsim_google.experiments.queue_metrics import queue_metrics
from batsim_google.experiments.window import window_of
from batsim_google.output_files import write_text
from batsim_google.simulation.parent_death import die_with_parent
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.settings import RunInputs, SimulationSettings

MARKER = "done.json"


@dataclass(frozen=True)
class RunRecord:
    """What became of a run: ``done`` now, ``reused`` from an earlier invocation, or ``failed``
    (``error`` says why); the metrics of a run that ended."""

    run: Run
    status: str
    metrics: dict | None = None
    queue: dict | None = None
    wall_seconds: float | None = None
    error: str | None = None


#: Seconds to wait for a Dask scheduler before giving up.
DASK_CONNECT_SECONDS = 30


class DaskUnreachable(SimulationError):
    """The Dask scheduler given does not answer."""


def completed(run: Run) -> dict | None:
    """The marker of a complete run (see the module), None otherwise."""
    marker = run.directory / MARKER
    if not (marker.is_file() and RunOutputs(run.directory).path(JOBS).is_file()):
        return None
    try:
        content = json.loads(marker.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return content if content.get("fingerprint") == run.fingerprint else None


#: Set in a worker process by Ctrl-C (SIGINT reaches the whole process group): the runs already
#: queued to it are then dropped instead of started.
_interrupted = False


def execute_run(run: Run, batsim: str = "batsim") -> dict:
    """Simulate ``run`` unless it is complete; return its marker, or ``{"error": ...}`` when the
    simulation failed or the worker was interrupted. Runs in a worker process."""
    global _interrupted
    if _interrupted:
        return {"error": "interrupted"}
    try:
        return _execute(run, batsim)
    except KeyboardInterrupt:
        _interrupted = True
        raise


def _execute(run: Run, batsim: str) -> dict:
    marker = completed(run)
    if marker is not None:
        return {**marker, "reused": True}
    if run.directory.exists():
        shutil.rmtree(run.directory)
    try:
        inputs = RunInputs(run.platform_file, [run.workload_file], [run.events_file] if run.events_file else [])
        settings = SimulationSettings(timeout=run.timeout, batsim=batsim, energy_outputs=run.energy_outputs)
        result = run_scheduler(run.scheduler, inputs, run.directory, settings)
    except (SimulationError, ValueError) as error:  # ValueError: e.g. a policy the platform cannot run
        return {"error": str(error)}
    except OSError as error:  # e.g. a scheduler's executable not installed: this run failed, not the campaign
        return {"error": f"{error.strerror or error}: {error.filename or ''}".strip()}
    outputs = RunOutputs(run.directory)
    window = window_of(run.warmup, run.window_end)  # every scheduler over the same window
    marker = {
        "fingerprint": run.fingerprint,
        "labels": run.labels(),
        "wall_seconds": result.simulation.wall_seconds,
        "metrics": run_metrics(outputs, run.platform_file, window, [run.workload_file]),
        "queue": queue_metrics(outputs, window=window),
    }
    write_text(run.directory / MARKER, json.dumps(marker, indent=1) + "\n")
    return marker


def _record(run: Run, marker: dict, reused: bool = False) -> RunRecord:
    if "error" in marker:
        return RunRecord(run, "failed", error=marker["error"])
    status = "reused" if reused or marker.get("reused") else "done"
    return RunRecord(run, status, marker["metrics"], marker["queue"], marker["wall_seconds"])


def execute_runs(
    runs: list[Run],
    *,
    batsim: str = "batsim",
    workers: int | None = None,
    dask_address: str | None = None,
    progress: bool = True,
) -> list[RunRecord]:
    """Run what is not complete yet, ``workers`` at a time on local processes (default: one per
    core) or on the Dask scheduler at ``dask_address``; one record per run, in order."""
    records: dict[int, RunRecord] = {}
    todo = []
    for index, run in enumerate(runs):
        marker = completed(run)
        if marker is None:
            todo.append(index)
        else:
            records[index] = _record(run, marker, reused=True)
    markers = execute_each(
        partial(execute_run, batsim=batsim),
        [runs[index] for index in todo],
        workers=workers,
        dask_address=dask_address,
        progress=progress,
        done=len(records),
    )
    for index, marker in zip(todo, markers):
        records[index] = _record(runs[index], marker)
    return [records[index] for index in range(len(runs))]


def execute_each(
    function: Callable[[object], dict],
    items: Sequence,
    *,
    workers: int | None = None,
    dask_address: str | None = None,
    progress: bool = True,
    unit: str = "run",
    done: int = 0,
    finished: Callable[[int, dict], None] = lambda index, result: None,
) -> list[dict]:
    """``function(item)`` for each of ``items``, on the same workers as a campaign's runs: ``workers``
    local processes (default: one per core) or the Dask scheduler at ``dask_address``. ``function``
    (a module's function) and the items must pickle; a result with an ``error`` counts as failed.
    ``finished(index, result)`` is called as each ends; ``done`` items were done before (the bar
    starts there). The results, in the items' order."""
    results: dict[int, dict] = {}
    bar = tqdm(total=done + len(items), initial=done, desc=unit + "s", unit=" " + unit, disable=not progress)
    failed = 0

    def collect(completed_futures, futures: dict) -> None:
        nonlocal failed
        for future in completed_futures:
            index = futures[future]
            results[index] = future.result()
            failed += "error" in results[index]
            finished(index, results[index])
            bar.set_postfix(failed=failed, refresh=False)
            bar.update()

    with bar:
        if dask_address and items:
            from distributed import Client, as_completed

            try:
                client = Client(dask_address, timeout=DASK_CONNECT_SECONDS)
            except OSError as error:
                raise DaskUnreachable(f"no Dask scheduler answers at {dask_address} ({error})") from error
            with client:
                futures = {client.submit(function, item, pure=False): i for i, item in enumerate(items)}
                try:
                    collect(as_completed(futures), futures)
                finally:  # on an interruption, what has not started is dropped
                    client.cancel(list(futures))
        elif items:
            pool = local_pool(workers)
            futures = {pool.submit(function, item): i for i, item in enumerate(items)}
            try:
                collect(local_as_completed(futures), futures)
            finally:  # on an interruption (Ctrl-C stops the running ones), what has not started is dropped
                pool.shutdown(wait=True, cancel_futures=True)
    return [results[index] for index in range(len(items))]


def local_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """``workers`` processes (default: one per core) that end with this one, even killed with
    SIGKILL (:mod:`batsim_google.simulation.parent_death`), and so do the simulations they run."""
    context = multiprocessing.get_context("spawn")  # polars and threads do not survive fork
    return ProcessPoolExecutor(
        max_workers=workers or os.cpu_count(),
        mp_context=context,
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
