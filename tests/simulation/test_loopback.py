"""A simulation's scheduler listens on loopback only: from the machine's network address nothing can
connect to it (bound on every interface, a SIMULATION_ENDS sent from outside stopped a run).

The scheduler is the real one (pybatsim's launcher and the Google-cell front-end); Batsim is a
stand-in that waits, since what is probed is the scheduler's socket while the run is under way.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation import googleCell
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "tests" / "fixtures" / "cell4_energy.xml"
#: A Batsim that says its version and then waits (the probe ends the run).
WAITING_BATSIM = f"""#!{sys.executable}
import sys, time
if sys.argv[1:] == ["--version"]:
    print("4.2.1")
    sys.exit(0)
time.sleep(600)
"""


def external_address() -> str:
    """An IPv4 address of this machine other than loopback; the test is skipped without one."""
    ip = shutil.which("ip")
    if ip is None:
        pytest.skip("no 'ip' command to find this machine's network address")
    shown = subprocess.run([ip, "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    addresses = re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", shown)
    if not addresses:
        pytest.skip("this machine has no IPv4 address besides loopback to connect from")
    return addresses[0]


def reachable(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=5):
            return True
    except ConnectionRefusedError:
        return False


class Finished(Exception):
    """Raised by the probe once it has its answer: the run is stopped there."""


class Probe:
    """Records the endpoint given to the scheduler; once the scheduler listens on loopback,
    tries the machine's own address."""

    def __init__(self, scheduler, address: str) -> None:
        self.scheduler, self.address = scheduler, address
        self.endpoint: str | None = None
        self.from_network: bool | None = None

    def command(self, endpoint: str) -> list[str]:
        self.endpoint = endpoint
        return self.scheduler(endpoint)

    def __call__(self) -> None:
        port = int(self.endpoint.rpartition(":")[2])
        if reachable("127.0.0.1", port):
            self.from_network = reachable(self.address, port)
            raise Finished


def probe_a_run(tmp_path: Path, batsim: str, workload: Path, address: str) -> Probe:
    probe = Probe(pybatsim_scheduler(googleCell.__file__, {}), address)
    simulation = Simulation(PLATFORM, [workload], tmp_path / "out", probe.command, timeout=120, batsim=batsim)
    with pytest.raises(Finished):
        run_simulation(simulation, on_poll=probe)
    return probe


def test_the_scheduler_of_a_run_cannot_be_reached_from_the_network(tmp_path):
    address = external_address()
    batsim = tmp_path / "batsim"
    batsim.write_text(WAITING_BATSIM)
    batsim.chmod(0o755)
    workload = tmp_path / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": [], "profiles": {}}')
    probe = probe_a_run(tmp_path, str(batsim), workload, address)
    assert probe.endpoint.startswith("tcp://127.0.0.1:")
    assert probe.from_network is False, f"the scheduler answered a connection to {address}"


def test_batsim_is_told_the_loopback_endpoint():
    simulation = Simulation(PLATFORM, [], Path("out"), lambda endpoint: [])
    from batsim_google.simulation.batsim_binary import BatsimBinary

    command = simulation.batsim_command(28000, BatsimBinary("batsim", "4.2.1"))
    assert command[command.index("-s") + 1] == "tcp://127.0.0.1:28000"


def test_the_batsim_py_front_end_binds_loopback():
    pytest.importorskip("batsim_py")
    from batsim_google.simulation.batsimpy_frontend import BatsimPyCell

    assert BatsimPyCell(PolicyConfig()).sim.address.startswith("tcp://127.0.0.1:")
