"""The pybatsim front-end's protection against pybatsim 3.2.1's JOB_KILLED handling."""

from __future__ import annotations

import copy
import logging

import pytest
from batsim.batsim import Batsim, BatsimScheduler, Job

from batsim_google.googleCell import complete_kill_progress

#: Batsim's answer to a kill of two jobs, one of which completed at the very instant of the kill.
KILLED_AT_COMPLETION = {
    "now": 5.0,
    "events": [{
        "timestamp": 5.0, "type": "JOB_KILLED",
        "data": {"job_ids": ["w0!1", "w0!2"], "job_progress": {"w0!1": {"profile": "1", "progress": 0.5}}},
    }],
}


class Recorder(BatsimScheduler):
    def __init__(self) -> None:
        super().__init__({})
        self.killed = []

    def onJobsKilled(self, jobs) -> None:
        self.killed += [job.id for job in jobs]


class OneMessage:
    """Stands for pybatsim's network handler: hands over one message, keeps the answer."""

    def __init__(self, message: dict) -> None:
        self.message, self.sent = message, []

    def recv(self, blocking: bool = False) -> dict:
        return self.message

    def send(self, message: dict) -> None:
        self.sent.append(message)


def pybatsim_reading(message: dict) -> Recorder:
    """pybatsim's own handling of ``message`` (Batsim._read_bat_msg), without a socket."""
    bs = object.__new__(Batsim)
    bs.logger, bs.network, bs.event_publisher = logging.getLogger("test"), OneMessage(message), None
    bs.running_simulation, bs.use_storage_controller = True, False
    bs.jobs = {job_id: Job(job_id, 0.0, -1, 1, job_id, {}) for job_id in ("w0!1", "w0!2")}
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
    untouched = {"now": 1.0, "events": [{"timestamp": 1.0, "type": "JOB_KILLED", "data": {"job_ids": ["w0!1"], "job_progress": {}}}]}
    assert complete_kill_progress(copy.deepcopy(untouched)) == untouched  # pybatsim skips those itself
    assert complete_kill_progress(None) is None
