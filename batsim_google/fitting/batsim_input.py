"""Read any Batsim workload (JSON) into the task table fitting starts from.

The file is parsed as a stream (ijson), profiles then jobs, a chunk of rows at a time, so memory
holds columns, never the parsed document. Every job gives a row: its submission time, the
resources it asks for (``res``, the ``width`` column when some job asks for more than one) and its
duration, from its profile as Batsim 4.2.1 would run it alone on idle machines, cut at its
walltime when it has one (a service of :mod:`batsim_google.generation.batsim_json` ends at its
walltime):

- ``delay``: the delay;
- ``parallel_homogeneous``: ``cpu`` flops on each machine, ``parallel``: the largest of its
  ``cpu`` array, ``parallel_homogeneous_total``: ``cpu / res`` flops on each machine, over the
  machines' ``speed`` (flop/s, when given); only without communications (``com`` all 0), whose
  time depends on the network;
- ``composed``: the sum of its sequence, ``repeat`` times, when each part has a duration;
- other types (``smpi``, ``usage_trace``, ``parallel_homogeneous_pfs``, ``data_staging``,
  ``send``, ``recv``) depend on traces, the network or storage: their jobs are kept in the table
  with the reason in an ``unusable`` column, so that :func:`.table.task_table` counts them as
  skipped (rows read = used + skipped by reason), never lost silently.

The job fields ``kind``, ``priority`` (]0, 1]), ``class`` and ``scheduling_class`` are kept when
present, and ``google_job`` (the job of tasks a generated or converted task belongs to) becomes
``job_id``. A job without ``kind`` is a ``task`` (it runs to its end) and one without
``priority`` gets :data:`DEFAULT_PRIORITY`; :class:`BatsimTable` says how many did.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ijson
import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.fitting.chunks import in_chunks
from batsim_google.fitting.json_shape import check_json_shape
from batsim_google.generation.job_times import COLUMNS as JOB_TIME_COLUMNS
from batsim_google.generation.job_times import check_job_times
from batsim_google.parameters import MAX_MACHINES

OPTIONAL_FIELDS = ("class", "scheduling_class")
#: What a job without ``priority`` gets: the middle of ]0, 1], as SWF logs' jobs do.
DEFAULT_PRIORITY = 0.5
JOB_FIELDS = {
    "id": pl.String,
    "subtime": pl.Float64,
    "walltime": pl.Float64,
    "res": pl.Float64,
    "profile": pl.String,
    "kind": pl.String,
    "priority": pl.Float64,
    "class": pl.String,
    "scheduling_class": pl.Float64,
    "google_job": pl.Float64,
    "cpu": pl.Float64,
    "memory": pl.Float64,
}
#: Rules of the job fields that are given, as (field, valid values, what they must be), checked in
#: this order on every job that has the field: a job's fields are refused, never read as absent.
FIELD_RULES = (
    ("res", (pl.col("res") == pl.col("res").round()) & (pl.col("res") >= 1), "an integer >= 1"),
    ("cpu", pl.col("cpu").is_between(0.0, float("inf"), closed="left"), "a finite number >= 0"),
    ("memory", pl.col("memory").is_between(0.0, float("inf"), closed="left"), "a finite number >= 0"),
    (
        "scheduling_class",
        (pl.col("scheduling_class") == pl.col("scheduling_class").round())
        & pl.col("scheduling_class").is_between(0, 3),
        "an integer in 0..3",
    ),
    (
        "google_job",
        (pl.col("google_job") == pl.col("google_job").round())
        & pl.col("google_job").is_between(0, 2.0**63, closed="left"),
        "an integer in 0..2^63-1",
    ),
)
#: A profile's duration in parts: seconds, flops on each machine, flops shared by the job's machines.
PROFILE_SCHEMA = {
    "profile": pl.String,
    "seconds": pl.Float64,
    "flops": pl.Float64,
    "shared_flops": pl.Float64,
    "reason": pl.String,
}
#: A profile's parts, its type and, for a delay profile, its delay.
PROFILE_TYPES_SCHEMA = {**PROFILE_SCHEMA, "type": pl.String, "delay": pl.Float64}
#: Profile types whose jobs need the scheduler to map storage labels to hosts (EXECUTE_JOB's
#: ``storage_mapping``); Batsim aborts on a label nobody mapped.
STORAGE_TYPES = ("parallel_homogeneous_pfs", "data_staging")
#: Why a profile type has no duration here.
NO_DURATION = {
    "smpi": "smpi profile: its duration is the replay of an MPI trace",
    "usage_trace": "usage_trace profile: its duration is the replay of a usage trace",
    "parallel_homogeneous_pfs": "parallel_homogeneous_pfs profile: its duration depends on the storage and network",
    "data_staging": "data_staging profile: its duration depends on the storage and network",
    "send": "send profile: it waits on the scheduler",
    "recv": "recv profile: it waits on the scheduler",
}


class BatsimInputError(InputFileError):
    """A file that is not a readable Batsim workload; the message names it."""


def _number_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _numbers(value: Any) -> list[float] | None:
    """A number or an array of numbers as a list; None if it is neither."""
    values = value if isinstance(value, list) else [value]
    numbers = [_number_or_none(v) for v in values]
    return None if not numbers or None in numbers else numbers


def _no_com(profile: dict) -> bool:
    com = _numbers(profile.get("com", 0))
    return com is not None and not any(com)


def _parts(name: str, profile: Any) -> tuple[float | None, float | None, float | None, str | None]:
    """(seconds, flops, shared flops, reason) of one profile that is not ``composed``."""
    kind = profile.get("type") if isinstance(profile, dict) else None
    if kind == "delay":
        delay = _number_or_none(profile.get("delay"))
        return (delay, 0.0, 0.0, None) if delay is not None else (None, None, None, "delay profile without a delay")
    if kind in ("parallel", "parallel_homogeneous", "parallel_homogeneous_total"):
        cpu = _numbers(profile.get("cpu"))
        if cpu is None:
            return None, None, None, f"{kind} profile without cpu flops"
        if not _no_com(profile):
            return None, None, None, f"{kind} profile with communications: its duration depends on the network"
        if kind == "parallel_homogeneous_total":
            return 0.0, 0.0, cpu[0], None
        return 0.0, max(cpu), 0.0, None
    if kind in NO_DURATION:
        return None, None, None, NO_DURATION[kind]
    return None, None, None, f"profile type {kind!r} is not one of Batsim 4.2.1's"


def _resolve_composed(profiles: pl.DataFrame, composed: dict[str, tuple[list[str], float]]) -> pl.DataFrame:
    """Give each ``composed`` profile the sum of its parts times ``repeat`` (parts may be composed)."""
    parts_named = profiles.filter(pl.col("profile").is_in(list(_parts_named(composed))))
    known = {row["profile"]: row for row in parts_named.iter_rows(named=True)}
    rows, pending = [], dict(composed)
    while pending:
        progress = False
        for name, (sequence, repeat) in list(pending.items()):
            if any(part in pending for part in sequence):
                continue
            del pending[name]
            progress = True
            parts = [known.get(part) for part in sequence]
            missing = [part for part, row in zip(sequence, parts) if row is None]
            bad = [row["reason"] for row in parts if row is not None and row["reason"] is not None]
            if missing or bad:
                reason = f"composed profile of profile {missing[0]!r}, which is not defined" if missing else bad[0]
                row = {"profile": name, "seconds": None, "flops": None, "shared_flops": None, "reason": reason}
            else:
                row = {"profile": name, "reason": None}
                for column in ("seconds", "flops", "shared_flops"):
                    row[column] = repeat * sum(part[column] for part in parts)
            known[name] = row
            rows.append(row)
        if not progress:  # a cycle: Batsim would never end such a job
            for name in pending:
                rows.append(
                    {
                        "profile": name,
                        "seconds": None,
                        "flops": None,
                        "shared_flops": None,
                        "reason": "composed profile that contains itself",
                    }
                )
            break
    return pl.DataFrame(rows, schema=PROFILE_SCHEMA)


def _parts_named(composed: dict[str, tuple[list[str], float]]) -> set[str]:
    return {part for sequence, _ in composed.values() for part in sequence}


@dataclass(frozen=True)
class WorkloadFile:
    """One Batsim workload, read once: its ``jobs`` (:data:`JOB_FIELDS`, in the file's order) and
    its ``profiles`` (:data:`PROFILE_SCHEMA`, composed ones resolved, with each profile's ``type``
    and, for delay profiles, its ``delay``)."""

    jobs: pl.DataFrame
    profiles: pl.DataFrame


def read_workload_file(path: str | Path) -> WorkloadFile:
    """The workload at ``path``, streamed once per process while the file is unchanged: ``run``
    checks, runs and measures the same workload, and a whole cell's holds millions of jobs.

    Refused, naming the file and the job or profile: JSON nested too deep or giving a key twice
    (:mod:`.json_shape`; in a job or among the profiles too), ``jobs`` that is not an array of
    objects, a numeric field that is not a number (:data:`JOB_FIELDS`) or breaks its rule
    (:data:`FIELD_RULES`), and ``scheduling_class`` on some jobs only."""
    path = Path(path)
    try:
        stat = path.stat()
        return _read_file(path.resolve(), stat.st_mtime_ns, stat.st_size, str(path))
    except (ijson.JSONError, OSError) as error:
        reason = next(iter(str(error).strip().splitlines()), type(error).__name__)
        raise BatsimInputError(f"{path}: not a Batsim workload ({reason})") from error


@functools.lru_cache(maxsize=2)
def _read_file(path: Path, _mtime_ns: int, _size: int, name: str) -> WorkloadFile:
    _check_nb_res(path, check_json_shape(path).get(b"nb_res"), name)
    jobs = _jobs(path, name)
    if not jobs.height:
        _check_jobs_array(path, name)
    _check_fields(jobs, name)
    return WorkloadFile(jobs, _profiles(path, name))


def forget_workload_files() -> None:
    """Drop the tables read so far: a streamed run holds no workload while it simulates (a week of
    the whole cell's is about 1 GB), and reads it again for its accounting."""
    _read_file.cache_clear()


def _check_nb_res(path: Path, offset: int | None, name: str) -> None:
    """Refuse an ``nb_res`` (at ``offset``, if given) that is not an integer in 1..10^6: Batsim
    aborts on it."""
    if offset is None:
        return
    with path.open("rb") as handle:
        handle.seek(offset)
        text = handle.read(64).decode("utf-8", "replace").lstrip()
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        value = text.split(",")[0].strip()
    if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_MACHINES):
        raise BatsimInputError(f"{name}: nb_res {value!r} must be an integer in 1..{MAX_MACHINES} (Batsim aborts)")


def _check_jobs_array(path: Path, name: str) -> None:
    """Refuse a workload whose ``jobs`` is missing or not an array (no job was read from it)."""
    with path.open("rb") as handle:
        for prefix, event, _ in ijson.parse(handle):
            if prefix == "jobs":
                if event != "start_array":
                    raise BatsimInputError(f"{name}: jobs must be an array of jobs")
                return
    raise BatsimInputError(f"{name}: no jobs array")


def _check_fields(jobs: pl.DataFrame, name: str) -> None:
    """Refuse the first job whose field breaks its rule (:data:`FIELD_RULES`), and a
    ``scheduling_class`` that some jobs have and others lack (the fit would drop the others)."""
    for field_name, valid, expectation in FIELD_RULES:
        bad = jobs.filter(pl.col(field_name).is_not_null() & ~valid.fill_null(False))
        if bad.height:
            job = bad.row(0, named=True)
            raise BatsimInputError(f"{name}: job {job['id']}: {field_name} {job[field_name]:g} must be {expectation}")
    classes = jobs["scheduling_class"].is_null()
    if 0 < classes.sum() < jobs.height:
        lacking, having = jobs.filter(classes).row(0, named=True), jobs.filter(~classes).row(0, named=True)
        raise BatsimInputError(
            f"{name}: job {lacking['id']} has no scheduling_class, which job {having['id']} and "
            f"{jobs.height - classes.sum() - 1} other(s) have: give it to every job or to none"
        )


def _profile_row(name: str, profile: Any) -> tuple:
    kind = str(profile.get("type")) if isinstance(profile, dict) else "?"
    delay = _number_or_none(profile.get("delay")) if kind == "delay" else None
    return (name, *_parts(name, profile), kind, delay)


def _profiles(path: Path, where: str) -> pl.DataFrame:
    frames, composed, names = [], {}, set()
    with path.open("rb") as handle:
        for chunk in in_chunks(ijson.kvitems(handle, "profiles", use_float=True, map_type=_Object)):
            rows = []
            for name, profile in chunk:
                if name in names:
                    raise BatsimInputError(f"{where}: profile {name!r} is defined twice")
                names.add(name)
                _check_object(profile, where, f"profile {name!r}")
                if isinstance(profile, dict) and profile.get("type") == "composed":
                    sequence = profile.get("seq")
                    repeat = _number_or_none(profile.get("repeat", 1))
                    if isinstance(sequence, list) and repeat is not None and repeat >= 0:
                        composed[name] = ([str(part) for part in sequence], repeat)
                        continue
                    rows.append(
                        (name, None, None, None, "composed profile without a seq of profiles", "composed", None)
                    )
                else:
                    rows.append(_profile_row(name, profile))
            frames.append(pl.DataFrame(rows, schema=PROFILE_TYPES_SCHEMA, orient="row"))
    profiles = pl.concat(frames) if frames else pl.DataFrame(schema=PROFILE_TYPES_SCHEMA)
    if composed:
        resolved = _resolve_composed(profiles, composed).with_columns(
            type=pl.col("profile").replace_strict(_composed_types(profiles, composed), default="composed"),
            delay=pl.lit(None, pl.Float64),
        )
        profiles = pl.concat([profiles, resolved])
    return profiles


def _composed_types(profiles: pl.DataFrame, composed: dict[str, tuple[list[str], float]]) -> dict[str, str]:
    """A composed profile's type: that of its first I/O part (:data:`STORAGE_TYPES`), as Batsim
    needs that part's storage mapped; else ``composed``. Parts may be composed themselves."""
    types = dict(zip(profiles["profile"], profiles["type"], strict=True))
    types.update({name: "composed" for name in composed})
    for _ in range(len(composed)):
        for name, (sequence, _) in composed.items():
            storage = [types.get(part) for part in sequence if types.get(part) in STORAGE_TYPES]
            if storage:
                types[name] = storage[0]
    return {name: types[name] for name in composed}


class _Object(dict):
    """A JSON object as the stream builds it, noting a key given twice (under :data:`_TWICE`)
    rather than keeping the last value silently."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self:
            dict.__setitem__(self, _TWICE, key)
        dict.__setitem__(self, key, value)


#: Where :class:`_Object` notes a repeated key: no JSON key can be this object.
_TWICE: Any = object()


def _check_object(value: Any, where: str, what: str) -> None:
    """Refuse a value that is not a JSON object, or one that gives a key twice."""
    if not isinstance(value, dict):
        raise BatsimInputError(f"{where}: {what} is not a JSON object (got {value!r})")
    if _TWICE in value:
        raise BatsimInputError(f"{where}: {what}: key {value[_TWICE]!r} is given twice")


def _column(values: list[Any], dtype: pl.DataType, name: str, jobs: list[dict], where: str) -> pl.Series:
    """A job field's values as ``dtype``: numbers (never booleans) as floats; any value but null
    as its text. A value of a numeric field that is not a number is refused, naming the job. The
    common cases (all numbers, all integers) skip Python's loop."""
    kinds = set(map(type, values)) - {type(None)}
    if dtype == pl.Float64:
        if not kinds <= {int, float}:
            index = next(i for i, value in enumerate(values) if value is not None and _number_or_none(value) is None)
            raise BatsimInputError(f"{where}: job {jobs[index].get('id')}: {name} {values[index]!r} is not a number")
        return pl.Series(values, dtype=pl.Float64)
    if kinds <= {int}:
        return pl.Series(values, dtype=pl.Int64).cast(pl.String)
    return pl.Series([None if value is None else str(value) for value in values], dtype=pl.String)


def _jobs(path: Path, where: str) -> pl.DataFrame:
    frames, read = [], 0
    with path.open("rb") as handle:
        for chunk in in_chunks(ijson.items(handle, "jobs.item", use_float=True, map_type=_Object)):
            if not all(type(job) is _Object and _TWICE not in job for job in chunk):
                index = next(i for i, job in enumerate(chunk) if type(job) is not _Object or _TWICE in job)
                job = chunk[index]
                _check_object(job, where, f"job {job.get('id')}" if isinstance(job, dict) else f"jobs[{read + index}]")
            columns = {
                name: _column([job.get(name) for job in chunk], dtype, name, chunk, where)
                for name, dtype in JOB_FIELDS.items()
            }
            frames.append(pl.DataFrame(columns, schema=JOB_FIELDS))
            read += len(chunk)
    return pl.concat(frames) if frames else pl.DataFrame(schema=JOB_FIELDS)


def _read(path: Path) -> pl.DataFrame:
    """The jobs with their profile's ``delay``, the times checked as everywhere (:mod:`.job_times`),
    and the composed profiles Batsim cannot run (it crashes on a cycle) refused."""
    read = read_workload_file(path)
    broken = read.profiles.filter(
        pl.col("reason").str.starts_with("composed profile that contains")
        | pl.col("reason").str.starts_with("composed profile of profile")
    )
    if broken.height:
        profile = broken.row(0, named=True)
        raise BatsimInputError(f"{path}: profile {profile['profile']!r} is a {profile['reason']}")
    delays = read.profiles.select("profile", "delay")
    unknown = read.jobs.join(delays, on="profile", how="anti")
    if unknown.height:
        job = unknown.row(0, named=True)
        raise BatsimInputError(f"{path}: job {job['id']}: profile {job['profile']!r} is not among the profiles")
    table = read.jobs.join(delays, on="profile", how="left", maintain_order="left")
    check_job_times(table, str(path))
    return table


def job_times(path: str | Path) -> pl.DataFrame:
    """Every job's ``id``, ``subtime``, ``delay`` (its delay profile's, else null) and ``walltime``
    (null when absent), refused as Batsim would refuse them (:func:`.job_times.check_job_times`)."""
    return _read(Path(path)).select(JOB_TIME_COLUMNS)


def job_requests(path: str | Path) -> pl.DataFrame:
    """Every job's ``cpu``, ``memory`` and ``priority`` (null where absent), in the order of
    :func:`job_times`."""
    return _read(Path(path)).select("cpu", "memory", "priority")


@dataclass(frozen=True)
class BatsimTable:
    """The fitting table of a Batsim workload and what was assumed for it, e.g.
    ``{"kind": 250}``: 250 jobs without ``kind`` were taken as tasks."""

    frame: pl.DataFrame
    defaults: dict[str, int] = field(default_factory=dict)

    def notes(self) -> list[str]:
        said = {
            "kind": "have no kind: taken as tasks (they run to their end)",
            "priority": f"have no priority: they get {DEFAULT_PRIORITY}",
        }
        return [f"{count} of {self.frame.height} jobs {said[name]}" for name, count in self.defaults.items() if count]


def read_batsim_table(path: str | Path, speed: float | None = None) -> BatsimTable:
    """One row per job (see the module docstring); ``speed``: the machines' flop/s, for profiles
    of flops."""
    path = Path(path)
    read = read_workload_file(path)
    jobs, profiles = read.jobs, read.profiles.select(list(PROFILE_SCHEMA))
    check_job_times(
        jobs.join(read.profiles.select("profile", "delay"), on="profile", how="left", maintain_order="left"), str(path)
    )
    table = jobs.join(profiles, on="profile", how="left", maintain_order="left")
    width = pl.col("res").fill_null(1.0)
    computes = (pl.col("flops") > 0) | (pl.col("shared_flops") > 0)
    if speed is None:
        duration = pl.when(computes).then(None).otherwise(pl.col("seconds"))
        no_speed = pl.when(computes).then(pl.lit("profile of flops: its duration needs the machines' speed (--speed)"))
    else:
        duration = pl.col("seconds") + pl.col("flops") / speed + pl.col("shared_flops") / (speed * width)
        no_speed = pl.lit(None, pl.String)
    walltime = pl.col("walltime")
    cut = (
        pl.when(duration.is_null())
        .then(None)
        .when(walltime > 0)
        .then(pl.min_horizontal(duration, walltime))
        .otherwise(duration)
    )
    unusable = (
        pl.when(pl.col("profile").is_null())
        .then(pl.lit("job without a profile"))
        .when(pl.col("seconds").is_null() & pl.col("reason").is_null())
        .then(pl.lit("job of a profile the workload does not define"))
        .otherwise(pl.coalesce(pl.col("reason"), no_speed))
    )
    defaults = {name: table[name].null_count() for name in ("kind", "priority")}
    selected = [
        "subtime",
        cut.alias("makespan"),
        pl.col("kind").fill_null("task"),
        pl.col("priority").fill_null(DEFAULT_PRIORITY),
        "class",
        "scheduling_class",
        unusable.alias("unusable"),
    ]
    if (table["res"].fill_null(1.0) != 1.0).any():
        selected.append(pl.col("res").alias("width"))
    if table["google_job"].null_count() < table.height:
        # a task of no job (a warm start's) is a job of its own: ids below every real one
        own = -pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
        job = pl.col("google_job").cast(pl.Int64, strict=False)
        selected.append(pl.when(job.is_null()).then(own).otherwise(job).alias("job_id"))
    frame = table.select(selected)
    # Optional fields that no job carries are dropped rather than read as missing on every row.
    dropped = [name for name in (*OPTIONAL_FIELDS, "unusable") if frame[name].null_count() == frame.height]
    return BatsimTable(frame.drop(dropped), defaults)


def read_batsim_workload(path: str | Path, speed: float | None = None) -> pl.DataFrame:
    """The table of :func:`read_batsim_table`: ``subtime``, ``makespan``, ``kind``, ``priority``
    and, when some job has them, ``class``, ``scheduling_class``, ``width``, ``job_id`` and
    ``unusable`` (why a job has no makespan)."""
    return read_batsim_table(path, speed).frame
