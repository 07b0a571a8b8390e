"""A streamed run's submissions: the workload's jobs handed to Batsim and to the policy as simulated
time reaches them, so that Batsim holds only the jobs submitted and not yet finished.

Batsim starts with stub workloads of the same names holding only the jobs of the first submission
time (a warm start's, at time 0), with their profiles (:func:`write_stub_workloads`): Batsim submits
those itself, as in a loaded run. Every later job is registered ahead, a minute of submissions at a
time: after a batch's decisions, once the jobs registered before were all submitted, those of the
next :data:`REGISTER_AHEAD_S` are registered (``REGISTER_PROFILE`` the first time a profile is
named, then ``REGISTER_JOB`` with the job's own submission time, which ``out_jobs.csv`` keeps), and
one wake-up is asked at a time, at the next submission time rounded up to Batsim's printed
microsecond (:meth:`StreamedSubmissions.register_ahead`; Batsim's waiters are actions that every simulation step
scans, :mod:`batsim_google.scheduling.wake_ups`). At that wake-up the front-end submits its jobs to the
policy (:meth:`~StreamedSubmissions.due`), in the batch and at the time a loaded run's JOB_SUBMITTED
would bring them, and without waking the policy (:meth:`~StreamedSubmissions.claims_call`); the decisions come first in the reply and the registrations after them, so that
the simulated time Batsim's registration messages take delays no start. Batsim's acknowledgements
of the registrations are dropped (:meth:`~StreamedSubmissions.acknowledged`), and a batch of nothing
else decides nothing (:meth:`~StreamedSubmissions.only_acknowledgements`).

A submission time within :data:`~batsim_google.scheduling.wake_ups.MIN_LEAD_S` of the batch that
registers it is asked that much later, as the policy's wake-ups are (Batsim aborts on a call in its
past): such a job reaches the policy up to a millisecond after its submission time.

The policy hears that no more jobs will come once every job was submitted and Batsim's stub
submitters are done; and since Batsim refuses registrations after ``registration_finished``, a
policy that finishes early (at its horizon) has that notice held back until then, its remaining
jobs submitted (and rejected) as a loaded run's are.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from batsim_google.output_files import write_text
from batsim_google.scheduling.wake_ups import MIN_LEAD_S, on_batsim_grid
from batsim_google.simulation.workload_stream import StreamedJob, WorkloadStream, profile_uses, streamed_jobs

#: How far past the next submission time the jobs registered at once go, and about how many of them
#: at most: Batsim holds them from then on (a window of the workload, not all of it), and
#: acknowledges them in one message.
REGISTER_AHEAD_S = 60.0
REGISTER_AHEAD_JOBS = 10_000
#: How far past ``now`` a submission time still counts as reached: Batsim's waiter sleeps
#: ``target - now`` seconds, which may land a rounding error short of the target. The target itself
#: is asked on Batsim's microsecond grid (:func:`~batsim_google.scheduling.wake_ups.on_batsim_grid`),
#: so that the call's printed ``now`` is not before the submission time: a job submitted between two
#: microseconds is due at the call asked for it.
DUE_TOLERANCE_S = 1e-7


def write_stub_workloads(
    stubs: Sequence[Path], workloads: Sequence[str | Path], to_sort: Sequence[str | Path] = ()
) -> None:
    """Batsim's workloads of a streamed run, one per workload: its jobs of the first submission
    time of all (with their profiles and ``nb_res``), no later one (``to_sort``: the workloads
    not in submission order, :func:`.workload_stream.streamed_jobs`)."""
    jobs: list[list[dict]] = [[] for _ in workloads]
    profiles: list[dict[str, dict]] = [{} for _ in workloads]
    for job in _first_jobs(streamed_jobs(workloads, to_sort))[0]:
        index = int(job.workload[1:])
        jobs[index].append(job.fields)
        if job.new_profile is not None:
            profiles[index][job.profile] = job.new_profile
    for index, (stub, path) in enumerate(zip(stubs, workloads, strict=True)):
        stub_workload = {"nb_res": WorkloadStream(path).nb_res or 1, "jobs": jobs[index], "profiles": profiles[index]}
        write_text(stub, json.dumps(stub_workload) + "\n")


def write_profile_uses(target: Path, workloads: Sequence[str | Path]) -> None:
    """The :func:`~.workload_stream.profile_uses` of each workload, a JSON list in their order: the
    scheduler's reader forgets each profile after its last job (:func:`read_profile_uses`)."""
    write_text(target, json.dumps([profile_uses(path) for path in workloads]) + "\n")


def read_profile_uses(path: str | Path) -> list[dict[str, int]]:
    """The profile uses :func:`write_profile_uses` wrote."""
    return json.loads(Path(path).read_text())


def _first_jobs(jobs: Iterator[StreamedJob]) -> tuple[list[StreamedJob], StreamedJob | None]:
    """The jobs of the first submission time, taken from the iterator ``jobs``, and the next job."""
    first = next(jobs, None)
    taken = [] if first is None else [first]
    for job in jobs:
        if job.subtime != first.subtime:
            return taken, job
        taken.append(job)
    return taken, None


class StreamedSubmissions:
    """The jobs of ``workloads`` after the first submission time's: those still to register, and
    those registered and not yet submitted to the policy;
    ``to_sort``: the workloads not in submission order; ``uses``: their profiles' uses
    (:func:`write_profile_uses`; None: not known, every profile's delay is kept)."""

    def __init__(
        self,
        workloads: Sequence[str | Path],
        to_sort: Sequence[str | Path] = (),
        uses: Sequence[Mapping[str, int]] | None = None,
    ) -> None:
        self._jobs = streamed_jobs(workloads, to_sort, uses)
        _, self._next = _first_jobs(self._jobs)  # the first ones are in the stubs: Batsim submits them
        self._registered: deque[StreamedJob] = deque()
        self._unacknowledged: set[str] = set()
        self._calls: deque[float] = deque()  # the wake-ups asked for submissions, in time order
        self._asked_for: float | None = None  # the submission time of the last of them
        self.submitted = 0

    @property
    def exhausted(self) -> bool:
        """Every job was submitted to the policy."""
        return self._next is None and not self._registered

    def register_ahead(self, now: float) -> tuple[list[StreamedJob], float | None]:
        """The jobs to register with Batsim now: once none waits, those of the next
        :data:`REGISTER_AHEAD_S` of submissions (at most about :data:`REGISTER_AHEAD_JOBS`, whole
        submission times), whose acknowledgements then come in one message; and the time to be
        woken at for the next registered submission time (None when asked already, or when it is
        due: the acknowledgements bring a batch)."""
        jobs: list[StreamedJob] = []
        if not self._registered and self._next is not None:
            end = max(self._next.subtime, now) + REGISTER_AHEAD_S
            while self._next is not None and self._next.subtime <= end:
                if len(jobs) >= REGISTER_AHEAD_JOBS and self._next.subtime != jobs[-1].subtime:
                    break
                jobs.append(self._next)
                self._unacknowledged.add(self._next.job_id)
                self._next = next(self._jobs, None)
            self._registered.extend(jobs)
        wake = None
        if self._registered and self._registered[0].subtime > now + DUE_TOLERANCE_S:
            if self._registered[0].subtime != self._asked_for:
                self._asked_for = self._registered[0].subtime
                wake = on_batsim_grid(max(self._asked_for, now + MIN_LEAD_S))
                self._calls.append(wake)
        return jobs, wake

    def claims_call(self, now: float) -> bool:
        """Whether a call Batsim makes at ``now`` (a REQUESTED_CALL) is one asked for submissions:
        the policy is not woken by it, as a loaded run's JOB_SUBMITTED does not wake it."""
        if self._calls and self._calls[0] <= now + DUE_TOLERANCE_S:
            self._calls.popleft()
            return True
        return False

    def due(self, now: float) -> list[StreamedJob]:
        """The registered jobs submitted at ``now`` or before, in Batsim's order."""
        due = []
        while self._registered and self._registered[0].subtime <= now + DUE_TOLERANCE_S:
            due.append(self._registered.popleft())
        self.submitted += len(due)
        return due

    def awaits_acknowledgement(self, job_id: str) -> bool:
        return job_id in self._unacknowledged

    def acknowledged(self, job_id: str) -> bool:
        """Whether ``job_id``'s JOB_SUBMITTED is Batsim's acknowledgement of a registration (the
        policy has the job from :meth:`due`, or will have it there)."""
        if job_id in self._unacknowledged:
            self._unacknowledged.discard(job_id)
            return True
        return False

    def only_acknowledgements(self, message: dict | None) -> bool:
        """Whether Batsim's ``message`` holds nothing but acknowledgements of registrations."""
        events = (message or {}).get("events") or []
        return bool(events) and all(
            event.get("type") == "JOB_SUBMITTED" and event["data"].get("job_id") in self._unacknowledged
            for event in events
        )
