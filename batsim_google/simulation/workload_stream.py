"""A Batsim workload read as simulated time needs it: jobs in submission order, each with its profile.

A streamed run (:mod:`.streamed_submissions`) starts Batsim with workloads holding no job and
registers each job at its submission time, so that Batsim holds the jobs submitted and not yet
finished, not the whole file (Batsim 4.2.1 parses a workload whole and keeps every job until it
ends: a generated full-cell day took 11.2 GB). This reader gives those jobs in the order Batsim's
own submitter would (``job_comparator_subtime_number``: by submission time, then by the job id's
text), without reading the file whole: two streamed parsers (ijson) on the same file, one over
``jobs`` and one over ``profiles``, started at the offsets of those values
(:func:`~batsim_google.fitting.json_shape.check_json_shape`). The profiles are read as far as the
next job needs: this package's writer puts them in the order of their first job, so that the read-ahead
holds a few; the jobs of one submission time are held together, to be sorted by id.

A workload whose jobs are not in submission-time order (a trace window's, its initial state among
the later jobs) is sorted on disk first, a chunk of jobs at a time, then merged: memory holds a chunk
and the profiles. Told nothing, the reader takes a file as ordered and refuses the first job
earlier than the one before it, an InputFileError naming the file and the job
(:func:`in_submission_order` tells before a run).

Told how many jobs name each profile that more than one job names (:func:`profile_uses`, read
before the run), the reader hands a shared profile to each of its jobs to register under a name of
the job's own (:func:`own_profile`), and keeps it only until its last job; every other profile is
forgotten once handed out: memory follows the jobs read, not the workload's length, and so does
Batsim's, which a streamed run starts without ``--enable-profile-reuse`` (it frees a job's profile
once the job ended). Told nothing, it keeps every profile's ``delay`` (the policy's work of a task):
a later job might name the profile again, and Batsim refuses a profile registered twice.
"""

from __future__ import annotations

import heapq
import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from batsim_google.errors import InputFileError
from batsim_google.fitting.chunks import in_chunks
from batsim_google.fitting.json_shape import check_json_shape
from batsim_google.scheduling.wake_ups import BATSIM_DECIMALS

#: yajl's message once a value is complete and more text follows it: here, the ``jobs`` array or
#: the ``profiles`` object has ended (both parsers start inside the workload's top-level object).
VALUE_ENDED = "trailing garbage"
#: Jobs of a workload not in submission order sorted in memory at once (:meth:`WorkloadStream._sorted_jobs`).
SORT_CHUNK = 50_000
#: Profile types whose definition names other profiles: registered alone, Batsim would not find them.
REFERENCING_TYPES = frozenset({"composed"})


@dataclass(frozen=True)
class StreamedJob:
    """One workload job as Batsim will be given it: ``job_id`` with its workload's name (``w0!17``),
    its JSON object (``fields``), the name Batsim knows its profile by (its own copy's for a shared
    profile: :func:`own_profile`), that profile's definition when the job registers it (None when
    Batsim has it already) and the profile's ``delay`` (0 without one)."""

    job_id: str
    subtime: float
    fields: dict
    profile: str
    new_profile: dict | None
    delay: float

    def as_sent(self) -> tuple[dict, float]:
        """The job's fields and its profile's delay as a loaded run's scheduler would get them:
        Batsim 4.2.1 writes every number of its messages with ``%f`` (:func:`as_batsim_sends`)."""
        return as_batsim_sends(self.fields), as_batsim_sends(self.delay)

    @property
    def workload(self) -> str:
        return self.job_id.split("!", 1)[0]

    @property
    def res(self) -> int:
        return self.fields.get("res", 1)

    @property
    def walltime(self) -> float:
        """Batsim's walltime: the job's, -1 without one."""
        walltime = self.fields.get("walltime")
        return -1.0 if walltime is None else walltime


def as_batsim_sends(value: Any) -> Any:
    """``value`` (a JSON value) as Batsim 4.2.1's protocol writer gives it to the scheduler: every
    float printed with :data:`~batsim_google.scheduling.wake_ups.BATSIM_DECIMALS` decimals
    (``protocol.hpp``'s ``Writer::Double``), so that a
    priority 0.34580767906865734 in the file reaches the policy as 0.345808."""
    if isinstance(value, float):
        return float(f"{value:.{BATSIM_DECIMALS}f}")
    if isinstance(value, dict):
        return {key: as_batsim_sends(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_batsim_sends(item) for item in value]
    return value


def _values(handle: BinaryIO, path: Path, what: str, items: Iterator) -> Iterator:
    """The values of ``items`` up to the end of the value parsed; a parse error names the file."""
    try:
        yield from items
    except ijson.JSONError as error:
        if VALUE_ENDED not in str(error):
            reason = next(iter(str(error).strip().splitlines()), type(error).__name__)
            raise InputFileError(f"{path}: {what}: not JSON ({reason})") from None
    finally:
        handle.close()


class WorkloadStream:
    """The jobs of one Batsim workload file in submission order (:meth:`jobs`), named as Batsim
    names the ``index``-th workload of its command line (``w<index>``); ``uses``: how many jobs
    name each profile that more than one job names (:func:`profile_uses`; None: not known, every
    profile's delay is kept)."""

    def __init__(
        self, path: str | Path, index: int = 0, in_order: bool = True, uses: Mapping[str, int] | None = None
    ) -> None:
        self.path = Path(path)
        self.name = f"w{index}"
        self.in_order = in_order
        try:
            offsets = check_json_shape(self.path)
        except OSError as error:
            raise InputFileError(f"{self.path}: {error}") from error
        if b"jobs" not in offsets:
            raise InputFileError(f"{self.path}: no jobs array")
        self._nb_res_at = offsets.get(b"nb_res")
        self._jobs_at = offsets[b"jobs"]
        self._profiles_at = offsets.get(b"profiles")
        self._profiles: Iterator[tuple[str, Any]] | None = None
        self._ahead: dict[str, Any] = {}  # profiles read before the job that names them
        self._delays: dict[str, float] = {}  # uses not known: every profile handed out, its delay
        self._shared: dict[str, dict] = {}  # uses known: the shared profiles handed out, until their last job
        self._uses = None if uses is None else dict(uses)  # jobs still to name each shared profile

    @property
    def nb_res(self) -> int | None:
        """The workload's ``nb_res`` (None when absent or not an integer)."""
        if self._nb_res_at is None:
            return None
        handle = self._open_at(self._nb_res_at)
        value = next(_values(handle, self.path, "nb_res", ijson.items(handle, "")), None)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _open_at(self, offset: int) -> BinaryIO:
        try:
            handle = self.path.open("rb")
        except OSError as error:
            raise InputFileError(f"{self.path}: {error}") from error
        handle.seek(offset)
        return handle

    def _raw_jobs(self) -> Iterator[tuple[int, dict]]:
        """(index in ``jobs``, job object) in the file's order."""
        handle = self._open_at(self._jobs_at)
        items = ijson.items(handle, "item", use_float=True)
        for index, job in enumerate(_values(handle, self.path, "jobs", items)):
            if not isinstance(job, dict):
                raise InputFileError(f"{self.path}: jobs[{index}] is not a JSON object (got {job!r})")
            yield index, job

    def _timed_jobs(self) -> Iterator[tuple[int, dict, float]]:
        """(index, job, submission time) in the file's order; a subtime that is no number is refused."""
        for index, job in self._raw_jobs():
            subtime = job.get("subtime")
            if isinstance(subtime, bool) or not isinstance(subtime, int | float):
                raise InputFileError(
                    f"{self.path}: jobs[{index}] (id {job.get('id')!r}): subtime {subtime!r} is not a number"
                )
            yield index, job, float(subtime)

    def jobs(self) -> Iterator[StreamedJob]:
        """Every job, by submission time then by id text (Batsim's order). A file in that order
        is read as it goes, and a job earlier than the one before it is refused; one that is not
        (``in_order`` False) is sorted on disk first (:meth:`_sorted_jobs`)."""
        if not self.in_order:
            yield from self._sorted_jobs()
            return
        group: list[tuple[str, int, dict]] = []
        group_time = None
        for index, job, subtime in self._timed_jobs():
            if group_time is not None and subtime != group_time:
                if subtime < group_time:
                    raise InputFileError(
                        f"{self.path}: jobs[{index}] (id {job.get('id')!r}) is submitted at {subtime:g} s, before "
                        f"the job above it ({group_time:g} s): a streamed run needs jobs in submission order"
                    )
                yield from self._in_batsim_order(group)
                group = []
            group_time = subtime
            group.append((f"{self.name}!{job.get('id')}", index, job))
        yield from self._in_batsim_order(group)

    def _sorted_jobs(self) -> Iterator[StreamedJob]:
        """The jobs of a file not in submission order: sorted :data:`SORT_CHUNK` at a time into
        runs of JSON lines in a temporary folder, then merged, so that memory holds a chunk of
        jobs and the profiles (read whole: their order is no longer the jobs')."""
        while True:  # the profiles, whole
            try:
                name, profile = next(self._profile_items())
            except StopIteration:
                break
            if name in self._ahead:
                raise InputFileError(f"{self.path}: profile {name!r} is defined twice")
            self._ahead[name] = profile
        with tempfile.TemporaryDirectory(prefix="batsim-google-sort-") as folder:
            runs = []
            for chunk in in_chunks(self._timed_jobs(), SORT_CHUNK):
                entries = sorted(
                    ((subtime, f"{self.name}!{job.get('id')}", index, job) for index, job, subtime in chunk),
                    key=lambda entry: entry[:2],
                )
                runs.append(Path(folder) / f"run{len(runs)}.jsonl")
                with runs[-1].open("w", encoding="utf-8") as run:
                    run.writelines(json.dumps(entry) + "\n" for entry in entries)
            merged = heapq.merge(*map(_run_entries, runs), key=lambda entry: entry[:2])
            for _, job_id, index, job in merged:
                yield self._streamed(job_id, index, job)

    def _in_batsim_order(self, group: list[tuple[str, int, dict]]) -> Iterator[StreamedJob]:
        for job_id, index, job in sorted(group, key=lambda entry: entry[0]):
            yield self._streamed(job_id, index, job)

    def _streamed(self, job_id: str, index: int, job: dict) -> StreamedJob:
        name = job.get("profile")
        if not isinstance(name, str):
            raise InputFileError(f"{self.path}: jobs[{index}] (id {job.get('id')!r}): profile {name!r} is not a name")
        name, new_profile, delay = self._profile(name, job_id)
        return StreamedJob(job_id, float(job["subtime"]), job, name, new_profile, delay)

    def _profile(self, name: str, job_id: str) -> tuple[str, dict | None, float]:
        """(the name Batsim knows the job's profile by, its definition to register with the job
        (None when Batsim has it already), its delay). A profile that several jobs name (uses
        known) is registered with each of them under a name of the job's own (:func:`own_profile`):
        a streamed run starts Batsim without ``--enable-profile-reuse``, so that Batsim frees a job's
        profile once the job ended, and a later job could not name it."""
        if name in self._shared:
            profile = self._shared[name]
            self._named(name)
            return own_profile(name, job_id), profile, _delay(profile)
        if name in self._delays:
            return name, None, self._delays[name]
        while name not in self._ahead:
            try:
                found, profile = next(self._profile_items())
            except StopIteration:
                raise InputFileError(f"{self.path}: job {job_id}: profile {name!r} is not among the profiles") from None
            if found in self._ahead or found in self._delays or found in self._shared:
                raise InputFileError(f"{self.path}: profile {found!r} is defined twice")
            self._ahead[found] = profile
        profile = self._ahead.pop(name)
        if not isinstance(profile, dict):
            raise InputFileError(f"{self.path}: profile {name!r} is not a JSON object (got {profile!r})")
        if profile.get("type") in REFERENCING_TYPES:
            raise InputFileError(
                f"{self.path}: profile {name!r} is {profile['type']}: a streamed run registers profiles alone"
            )
        if self._uses is None:
            self._delays[name] = _delay(profile)
        elif name in self._uses:
            self._shared[name] = profile
            self._named(name)
            return own_profile(name, job_id), profile, _delay(profile)
        return name, profile, _delay(profile)

    def _named(self, name: str) -> None:
        """A job named the shared profile ``name``: forget it after the last one."""
        left = self._uses[name] - 1
        if left > 0:
            self._uses[name] = left
        else:
            del self._uses[name], self._shared[name]

    def _profile_items(self) -> Iterator[tuple[str, Any]]:
        if self._profiles is None:
            if self._profiles_at is None:
                self._profiles = iter(())
            else:
                handle = self._open_at(self._profiles_at)
                self._profiles = _values(handle, self.path, "profiles", ijson.kvitems(handle, "", use_float=True))
        return self._profiles


def own_profile(profile: str, job_id: str) -> str:
    """The name a job (``w0!17``) registers its copy of a shared ``profile`` under: ``profile@17``."""
    return f"{profile}@{job_id.split('!', 1)[1]}"


def _delay(profile: dict) -> float:
    """A profile's ``delay`` (0 without a number there)."""
    delay = profile.get("delay", 0.0)
    return float(delay) if isinstance(delay, int | float) and not isinstance(delay, bool) else 0.0


def _run_entries(path: Path) -> Iterator[list]:
    """The entries of a sorted run, a JSON line each, read as the merge needs them."""
    with path.open(encoding="utf-8") as run:
        for line in run:
            yield json.loads(line)


def streamed_jobs(
    paths: Sequence[str | Path], to_sort: Sequence[str | Path] = (), uses: Sequence[Mapping[str, int]] | None = None
) -> Iterator[StreamedJob]:
    """The jobs of the workloads (named ``w0``, ``w1``, ... in this order) merged in submission
    order, the first workload's first at equal times (each workload is one submitter in Batsim);
    those of ``to_sort`` are not in submission order and get sorted (:meth:`WorkloadStream.jobs`);
    ``uses``: each workload's :func:`profile_uses` (None: not known)."""
    unsorted = {str(path) for path in to_sort}
    streams = [
        _numbered(
            index, WorkloadStream(path, index, str(path) not in unsorted, None if uses is None else uses[index]).jobs()
        )
        for index, path in enumerate(paths)
    ]
    for _, job in heapq.merge(*streams, key=lambda entry: (entry[1].subtime, entry[0])):
        yield job


def _numbered(index: int, jobs: Iterator[StreamedJob]) -> Iterator[tuple[int, StreamedJob]]:
    return ((index, job) for job in jobs)


def in_submission_order(path: str | Path) -> bool:
    """Whether the jobs of the workload at ``path`` come by submission time in the file. Read from
    its table (:func:`~batsim_google.fitting.batsim_input.read_workload_file`, which a run's checks
    read already)."""
    from batsim_google.fitting.batsim_input import read_workload_file

    return read_workload_file(path).jobs["subtime"].is_sorted()


def profile_uses(path: str | Path) -> dict[str, int]:
    """How many jobs of the workload at ``path`` name each profile that more than one of them
    names (read from its table, as :func:`in_submission_order`): the stream's reader forgets the
    others once handed out, and these after their last job."""
    from batsim_google.fitting.batsim_input import read_workload_file

    counts = read_workload_file(path).jobs["profile"].drop_nulls().value_counts(name="uses")
    shared = counts.filter(counts["uses"] > 1)
    return dict(zip(shared["profile"].to_list(), shared["uses"].to_list(), strict=True))


def unstreamable(path: str | Path) -> str | None:
    """Why the workload at ``path`` cannot be streamed (None if it can): profiles that name other
    profiles (read from its table, as :func:`in_submission_order`)."""
    from batsim_google.fitting.batsim_input import read_workload_file

    read = read_workload_file(path)
    referencing = read.profiles.filter(read.profiles["type"].is_in(list(REFERENCING_TYPES)))
    if referencing.height:
        return f"profile {referencing['profile'][0]!r} is {referencing['type'][0]}"
    return None
