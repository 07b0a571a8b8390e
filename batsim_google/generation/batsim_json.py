"""Streamed writer of Batsim 4 JSON workloads with ``delay`` profiles.

Jobs are written batch by batch as they come; profiles, which Batsim expects after the jobs, go to
a temporary file beside the output and are appended at the end, so memory stays flat whatever the
job count. Lines are formatted column-wise by polars (a JSON object a row), not job by job in
Python, by two background threads while the caller draws the next batch; a batch's lines are
written in order once formatted, and at most :data:`IN_FLIGHT` batches wait, which bounds memory.

With a ``grain`` (seconds), delays are rounded to multiples of it and jobs of equal rounded delay
share one profile, which shrinks files a lot; without it every job has its own profile, named by
the job id. Job ids are integers: Batsim prefixes them with the workload name and ``!``, so they
never contain ``!`` and cannot be mistaken for a workload name. Extra job columns travel to the
scheduler unchanged in Batsim's JOB_SUBMITTED events.

Services (``kind`` = ``service``) have no work of their own: they run until stopped. Their ``delay``
is their lifetime, written as the job's walltime, and they all share the profile ``service``, whose
delay never ends first; Batsim stops them at the end of their lifetime (COMPLETED_WALLTIME_REACHED),
under any scheduler.

The other jobs' walltimes follow the writer's walltime mode (:mod:`.walltime`), computed from the
delay as written (rounded, or a whole number of grains), so that a walltime meant not to shorten a
job never does; the file records the mode in its top-level ``walltime`` field.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import polars as pl

from batsim_google.errors import ParameterError
from batsim_google.generation.job_times import check_job_times
from batsim_google.generation.service_profile import SERVICE_DELAY, SERVICE_PROFILE
from batsim_google.generation.walltime import NO_WALLTIMES, FactorStream, WalltimeMode
from batsim_google.output_files import AtomicFile
from batsim_google.units import HOUR

#: Shortest delay written: a Batsim job must last a positive time at the printed precision.
MIN_DELAY = 1e-6
#: Decimals kept for times (the trace's own resolution is the microsecond).
TIME_DECIMALS = 6
REQUIRED = ("id", "subtime", "delay")
#: Most grains a makespan may count (profile names and steps are 64-bit integers).
MAX_STEPS = 1e15
#: Coarsest grain, seconds. A grain is a rounding step, and a task shorter than half a grain
#: lasts one grain: beyond an hour the rounding would change the makespans more than it shares
#: profiles (``--grain 1e300`` made every job last 1e300 s).
MAX_GRAIN = HOUR
#: Batches formatted at once in the background before the caller waits for the oldest.
IN_FLIGHT = 2
#: What ends every line, jobs' and profiles'; the last one's is cut when the file is closed.
SEPARATOR = b",\n"
#: The column of a log's requested times, for the ``requested`` walltime mode.
REQUESTED = "requested_time"


class WorkloadWriter:
    """Write a Batsim workload to ``path`` batch by batch; use as a context manager.

    The file is written under a temporary name (:class:`AtomicFile`) and takes its place only when
    :meth:`close` ran; an exception inside the ``with`` block removes it and leaves any earlier
    file at ``path`` untouched, never invalid JSON. ``walltime``: the mode of the jobs' walltimes
    (jobs given a ``walltime`` column keep theirs); ``rng``: the draws of ``user-estimate``.
    """

    def __init__(
        self,
        path: str | Path,
        nb_res: int,
        grain: float | None = None,
        meta: Mapping[str, Any] | None = None,
        walltime: WalltimeMode = NO_WALLTIMES,
        rng: np.random.Generator | None = None,
    ) -> None:
        if nb_res < 1:
            raise ParameterError(f"nb_res must be >= 1 (got {nb_res})")
        if grain is not None and not (0 < grain <= MAX_GRAIN):
            raise ParameterError(f"grain must be a positive number of seconds, at most {MAX_GRAIN:g} (got {grain})")
        self.path = Path(path)
        self.grain = None if grain is None else float(grain)
        self.walltime = walltime
        self._factors = FactorStream(np.random.default_rng(0) if rng is None else rng)
        self.jobs = 0
        self.profiles = 0
        self._shared_profiles: set[int] = set()
        self._service_profile_written = False
        self._formatter = ThreadPoolExecutor(max_workers=IN_FLIGHT, thread_name_prefix="workload-writer")
        self._in_flight: deque[Future[tuple[pl.DataFrame, pl.DataFrame]]] = deque()
        self._target = AtomicFile(self.path)
        try:
            self._profiles = tempfile.TemporaryFile("w+b", dir=self.path.parent)
            self._out = self._target.temporary.open("wb")
        except BaseException as error:
            self._target.discard(error)
            raise
        header = {
            "nb_res": int(nb_res),
            "walltime": walltime.to_mapping(),
            **({"meta": dict(meta)} if meta else {}),
        }
        self._out.write(json.dumps(header)[:-1].encode() + b',\n"jobs": [\n')

    def __enter__(self) -> WorkloadWriter:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if error is None:
            try:
                self.close()
            except BaseException as failure:  # e.g. the last batch's write failed: no half-written file either
                self._discard(failure)
                raise
        else:
            self._discard(error)

    def _discard(self, error: BaseException) -> None:
        """Remove the temporary file whatever happens on the way (closing a file on a full disk
        fails too); an OSError comes out as an OutputFileError naming the workload."""
        try:
            self._formatter.shutdown(cancel_futures=True)
            for handle in (self._out, self._profiles):
                with contextlib.suppress(OSError):
                    handle.close()
        finally:
            self._target.discard(error)

    def write(self, jobs: pl.DataFrame) -> None:
        """Append jobs: columns ``id``, ``subtime``, ``delay`` (s), optionally ``res`` (default 1)
        and ``walltime`` (default: the writer's mode), and any extra numeric or string columns."""
        missing = [name for name in REQUIRED if name not in jobs.columns]
        if missing:
            raise ValueError(f"jobs lack column(s) {missing}")
        if jobs.height == 0:
            return
        given_walltime = pl.col("walltime") if "walltime" in jobs.columns else pl.lit(None, pl.Float64)
        times = jobs.select(
            "id", "subtime", pl.col("delay").clip(lower_bound=MIN_DELAY), given_walltime.alias("walltime")
        )
        check_job_times(times, str(self.path))
        is_service = (pl.col("kind") == "service") if "kind" in jobs.columns else pl.lit(False)
        profile, profiles, written = self._profiles_of(jobs, is_service)
        if not self._service_profile_written and jobs.select(is_service.any()).item():
            self._service_profile_written = True
            service = pl.DataFrame({"name": [SERVICE_PROFILE], "delay": [SERVICE_DELAY]})
            profiles = pl.concat([service, profiles.cast(service.schema)])
        walltime = pl.col("walltime") if "walltime" in jobs.columns else pl.lit(self._walltimes(jobs, written))
        extra = [name for name in jobs.columns if name not in (*REQUIRED, "res", "walltime")]
        lines = jobs.select(
            pl.col("id"),
            pl.col("subtime").round(TIME_DECIMALS),
            pl.col("res") if "res" in jobs.columns else pl.lit(1).alias("res"),
            pl.when(is_service).then(pl.lit(SERVICE_PROFILE)).otherwise(profile).alias("profile"),
            pl.when(is_service)
            .then(pl.col("delay").clip(lower_bound=MIN_DELAY).round(TIME_DECIMALS))
            .otherwise(walltime)
            .alias("walltime"),
            *extra,
        )
        self._in_flight.append(self._formatter.submit(_format, lines, profiles))
        self.jobs += jobs.height
        self.profiles += profiles.height
        while len(self._in_flight) > IN_FLIGHT:
            self._write_oldest()

    def _walltimes(self, jobs: pl.DataFrame, written: pl.Series) -> pl.Series:
        """The walltimes of the writer's mode for jobs whose delays are written as ``written``."""
        requested = jobs[REQUESTED].cast(pl.Float64).fill_null(np.nan).to_numpy() if REQUESTED in jobs.columns else None
        values = self.walltime.walltimes(written.to_numpy(), requested, self._factors).round(TIME_DECIMALS)
        return pl.Series("walltime", values)

    def _profiles_of(self, jobs: pl.DataFrame, is_service: pl.Expr) -> tuple[pl.Expr, pl.DataFrame, pl.Series]:
        """Each task's profile name, the profiles not written yet (services have theirs), and each
        job's delay as written."""
        delay = pl.col("delay").clip(lower_bound=MIN_DELAY)
        if self.grain is None:
            name = pl.col("id").cast(pl.String)
            written = jobs.select(delay.round(TIME_DECIMALS)).to_series()
            return name, jobs.filter(~is_service).select(name.alias("name"), delay.round(TIME_DECIMALS)), written
        ratio = jobs.select((delay / self.grain).max()).item()
        if ratio >= MAX_STEPS:
            raise ParameterError(
                f"a makespan of {ratio * self.grain:g} s is more than {MAX_STEPS:.0e} grains of {self.grain:g} s"
            )
        steps = jobs.select((delay / self.grain).round(0).clip(lower_bound=1).cast(pl.Int64)).to_series()
        task_steps = steps.filter(jobs.select(~is_service).to_series())
        new = pl.Series(sorted(set(task_steps.unique().to_list()) - self._shared_profiles), dtype=pl.Int64)
        self._shared_profiles.update(new.to_list())
        name = pl.lit("g") + pl.lit(steps).cast(pl.String)
        written = (steps * self.grain).cast(pl.Float64)
        return name, pl.DataFrame({"name": "g" + new.cast(pl.String), "delay": new * self.grain}), written

    def _write_oldest(self) -> None:
        job_lines, profile_lines = self._in_flight.popleft().result()
        _write_lines(job_lines, self._out)
        _write_lines(profile_lines, self._profiles)

    def close(self) -> None:
        """Finish the file: close the jobs array and append the profiles."""
        while self._in_flight:
            self._write_oldest()
        self._formatter.shutdown()
        self._out.seek(-len(SEPARATOR) if self.jobs else -1, os.SEEK_END)  # the last separator
        self._out.write(b'\n],\n"profiles": {')
        if self.profiles:
            self._out.write(b"\n")
            self._profiles.truncate(self._profiles.tell() - len(SEPARATOR))
            self._profiles.seek(0)
            shutil.copyfileobj(self._profiles, self._out)
        self._profiles.close()
        self._out.write(b"\n}\n}\n")
        self._out.close()
        self._target.commit()


def _format(lines: pl.DataFrame, profiles: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A JSON object a job (polars escapes the strings as its NDJSON writer does), and a profile a
    line: ``"name":{"type":"delay","delay":d}``."""
    profile_lines = profiles.select(
        pl.concat_str(
            pl.lit('"'),
            pl.col("name"),
            pl.lit('":{"type":"delay","delay":'),
            pl.col("delay").cast(pl.String),
            pl.lit("}"),
        )
    )
    return lines.select(pl.struct(pl.all()).struct.json_encode()), profile_lines


def _write_lines(lines: pl.DataFrame, out: BinaryIO) -> None:
    """The one column of ``lines`` as it is, each followed by :data:`SEPARATOR`."""
    lines.write_csv(out, include_header=False, quote_style="never", line_terminator=SEPARATOR.decode())
