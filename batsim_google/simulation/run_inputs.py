"""A run's inputs checked against each other before Batsim starts.

Batsim aborts, deep into a run or with a terse message, on an events file that names a machine the
platform lacks or kills a job no workload has; a workload sized for another machine count runs,
but likely not as meant. Both are found here first: the events files are read line by line, the
workloads streamed (they may hold millions of jobs), and only for the job ids that kills name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import ijson
from procset import ProcSet

from batsim_google.errors import InputFileError
from batsim_google.parameters import MAX_TIME_S, parse_text
from batsim_google.platform.batsim_events import AVAILABLE, UNAVAILABLE, USER_KILL_EVENT


def workload_name(index: int) -> str:
    """The name Batsim gives the ``index``-th workload of its command line (job ids ``w0!17``)."""
    return f"w{index}"


def _events(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, event) of a Batsim events file (JSON lines), read as every input is
    (:func:`batsim_google.parameters.parse_text`: no key twice, a bounded depth), each with a
    ``timestamp`` Batsim can take (a number of seconds in [0, 2^42))."""
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if line.strip():
                    try:
                        event = parse_text(line, ".json")
                    except ValueError as error:
                        raise InputFileError(f"{path}:{number}: not a JSON event ({error})") from None
                    if not isinstance(event, dict):
                        raise InputFileError(f"{path}:{number}: not a JSON event (an object)")
                    timestamp = event.get("timestamp")
                    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
                        raise InputFileError(f"{path}:{number}: timestamp {timestamp!r} is not a number of seconds")
                    if not 0 <= timestamp < MAX_TIME_S:
                        raise InputFileError(
                            f"{path}:{number}: timestamp {timestamp!r} is not in [0, {MAX_TIME_S:.0f}) s"
                        )
                    yield number, event
    except (OSError, UnicodeDecodeError) as error:
        raise InputFileError(f"{path}: {error}") from error


def _workload(path: Path, wanted: set[str]) -> tuple[int | None, set[str]]:
    """The workload's ``nb_res`` and which of the ``wanted`` job ids it has, in one streamed pass
    that stops as soon as nothing more is needed."""
    nb_res, found = None, set()
    try:
        with path.open("rb") as handle:
            for prefix, event, value in ijson.parse(handle):
                if prefix == "nb_res" and event == "number":
                    nb_res = int(value)
                elif prefix == "jobs.item.id" and str(value) in wanted:
                    found.add(str(value))
                if nb_res is not None and found == wanted:
                    break
    except (OSError, ijson.JSONError) as error:
        raise InputFileError(f"{path}: not a Batsim workload ({error})") from error
    return nb_res, found


def check_run_inputs(machines: int, platform: Path, workloads: Iterable[Path], events: Iterable[Path]) -> list[str]:
    """Refuse events of unknown machines or jobs (InputFileError naming the file and line) and
    workloads with times Batsim cannot take (:mod:`batsim_google.generation.job_times`, naming the
    job); return warnings for workloads whose ``nb_res`` is not the platform's ``machines``."""
    from batsim_google.fitting.batsim_input import job_times

    workloads = [Path(path) for path in workloads]
    for path in workloads:
        job_times(path)
    kills: dict[str, tuple[Path, int]] = {}
    for path in map(Path, events):
        for number, event in _events(path):
            kind = event.get("type")
            if kind in (AVAILABLE, UNAVAILABLE):
                try:
                    largest = ProcSet.from_str(str(event.get("resources", ""))).max
                except (ValueError, TypeError):
                    raise InputFileError(f"{path}:{number}: unreadable resources {event.get('resources')!r}") from None
                if largest >= machines:
                    raise InputFileError(
                        f"{path}:{number}: {kind} of resource {largest}, but {platform} has {machines} machines (0-{machines - 1})"
                    )
            elif kind == USER_KILL_EVENT:
                kills.setdefault(str(event.get("job_id")), (path, number))
    warnings, unknown = [], set(kills)
    for index, path in enumerate(map(Path, workloads)):
        prefix = f"{workload_name(index)}!"
        wanted = {job[len(prefix) :] for job in unknown if job.startswith(prefix)}
        nb_res, found = _workload(path, wanted)
        unknown -= {prefix + job for job in found}
        if nb_res is not None and nb_res != machines:
            warnings.append(f"{path} was made for nb_res = {nb_res} machines, {platform} has {machines}")
    if unknown:
        job = min(unknown, key=lambda name: kills[name])
        path, number = kills[job]
        raise InputFileError(
            f"{path}:{number}: user_kill of job {job!r}, which no workload has (job ids are w<index of --workload>!<id>)"
        )
    return warnings
