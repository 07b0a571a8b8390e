"""The pybatsim front-end's protections against pybatsim 3.2.1: its JOB_KILLED handling, and its
warning on every acknowledged registration."""

from __future__ import annotations

import copy
import logging

import pytest
from batsim.batsim import Batsim, BatsimScheduler, Job

from batsim_google.scheduling.policy import RESUBMIT_WORKLOAD
from batsim_google.simulation.googleCell import ACKNOWLEDGED_REGISTRATIONS, GoogleCell, complete_kill_progress

#: Batsim's answer to a kill of two jobs, one of which completed at the very instant of the kill.
KILLED_AT_COMPLETION = {
    "now": 5.0,
    "events": [
        {
            "timestamp": 5.0,
            "type": "JOB_KILLED",
            "data": {"job_ids": ["w0!1", "w0!2"], "job_progress": {"w0!1": {"profile": "1", "progress": 0.5}}},
        }
    ],
}


class Recorder(BatsimScheduler):
    def __init__(self) -> None:
        super().__init__({})
        self.killed, self.submitted = [], []

    def onJobsKilled(self, jobs) -> None:
        self.killed += [job.id for job in jobs]

    def onJobSubmission(self, job) -> None:
        self.submitted.append(job.id)


class OneMessage:
    """Stands for pybatsim's network handler: hands over one message, keeps the answer."""

    def __init__(self, message: dict) -> None:
        self.message, self.sent = message, []

    def recv(self, blocking: bool = False) -> dict:
        return self.message

    def send(self, message: dict) -> None:
        self.sent.append(message)


def pybatsim_reading(message: dict, registered: tuple[str, ...] = ()) -> Recorder:
    """pybatsim's own handling of ``message`` (Batsim._read_bat_msg), without a socket, with the
    jobs w0!1 and w0!2 submitted and ``registered`` registered by the scheduler."""
    bs = object.__new__(Batsim)
    bs.logger, bs.network, bs.event_publisher = logging.getLogger("batsim.batsim"), OneMessage(message), None
    bs.running_simulation, bs.use_storage_controller = True, False
    bs.jobs = {job_id: Job(job_id, 0.0, -1, 1, job_id, {}) for job_id in ("w0!1", "w0!2")}
    bs.profiles = {RESUBMIT_WORKLOAD: {"p": {"type": "delay", "delay": 1.0}}}
    bs.nb_jobs_submitted = bs.nb_jobs_submitted_from_scheduler = bs.nb_jobs_submitted_from_batsim = 0
    bs.nb_jobs_in_submission = len(registered)
    for job_id in registered:
        bs.jobs[job_id] = Job(job_id, 0.0, -1, 1, "p", {})
        bs.jobs[job_id].job_state = Job.State.IN_SUBMISSON
    bs.scheduler = Recorder()
    bs.scheduler.bs = bs
    bs._read_bat_msg()
    return bs.scheduler


def test_pybatsim_alone_fails_on_a_kill_at_completion():
    with pytest.raises(KeyError, match="w0!2"):
        pybatsim_reading(copy.deepcopy(KILLED_AT_COMPLETION))


def test_completed_progress_lets_pybatsim_read_it():
    scheduler = pybatsim_reading(complete_kill_progress(copy.deepcopy(KILLED_AT_COMPLETION)))
    assert scheduler.killed == ["w0!1", "w0!2"]
    untouched = {
        "now": 1.0,
        "events": [{"timestamp": 1.0, "type": "JOB_KILLED", "data": {"job_ids": ["w0!1"], "job_progress": {}}}],
    }
    assert complete_kill_progress(copy.deepcopy(untouched)) == untouched  # pybatsim skips those itself
    assert complete_kill_progress(None) is None


def submitted(*job_ids: str) -> dict:
    """Batsim's JOB_SUBMITTED events (acknowledgements, for registered jobs) of ``job_ids``."""
    job = {"subtime": 1.0, "res": 1, "walltime": -1, "profile": "p"}
    return {
        "now": 1.0,
        "events": [
            {"timestamp": 1.0, "type": "JOB_SUBMITTED", "data": {"job_id": job_id, "job": {"id": job_id, **job}}}
            for job_id in job_ids
        ],
    }


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")  # pybatsim's own call
def test_acknowledged_registrations_do_not_flood_the_log(caplog):
    logging.getLogger("batsim.batsim").removeFilter(ACKNOWLEDGED_REGISTRATIONS)  # as before any GoogleCell
    registered = f"{RESUBMIT_WORKLOAD}!w0_1#1"
    assert pybatsim_reading(submitted(registered), registered=(registered,)).submitted == [registered]
    assert "was alredy in the job list" in caplog.text  # what pybatsim says of every acknowledgement
    caplog.clear()
    GoogleCell({})  # installs the filter
    other = "w0!3"  # a Batsim job id seen twice stays worth a warning
    pybatsim_reading(submitted(registered, other), registered=(registered, other))
    assert registered not in caplog.text
    assert f"The job '{other}' was alredy in the job list" in caplog.text


def test_a_kill_naming_jobs_the_front_end_forgot_keeps_the_others():
    from batsim_google.simulation.googleCell import drop_forgotten_kills

    known = {"w0!1": object()}  # w0!2 ended in an earlier message and was forgotten
    message = drop_forgotten_kills(copy.deepcopy(KILLED_AT_COMPLETION), known)
    assert message["events"][0]["data"]["job_ids"] == ["w0!1"]
    assert pybatsim_reading(complete_kill_progress(message)).killed == ["w0!1"]
    only_forgotten = drop_forgotten_kills(copy.deepcopy(KILLED_AT_COMPLETION), {})
    assert only_forgotten["events"] == []  # nothing left to tell pybatsim
    assert pybatsim_reading(only_forgotten).killed == []
    assert drop_forgotten_kills(None, known) is None
