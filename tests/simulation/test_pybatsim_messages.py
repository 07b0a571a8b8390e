"""pybatsim's log lines of whole messages, summarized: the same bytes go to Batsim, and what its
log would have formatted (the whole message, at every message) is a summary."""

from __future__ import annotations

import json
import logging

from batsim.batsim import Batsim, BatsimScheduler

from batsim_google.simulation.googleCell import GoogleCell
from batsim_google.simulation.pybatsim_messages import QuietMessage, quiet

MESSAGE = {
    "now": 1.0,
    "events": [
        {
            "timestamp": 1.0,
            "type": "JOB_SUBMITTED",
            "data": {"job_id": job_id, "job": {"id": job_id, "subtime": 1.0, "res": 1, "walltime": -1, "profile": "p"}},
        }
        for job_id in ("w0!1", "w0!2")
    ],
}


class Rejecting(BatsimScheduler):
    """Rejects what is submitted, and asks to be called later: two events to send."""

    def __init__(self) -> None:
        super().__init__({})

    def onJobSubmission(self, job) -> None:
        self.bs.reject_jobs_by_id([job.id])

    def onNoMoreEvents(self) -> None:
        self.bs.wake_me_up_at(5.0)


class Network:
    """Batsim's side: one message to hand over, the answer's bytes kept (pybatsim's recv_string/send)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def recv_string(self, blocking: bool = False) -> str:
        return json.dumps(MESSAGE)

    def recv(self, blocking: bool = False) -> dict:
        return json.loads(self.recv_string(blocking))

    def send(self, message: dict) -> None:
        self.sent.append(json.dumps(message))


def answer(summarized: bool, caplog) -> tuple[str, str]:
    """pybatsim's answer to MESSAGE (Batsim._read_bat_msg) and its log at the info level."""
    bs = object.__new__(Batsim)
    network = Network()
    bs.network = network
    if summarized:
        bs.network = type("Quiet", (), {})()
        bs.network.recv, bs.network.send = quiet(network.recv, network.send)
    bs.logger, bs.event_publisher = logging.getLogger("batsim.batsim"), None
    bs.running_simulation, bs.use_storage_controller = True, False
    bs.jobs, bs.profiles = {}, {"w0": {"p": {"type": "delay", "delay": 1.0}}}
    bs.nb_jobs_submitted = bs.nb_jobs_submitted_from_batsim = bs.nb_jobs_rejected = 0
    bs.scheduler = Rejecting()
    bs.scheduler.bs = bs
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="batsim.batsim"):
        bs._read_bat_msg()
    assert bs.nb_jobs_rejected == 2
    (sent,) = network.sent
    return sent, caplog.text


def test_the_same_bytes_go_to_batsim_and_the_log_says_a_summary(caplog):
    sent, log = answer(False, caplog)
    assert "'job_id': 'w0!2'" in log  # pybatsim formats the whole message, at every message
    quiet_sent, quiet_log = answer(True, caplog)
    assert quiet_sent == sent
    assert len(json.loads(sent)["events"]) == 3
    assert "Message Received from Batsim: {'now': 1.0, 'events': <2 events>}" in quiet_log
    assert "Message Sent to Batsim: {'now': 1.0, 'events': <3 events>}" in quiet_log
    assert "w0!2" not in quiet_log


def test_a_quiet_message_is_the_message():
    message = QuietMessage(MESSAGE)
    assert message == MESSAGE and json.dumps(message) == json.dumps(MESSAGE)
    assert repr(message) == "{'now': 1.0, 'events': <2 events>}"


def test_the_front_end_summarizes_unless_verbose():
    class Bs:
        network = Network()
        jobs: dict = {}  # pybatsim's jobs met (the front-end drops kills of those it forgot)

    for verbose, summarized in ((False, True), (True, False)):
        cell = GoogleCell({"verbose": verbose})
        cell.bs = Bs()
        cell.bs.network = Network()
        cell.onAfterBatsimInit()
        assert isinstance(cell.bs.network.recv(), QuietMessage) is summarized
