"""pybatsim's launcher made reproducible: jobs hash by their id, so a set of jobs (fillerSched's
``openJobs``) is iterated in the same order in every scheduler process."""

from __future__ import annotations

import signal
import subprocess
import sys

from batsim_google.simulation.runner import PYBATSIM_LAUNCHER, _supervise, pybatsim_scheduler

#: A scheduler process's view: a set of pybatsim jobs, created in an order that moves their addresses.
SET_ORDER = f"""
import random
from batsim.batsim import Job
import {PYBATSIM_LAUNCHER} as launcher
if {{patched}}:
    launcher.reproducible_jobs()
padding = [bytearray(random.randrange(1, 4096)) for _ in range(random.randrange(1, 200))]
jobs = {{{{Job(f"w0!{{{{i}}}}", 0.0, -1, 1, "p", {{{{}}}}) for i in range(200)}}}}
print([job.id for job in jobs][:20])
"""


def _orders(tmp_path, patched: bool) -> list[str]:
    orders = []
    for run in range(3):
        folder = tmp_path / f"{patched}-{run}"
        _supervise({"scheduler": [sys.executable, "-c", SET_ORDER.format(patched=patched)]}, folder, 60, None, None)
        orders.append((folder / "scheduler.log").read_text())
    return orders


def test_a_set_of_jobs_has_the_same_order_in_every_scheduler_process(tmp_path):
    assert len(set(_orders(tmp_path, patched=True))) == 1
    assert len(set(_orders(tmp_path, patched=False))) > 1  # by address: what pybatsim does alone


def test_pybatsim_schedulers_are_launched_through_it():
    command = pybatsim_scheduler("fillerSched")("tcp://*:1")
    assert command[:4] == [sys.executable, "-m", PYBATSIM_LAUNCHER, "fillerSched"]


#: A scheduler process writing its ledger when the runner stops it (SIGTERM).
STOPPED_WHILE_WRITING = f"""
import os, signal, sys, time
import {PYBATSIM_LAUNCHER} as launcher
from batsim_google.scheduling.ledger_files import LedgerWriter
if {{patched}}:
    launcher.exit_on_terminate()
writer = LedgerWriter(sys.argv[1])
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(30)
"""


def _leftovers(tmp_path, patched: bool) -> list[str]:
    folder = tmp_path / str(patched)
    folder.mkdir()
    done = subprocess.run([sys.executable, "-c", STOPPED_WHILE_WRITING.format(patched=patched), str(folder / "out")])
    assert done.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM)
    return sorted(path.name for path in folder.iterdir())


def test_a_scheduler_stopped_while_writing_its_ledger_leaves_no_temporary_file(tmp_path):
    assert _leftovers(tmp_path, patched=True) == []
    assert len(_leftovers(tmp_path, patched=False)) == 2  # SIGTERM alone skips the exit handlers


#: A scheduler process answering one request with a large message, then closing as pybatsim does
#: after SIMULATION_ENDS, and exiting.
LAST_ANSWER = f"""
import sys, zmq
from batsim.network import NetworkHandler
import {PYBATSIM_LAUNCHER} as launcher
if {{patched}}:
    launcher.deliver_last_message()
handler = NetworkHandler(sys.argv[1], type=zmq.REP)
handler.bind()
handler.recv_string(blocking=True)
handler.send_string("x" * 50_000_000)
handler.close()
"""


def _answers_received(patched: bool, wait_ms: int, runs: int = 2) -> int:
    """How many times Batsim's side got, within ``wait_ms``, the last answer of a scheduler that exited."""
    import socket

    import zmq

    received = 0
    for _ in range(runs):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            endpoint = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
        scheduler = subprocess.Popen([sys.executable, "-c", LAST_ANSWER.format(patched=patched), endpoint])
        context = zmq.Context()
        batsim = context.socket(zmq.REQ)
        batsim.RCVTIMEO, batsim.LINGER = wait_ms, 0
        batsim.connect(endpoint)
        batsim.send_string("{}")
        try:
            received += len(batsim.recv_string()) == 50_000_000
        except zmq.error.Again:
            pass
        assert scheduler.wait(timeout=60) == 0
        batsim.close()
        context.term()
    return received


def test_a_scheduler_that_exits_has_sent_its_last_answer():
    assert _answers_received(patched=True, wait_ms=60_000) == 2
    assert _answers_received(patched=False, wait_ms=3_000) < 2  # pyzmq drops what its I/O thread holds at exit
