"""pybatsim's scheduler launcher, made reproducible: ``python -m`` this module takes the
arguments of ``batsim.cmds.launcher`` (``SCHEDULER -s ENDPOINT -o OPTIONS ...``).

pybatsim 3.2.1's schedulers keep jobs in sets (fillerSched's ``openJobs``) and iterate them; its
``Job`` hashes by identity, that is by memory address, which changes from run to run, and so did
the order of the set and the scheduler's decisions. Here a job hashes by its id, a string, whose
hash the fixed ``PYTHONHASHSEED`` every simulation process runs with (:mod:`.runner`) makes the
same in every run. Equality stays identity: pybatsim keeps one object per job.

pybatsim says why it cannot load a scheduler (a name's typo) on its standard output, which the
runner discards (its bundled schedulers print their whole queue there), and without the name:
here that reason goes to standard error, which is logged, with the scheduler's name.

pybatsim closes its socket after answering SIMULATION_ENDS and lets the process exit, where pyzmq
leaves its context unterminated: what ZeroMQ's I/O thread had not sent yet, that last answer, is
lost, and Batsim waits for it (seen on a loaded machine). Here closing waits until it is sent.
"""

from __future__ import annotations

import contextlib
import io
import signal
import sys

from batsim.batsim import Job
from batsim.cmds import launcher
from batsim.network import NetworkHandler

#: Milliseconds a closing scheduler waits for its last messages to be sent (Batsim gone: no longer).
LINGER_MS = 10_000


def _hash_by_id(job: Job) -> int:
    return hash(job.id)


def reproducible_jobs() -> None:
    """Make pybatsim's jobs hash by their id."""
    Job.__hash__ = _hash_by_id


def _close_delivering(handler: NetworkHandler) -> None:
    """pybatsim's close, then the context terminated: it returns once the messages are sent."""
    if handler.connection:
        handler.connection.close(linger=LINGER_MS)
        handler.connection = None
    handler.context.term()


def deliver_last_message() -> None:
    """Make pybatsim's sockets send what they hold before the process exits."""
    NetworkHandler.close = _close_delivering


def _instantiate(name: str, options: dict):
    """pybatsim's own loading, its refusal said on standard error with the name."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):
            return _pybatsim_instantiate(name, options)
    except SystemExit:
        sys.exit(f"pybatsim scheduler {name!r}: {said.getvalue().strip() or 'it could not be loaded'}")
    finally:
        sys.stdout.write(said.getvalue())


_pybatsim_instantiate = launcher.instanciate_scheduler


def exit_on_terminate() -> None:
    """Make SIGTERM exit the process as ``sys.exit`` does: exit handlers run."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def main() -> int:
    exit_on_terminate()
    reproducible_jobs()
    deliver_last_message()
    launcher.instanciate_scheduler = _instantiate
    return launcher.main()


if __name__ == "__main__":
    sys.exit(main())
