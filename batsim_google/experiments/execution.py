"""Running a campaign's simulations: in parallel on local cores or on a Dask cluster, resumable.

A run is complete when its folder holds Batsim's jobs file and the completion marker
``done.json``, written last and atomically, whose fingerprint matches the run's (same inputs,
same policy). A complete run is not redone; anything else in a run's folder is what a run that
stopped halfway left, and is cleared before the run is done again.

A run that failed once it was launched (Batsim or the scheduler failed, or the timeout passed)
leaves the failure marker ``failed.json`` with the reason: a resume does not run it again, which
would fail the same way (a scheduler too slow for the timeout cost 27.5 min over three resumes),
unless asked (``retry_failed``). A failure before launch (no Batsim, a scheduler's executable not
installed) is not recorded: once the machine is set up, a resume runs it.

Interrupted (Ctrl-C, SIGTERM), the command stops its local workers, each of which stops the
simulation it runs (Batsim, the scheduler and what they started): nothing runs on, and an
interrupted run leaves no marker.

The worker that simulates a run also computes its metrics from the files it just wrote and keeps
them in the marker. On a Dask cluster every worker needs this package, ``batsim`` on its PATH, and
the output folder on a filesystem it shares with the others.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
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
from batsim_google.simulation.batsim_binary import batsim_binary
from batsim_google.simulation.parent_death import die_with_parent
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.settings import RunInputs, SimulationSettings

MARKER = "done.json"
#: The marker of a run that failed (see the module): its fingerprint and the reason.
FAILURE_MARKER = "failed.json"


@dataclass(frozen=True)
class RunRecord:
    """What became of a run: ``done`` now, ``reused`` from an earlier invocation, or ``failed``
    (``error`` says why; ``earlier``: by an earlier invocation, not run again); the metrics of a
    run that ended."""

    run: Run
    status: str
    metrics: dict | None = None
    queue: dict | None = None
    wall_seconds: float | None = None
    error: str | None = None
    earlier: bool = False


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


def recorded_failure(run: Run) -> dict | None:
    """The failure marker of ``run`` (see the module) if it is this run's, None otherwise."""
    try:
        content = json.loads((run.directory / FAILURE_MARKER).read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return content if isinstance(content, dict) and content.get("fingerprint") == run.fingerprint else None


def _failed(run: Run, error: str) -> dict:
    """Record that ``run`` failed once launched (see the module); its marker."""
    marker = {"fingerprint": run.fingerprint, "labels": run.labels(), "error": error}
    run.directory.mkdir(parents=True, exist_ok=True)
    write_text(run.directory / FAILURE_MARKER, json.dumps(marker, indent=1) + "\n")
    return marker


def execute_run(run: Run, batsim: str = "batsim") -> dict:
    """Simulate ``run`` unless it is complete; return its marker, or ``{"error": ...}`` when the
    simulation failed. Runs in a worker process."""
    marker = completed(run)
    if marker is not None:
        return {**marker, "reused": True}
    if run.directory.exists():
        shutil.rmtree(run.directory)
    try:
        batsim_binary(batsim)  # not installed: not this run's failure, nothing recorded
    except SimulationError as error:
        return {"error": str(error)}
    try:
        inputs = RunInputs(run.platform_file, [run.workload_file], [run.events_file] if run.events_file else [])
        settings = SimulationSettings(timeout=run.timeout, batsim=batsim, energy_outputs=run.energy_outputs)
        result = run_scheduler(run.scheduler, inputs, run.directory, settings)
    except (SimulationError, ValueError) as error:  # ValueError: e.g. a policy the platform cannot run
        return _failed(run, str(error))
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
        return RunRecord(run, "failed", error=marker["error"], earlier=reused)
    status = "reused" if reused or marker.get("reused") else "done"
    return RunRecord(run, status, marker["metrics"], marker["queue"], marker["wall_seconds"])


def execute_runs(
    runs: list[Run],
    *,
    batsim: str = "batsim",
    workers: int | None = None,
    dask_address: str | None = None,
    progress: bool = True,
    retry_failed: bool = False,
    on_record: Callable[[RunRecord, int, int], None] | None = None,
) -> list[RunRecord]:
    """Run what is not complete yet, ``workers`` at a time on local processes (default: one per
    core) or on the Dask scheduler at ``dask_address``; one record per run, in order. A run that
    failed in an earlier invocation is not run again unless ``retry_failed``. ``on_record`` is
    called with each record of a run simulated now, the count finished and the count to do."""
    records: dict[int, RunRecord] = {}
    todo = []
    for index, run in enumerate(runs):
        marker = completed(run) or (None if retry_failed else recorded_failure(run))
        if marker is None:
            todo.append(index)
        else:
            records[index] = _record(run, marker, reused=True)
    ended = 0

    def finished(position: int, marker: dict) -> None:
        nonlocal ended
        ended += 1
        if on_record is not None:
            on_record(_record(runs[todo[position]], marker), ended, len(todo))

    markers = execute_each(
        partial(execute_run, batsim=batsim),
        [runs[index] for index in todo],
        workers=workers,
        dask_address=dask_address,
        progress=progress,
        done=len(records),
        finished=finished,
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
                futures = {client.submit(_work, function, item, pure=False): i for i, item in enumerate(items)}
                try:
                    collect(as_completed(futures), futures)
                finally:  # on an interruption, what has not started is dropped
                    client.cancel(list(futures))
        elif items:
            pool = local_pool(workers)
            futures = {pool.submit(_work, function, item): i for i, item in enumerate(items)}
            try:
                collect(_as_completed(futures), futures)
            except BaseException:  # Ctrl-C, SIGTERM: the running simulations are stopped, not waited for
                _stop_pool(pool)
                raise
            pool.shutdown(wait=True)
    return [results[index] for index in range(len(items))]


#: Set in a worker process by Ctrl-C (SIGINT reaches the whole process group): the items already
#: queued to it are then dropped instead of started.
_interrupted = False
#: Set in a worker process while it works on an item (a simulation runs).
_running = False


def _work(function: Callable[[object], dict], item) -> dict:
    """``function(item)`` in a worker process, or ``{"error": "interrupted"}`` once the worker was
    interrupted (see :func:`_stop_worker`)."""
    global _interrupted, _running
    if _interrupted:
        return {"error": "interrupted"}
    _running = True
    try:
        return function(item)
    except KeyboardInterrupt:
        _interrupted = True
        raise
    finally:
        _running = False


def local_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """``workers`` processes (default: one per core) that end with this one, even killed with
    SIGKILL (:mod:`batsim_google.simulation.parent_death`), and so do the simulations they run;
    SIGTERM interrupts a worker as Ctrl-C does."""
    context = multiprocessing.get_context("spawn")  # polars and threads do not survive fork
    return ProcessPoolExecutor(
        max_workers=workers or os.cpu_count(),
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(),),
    )


#: Seconds the command waits for a run at a time (see :func:`_as_completed`).
WAIT_SECONDS = 0.5


def _as_completed(futures: Iterable[Future]) -> Iterator[Future]:
    """The ``futures`` as they finish, waited for :data:`WAIT_SECONDS` at a time: Python handles a
    signal in its main thread, and a main thread blocked without a time limit missed a SIGINT
    the kernel gave another thread (``compare`` ran on with its workers)."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=WAIT_SECONDS, return_when=FIRST_COMPLETED)
        yield from done


#: The signals that interrupt a command and its workers.
STOPS = (signal.SIGTERM, signal.SIGINT)


def _start_worker(parent: int) -> None:
    die_with_parent(parent)
    for signum in STOPS:
        signal.signal(signum, _stop_worker)


def _stop_worker(signum, frame) -> None:
    """The first SIGTERM or SIGINT interrupts the worker's simulation (which then stops its
    processes); later ones are ignored, so that they do not cut that cleanup short."""
    for signum in STOPS:
        signal.signal(signum, signal.SIG_IGN)
    if not _running:  # waiting for work: nothing to stop, and no traceback to print
        os._exit(0)
    raise KeyboardInterrupt


#: Seconds an interrupted pool's workers have to stop their simulations before they are killed.
STOP_SECONDS = 30.0


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` on an interruption: SIGTERM to each worker (each stops the simulation it runs),
    what has not started dropped, the workers waited for :data:`STOP_SECONDS`, then killed.

    Later SIGTERMs and Ctrl-Cs are ignored meanwhile: ``timeout`` and a group kill send two, and a
    second one raised in the middle of the shutdown left a worker without its end, and the command
    waiting for it at exit."""
    shielded = threading.current_thread() is threading.main_thread()
    previous = [(signum, signal.signal(signum, signal.SIG_IGN)) for signum in STOPS] if shielded else []
    try:
        processes = list((getattr(pool, "_processes", None) or {}).values())  # the executor has no public list
        for process in processes:
            with contextlib.suppress(ProcessLookupError, TypeError):  # ended, or never started
                os.kill(process.pid, signal.SIGTERM)
        pool.shutdown(wait=False, cancel_futures=True)
        running = {process.sentinel: process for process in processes}
        deadline = time.monotonic() + STOP_SECONDS
        while running and (left := deadline - time.monotonic()) > 0:
            for sentinel in multiprocessing.connection.wait(list(running), left):
                running.pop(sentinel)
        for process in running.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
        pool.shutdown(wait=True)
    finally:
        for signum, handler in previous:
            signal.signal(signum, handler)
