"""pybatsim front-end of the Google-cell scheduler: protocol events in, policy decisions out.

pybatsim loads a scheduler from a file by its name (``googleCell.py`` -> class ``GoogleCell``),
hence this module's name. Use it directly with::

    pybatsim "$(python -c 'import batsim_google.simulation.googleCell as m; print(m.__file__)')" \\
        -s tcp://127.0.0.1:28000 -v warning -o '{"policy": {"placement": "best-fit"}, "output": "out/out"}'

(loopback only: bound on every interface, anyone on the network could talk to it) and run
Batsim with ``-s tcp://127.0.0.1:28000 --enable-compute-sharing --enable-dynamic-jobs --acknowledge-dynamic-jobs
--enable-profile-reuse`` (tasks share machines; evicted tasks come back as new jobs, resubmitted
services share one profile; a streamed run's jobs each register a profile of their own instead,
without it), plus ``--forward-unknown-events`` for ``user_kill`` events.
``batsim-google run`` does all that.

Options (the JSON of ``-o``): the fields of :class:`~batsim_google.simulation.frontend.FrontEndOptions`,
``policy`` (the fields of :class:`PolicyConfig`), or ``policy_class`` (any policy on the policy
API, ``module:Class`` or ``file.py:Class``, see :mod:`batsim_google.scheduling.policy_api`) with
``policy_options`` (its keyword options); ``output`` (prefix of the accounting files, e.g.
Batsim's export prefix), ``progress_file`` (where the current simulated time is written for
progress bars), ``platform`` and ``events`` (the platform file and the event files given to
Batsim: with an energy policy, no pstate switch is started that a machine failure would
interrupt, which aborts Batsim 4.2.1; see :mod:`batsim_google.scheduling.switch_guard`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from batsim.batsim import BatsimScheduler, Job
from procset import ProcSet

from batsim_google.generation.service_profile import SERVICE_DELAY, SERVICE_PROFILE
from batsim_google.platform.batsim_events import USER_KILL_EVENT
from batsim_google.scheduling.decisions import (
    Execute,
    Kill,
    Register,
    RegistrationFinished,
    Reject,
    SwitchOff,
    SwitchOn,
    WakeAt,
)
from batsim_google.scheduling.ledger_files import LedgerWriter, write_ledger
from batsim_google.scheduling.policy import RESUBMIT_WORKLOAD
from batsim_google.scheduling.policy_api import Policy
from batsim_google.simulation.dispatch import dispatch
from batsim_google.simulation.frontend import (
    FrontEndOptions,
    ProgressFile,
    end_status,
    job_request,
    missing_batsim_options,
    sleep_pstate,
)
from batsim_google.simulation.pybatsim_messages import quiet
from batsim_google.simulation.pybatsim_profiles import decode
from batsim_google.simulation.streamed_submissions import StreamedSubmissions, read_profile_uses
from batsim_google.simulation.workload_stream import own_profile

COMPUTE_PSTATE = 0


def complete_kill_progress(message: dict | None) -> dict | None:
    """Give every job of a JOB_KILLED event a progress entry (an empty one if Batsim gave none).

    pybatsim 3.2.1 reads ``job_progress[job]`` for each killed job as soon as one job has a
    progress, but Batsim leaves out the jobs that completed before the kill took effect (a kill
    sent at the very instant a job completes), so pybatsim would raise KeyError and the simulation
    would stop. Those jobs' JOB_COMPLETED tells the policy how they ended.
    """
    for event in (message or {}).get("events", []):
        if event.get("type") == "JOB_KILLED" and event["data"].get("job_progress"):
            for job_id in event["data"]["job_ids"]:
                event["data"]["job_progress"].setdefault(job_id, {})
    return message


def drop_forgotten_kills(message: dict | None, jobs: Mapping) -> dict | None:
    """Leave out of JOB_KILLED events the jobs no longer in pybatsim's ``jobs``: the front-end forgets
    a job once it ended (:meth:`GoogleCell.onNoMoreEvents`), and a kill sent at the very instant a
    job completes comes back after that job's JOB_COMPLETED, naming it (its progress is none)."""
    for event in (message or {}).get("events", []):
        if event.get("type") == "JOB_KILLED":
            event["data"]["job_ids"] = [job_id for job_id in event["data"]["job_ids"] if job_id in jobs]
    if message and any(
        event.get("type") == "JOB_KILLED" and not event["data"]["job_ids"] for event in message.get("events", [])
    ):
        message["events"] = [
            event for event in message["events"] if event.get("type") != "JOB_KILLED" or event["data"]["job_ids"]
        ]
    return message


class AcknowledgedRegistrations(logging.Filter):
    """Drops pybatsim's warning that a job this scheduler registered is "already in the job list".

    With ``--acknowledge-dynamic-jobs`` Batsim echoes every registration back as JOB_SUBMITTED,
    and pybatsim 3.2.1 reports each echo as a duplicate: a three-line warning (about 450 bytes) per
    eviction, or per job of a streamed workload (``streamed``), which buried everything else in
    the scheduler's log.
    """

    streamed: StreamedSubmissions | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not (message.startswith("The job '") and "was alredy in the job list" in message):
            return True
        job_id = message[len("The job '") : message.find("'", len("The job '"))]
        streamed = self.streamed is not None and self.streamed.awaits_acknowledgement(job_id)
        return not (job_id.startswith(f"{RESUBMIT_WORKLOAD}!") or streamed)


ACKNOWLEDGED_REGISTRATIONS = AcknowledgedRegistrations()


class GoogleCell(BatsimScheduler):
    """Thin adapter between pybatsim's callbacks and :class:`CellPolicy`, or any other policy on
    the policy API."""

    def __init__(self, options: dict | None = None) -> None:
        super().__init__(options or {})
        self.policy: Policy | None = None
        self._profiles_registered = False
        self.front_end = FrontEndOptions.from_mapping(self.options)
        # a streamed run's workloads, registered job by job (:mod:`.streamed_submissions`)
        streamed, uses = self.front_end.stream, self.front_end.stream_profile_uses
        self.submissions = (
            StreamedSubmissions(streamed, self.front_end.stream_to_sort, read_profile_uses(uses) if uses else None)
            if streamed
            else None
        )
        self._static_jobs_done = False
        self._registration_finish_held = False
        self._acknowledgements_only = False
        self._ended: list[str] = []  # jobs that ended in this batch, forgotten at its end
        ACKNOWLEDGED_REGISTRATIONS.streamed = self.submissions
        self.progress = ProgressFile(self.front_end.progress_file)
        self._batch_started = 0.0
        self._allocations: dict[int, ProcSet] = {}  # one per machine, made once: ProcSet() costs
        self.decision_seconds = 0.0
        self.messages = 0
        pybatsim_log = logging.getLogger("batsim.batsim")
        pybatsim_log.addFilter(ACKNOWLEDGED_REGISTRATIONS)  # once: the same filter is never added twice
        if not self.front_end.verbose:
            pybatsim_log.setLevel(logging.WARNING)

    # ----- setup and teardown --------------------------------------------------------------------

    def onAfterBatsimInit(self) -> None:
        network = self.bs.network

        def receive(blocking: bool = False) -> dict | None:  # pybatsim's, with its profiles as numbers
            text = network.recv_string(blocking=blocking)
            return None if text is None else decode(text)

        network.recv = lambda blocking=False: self._received(
            complete_kill_progress(drop_forgotten_kills(receive(blocking=blocking), self.bs.jobs))
        )
        if not self.front_end.verbose:  # pybatsim's log lines of whole messages, dropped unread
            network.recv, network.send = quiet(network.recv, network.send)

    def _received(self, message: dict | None) -> dict | None:
        """Note whether Batsim's ``message`` only acknowledges a streamed run's registrations."""
        self._acknowledgements_only = self.submissions is not None and self.submissions.only_acknowledgements(message)
        return message

    def onSimulationBegins(self) -> None:
        properties = [self.bs.compute_resources[i].get("properties", {}) for i in sorted(self.bs.compute_resources)]
        self.sleep_pstates = [sleep_pstate(p) for p in properties]
        self.policy = self.front_end.make_policy(properties)
        # A streamed run's jobs and resubmissions each register a profile of their own, so that
        # Batsim may free it once the job ended; a loaded run's resubmissions name a shared one.
        self._profile_reuse = bool(self.bs.batconf.get("profile-reuse-enabled"))
        dynamic_jobs = bool(
            self.bs.dynamic_job_registration_enabled
            and self.bs.ack_of_dynamic_jobs
            and (self._profile_reuse or self.submissions is not None)
        )
        problem = missing_batsim_options(self.policy.needs, self.bs.allow_compute_sharing, dynamic_jobs)
        if problem:
            raise RuntimeError(problem)
        if self.front_end.output:  # each row written as it ends, not kept to the end
            self.policy.ledger.stream_to(LedgerWriter(self.front_end.output))

    def onSimulationEnds(self) -> None:
        self.progress.report(self.bs.time(), final=True)
        output = self.front_end.output
        if output:
            timing = {"messages": self.messages, "decision_seconds": round(self.decision_seconds, 6)}
            self.policy.sleep_log.write(output)
            write_ledger(self.policy.ledger, output, timing)

    # ----- events -------------------------------------------------------------------------------

    def onBeforeEvents(self) -> None:
        self._batch_started = time.perf_counter()
        self.messages += 1

    def onJobSubmission(self, job: Job) -> None:
        if self.submissions is not None and self.submissions.acknowledged(job.id):
            self._forget_profile(job.workload, job.profile)  # the policy had the job when it was registered
            return
        delay = (job.profile_dict or {}).get("delay", 0.0)
        request = job_request(
            job.id, job.submit_time, job.json_dict, job.requested_time, delay, job.requested_resources
        )
        if job.workload == RESUBMIT_WORKLOAD and job.profile != SERVICE_PROFILE:
            self._forget_profile(job.workload, job.profile)  # a resubmission's own (:meth:`register`)
        self.policy.job_submitted(self.bs.time(), request)

    def onJobCompletion(self, job: Job) -> None:
        self.policy.job_ended(self.bs.time(), job.id, end_status(job.job_state.name))
        self._ended.append(job.id)

    def onNotifyEventMachineUnavailable(self, machines: ProcSet) -> None:
        self.policy.machines_unavailable(self.bs.time(), list(machines))

    def onNotifyEventMachineAvailable(self, machines: ProcSet) -> None:
        self.policy.machines_available(self.bs.time(), list(machines))

    def onMachinePStateChanged(self, nodes: tuple[int, int], pstate) -> None:
        machines = list(range(nodes[0], nodes[1] + 1))
        self.policy.power_changed(self.bs.time(), machines, int(pstate) == COMPUTE_PSTATE)

    def onRequestedCall(self) -> None:
        if self.submissions is None or not self.submissions.claims_call(self.bs.time()):
            self.policy.woken(self.bs.time())

    def onNoMoreJobsInWorkloads(self) -> None:
        self._static_jobs_done = True
        self.policy.no_more_jobs = self.submissions is None or self.submissions.exhausted

    def onNoMoreExternalEvents(self) -> None:
        self.policy.no_more_events = True

    def onNotifyGenericEvent(self, event_data: dict) -> None:
        if event_data.get("type") == USER_KILL_EVENT:
            self.policy.user_kill(self.bs.time(), str(event_data["job_id"]))

    def onJobsKilled(self, jobs) -> None:
        """Nothing to do: Batsim also sends JOB_COMPLETED (killed) for each of them."""

    def onNoMoreEvents(self) -> None:
        if self.policy is None:
            return
        now = self.bs.time()
        submitted = self.submissions is not None and self._submit_streamed(now)
        if submitted or not self._acknowledgements_only:
            for decision in self.policy.decide(now):
                dispatch(self, decision)
        if self.submissions is not None:
            self._register_ahead(now)
        for job_id in self._ended:  # pybatsim keeps every job it met (1.6 KB each): forget the ended ones
            self.bs.jobs.pop(job_id, None)
        self._ended.clear()
        self.decision_seconds += time.perf_counter() - self._batch_started
        self.progress.report(now)

    # ----- decisions -> protocol: a handler per decision type (:data:`.dispatch.HANDLERS`) ------

    def execute(self, decision: Execute) -> None:
        job = self.bs.jobs[decision.job_id]
        allocation = self._allocations.get(decision.machine)
        if allocation is None:
            allocation = self._allocations[decision.machine] = ProcSet(decision.machine)
        job.allocation = allocation
        self.bs.execute_job(job)

    def kill(self, decision: Kill) -> None:
        self.bs.kill_jobs([self.bs.jobs[job_id] for job_id in decision.job_ids])

    def reject(self, decision: Reject) -> None:
        self.bs.reject_jobs_by_id(list(decision.job_ids))
        self._ended.extend(decision.job_ids)  # a rejected job gets no JOB_COMPLETED

    def register(self, decision: Register) -> None:
        # a loaded run's services share one profile; a streamed run's have their own, freed at their end
        if decision.kind == "service":
            profile = SERVICE_PROFILE if self._profile_reuse else own_profile(SERVICE_PROFILE, decision.job_id)
            delay, walltime = SERVICE_DELAY, decision.work
        else:
            profile, delay, walltime = decision.job_id.split("!", 1)[1], decision.work, -1
        if not (profile == SERVICE_PROFILE and self._profiles_registered):
            self.bs.register_profiles(RESUBMIT_WORKLOAD, {profile: {"type": "delay", "delay": delay}})
            self._profiles_registered |= profile == SERVICE_PROFILE
        self.bs.register_job(decision.job_id, 1, walltime, profile)

    def switch_on(self, decision: SwitchOn) -> None:
        self._set_pstates([(machine, COMPUTE_PSTATE) for machine in decision.machines])

    def switch_off(self, decision: SwitchOff) -> None:
        self._set_pstates([(machine, self.sleep_pstates[machine]) for machine in decision.machines])

    def wake_at(self, decision: WakeAt) -> None:
        self.bs.wake_me_up_at(decision.time)

    def registration_finished(self, decision: RegistrationFinished) -> None:
        if self.submissions is not None and not self.submissions.exhausted:
            self._registration_finish_held = True  # Batsim would refuse the jobs still to stream
            return
        self.bs.notify_registration_finished()

    # ----- a streamed workload (:mod:`.streamed_submissions`) --------------------------------------

    def _submit_streamed(self, now: float) -> bool:
        """Submit the registered jobs due at ``now`` to the policy; whether there were any."""
        due = self.submissions.due(now)
        for job in due:
            fields, delay = job.as_sent()
            request = job_request(job.job_id, fields["subtime"], fields, fields.get("walltime", -1), delay, job.res)
            self.policy.job_submitted(now, request)
        if self._static_jobs_done and self.submissions.exhausted:
            self.policy.no_more_jobs = True
        return bool(due)

    def _register_ahead(self, now: float) -> None:
        """Register the next minute of submissions once the last is submitted, and ask to be woken
        at the next submission time; not before Batsim has submitted the stubs' jobs (registrations
        take simulated time in Batsim)."""
        if not self._static_jobs_done:
            return
        jobs, wake = self.submissions.register_ahead(now)
        for job in jobs:
            if job.new_profile is not None:
                self.bs.register_profiles(job.workload, {job.profile: job.new_profile})
            else:  # Batsim has it; pybatsim, which forgot it, checks that it exists
                self.bs.profiles[job.workload].setdefault(job.profile, {})
            self.bs.register_job(job.job_id, job.res, job.walltime, job.profile, job.subtime)
            self._forget_profile(job.workload, job.profile)  # the stream's reader keeps what later jobs need
        if wake is not None:
            self.bs.wake_me_up_at(wake)
        if self._registration_finish_held and self.submissions.exhausted:
            self._registration_finish_held = False
            self.bs.notify_registration_finished()

    def _forget_profile(self, workload: str, profile: str) -> None:
        """Drop a profile from pybatsim's table, which keeps every profile it met (one per task of a
        generated workload, and one per resubmission), once the front-end has read it: pybatsim
        only checks that it exists when a job naming it is registered, and puts an empty one back
        when it hears of that job's submission (Batsim does not forward profiles)."""
        self.bs.profiles[workload].pop(profile, None)

    def _set_pstates(self, pstates: list[tuple[int, int]]) -> None:
        """Switch (machine, pstate) pairs: one message per pstate, in order of its first machine."""
        by_pstate: dict[int, list[int]] = {}
        for machine, pstate in pstates:
            by_pstate.setdefault(pstate, []).append(machine)
        for pstate, machines in by_pstate.items():
            self.bs.set_resource_state(ProcSet(*machines), pstate)
