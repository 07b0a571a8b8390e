"""Reliability with real Batsim 4.2.1 and real schedulers: the scheduler's socket is on loopback only,
a scheduler that exits mid-run or leaves a setsid child behind, two runs into one folder, and the
end of a run or campaign on SIGKILL of ``uv`` or SIGTERM.

To keep a run under way as long as a test needs, its policy (on the policy API) sleeps in its first
scheduling pass: Batsim waits for its answer, as it would for a slow scheduler.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from processes import alive, descendants, wait_for

from batsim_google.cli import main
from batsim_google.simulation import googleCell
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation

pytestmark = pytest.mark.batsim

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "tests" / "fixtures" / "cell4_energy.xml"
COMMAND = Path(sys.executable).parent / "batsim-google"

#: Policies: ``Slow`` writes its pid to $SLOW_PIDS and sleeps in its first pass; ``Escaping`` starts
#: a child that leaves its session (setsid) and writes its pid to $ESCAPED_PID, then schedules FCFS.
POLICIES = """
import os, sys, time
from batsim_google.scheduling.policy_api import BatsimNeeds, Policy


class Slow(Policy):
    needs = BatsimNeeds(failures=True)

    def schedule(self, now):
        open(os.path.join(os.environ["SLOW_PIDS"], str(os.getpid())), "w").close()
        time.sleep(600)


class Escaping(Policy):
    needs = BatsimNeeds(failures=True)
    started = False

    def schedule(self, now):
        if not self.started:
            self.started = True
            if os.fork() == 0:
                os.setsid()
                with open(os.environ["ESCAPED_PID"] + ".tmp", "w") as out:
                    out.write(str(os.getpid()))
                os.rename(os.environ["ESCAPED_PID"] + ".tmp", os.environ["ESCAPED_PID"])
                time.sleep(600)
                os._exit(0)
        free = [m for m in range(len(self.cluster)) if self.cluster.tasks[m] == 0]
        while self.pending and free:
            self.execute(self.pending[0], free.pop(0), now)
"""

#: A scheduler that takes Batsim's first message and exits with status 0 without answering.
LEAVING = """
import sys, zmq
socket = zmq.Context().socket(zmq.REP)
socket.bind(sys.argv[1])
socket.recv()
"""


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """The policies' file, a small workload, and the folder the slow policy writes its pid into."""
    (tmp_path / "policies.py").write_text(POLICIES)
    (tmp_path / "slow").mkdir()
    monkeypatch.setenv("SLOW_PIDS", str(tmp_path / "slow"))
    monkeypatch.setenv("ESCAPED_PID", str(tmp_path / "escaped.pid"))
    workload = tmp_path / "w.json"
    result = CliRunner().invoke(
        main, ["generate", "--tasks", "10", "--nb-res", "4", "-o", str(workload), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    return tmp_path, workload


def batsims_among(pids) -> list[int]:
    found = []
    for pid in pids:
        try:
            if Path(os.readlink(f"/proc/{pid}/exe")).name.startswith("batsim"):
                found.append(pid)
        except OSError:
            pass
    return found


def kill_all(pids) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def slow_started(folder: Path, count: int = 1, seconds: float = 180) -> None:
    assert wait_for(lambda: len(list((folder / "slow").iterdir())) >= count, seconds), "the slow policy never ran"


def external_address() -> str:
    shown = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True)
    addresses = [part.split("/")[0] for part in shown.stdout.split() if part.count(".") == 3 and "/" in part]
    if not addresses:
        pytest.skip("this machine has no IPv4 address besides loopback to connect from")
    return addresses[0]


def test_the_scheduler_of_a_real_run_refuses_connections_from_the_network(setup, batsim_binary):
    import socket

    if shutil.which("ip") is None:
        pytest.skip("no 'ip' command to find this machine's network address")
    folder, workload = setup
    address = external_address()
    options = {"policy_class": f"{folder / 'policies.py'}:Slow", "policy_options": {}}
    endpoints = []

    def scheduler(endpoint: str) -> list[str]:
        endpoints.append(endpoint)
        return pybatsim_scheduler(googleCell.__file__, options)(endpoint)

    class Probed(Exception):
        pass

    answers = {}

    def probe() -> None:
        if not list((folder / "slow").iterdir()):
            return  # Batsim and the scheduler are talking: the run is under way
        port = int(endpoints[0].rpartition(":")[2])
        for host in ("127.0.0.1", address):
            try:
                socket.create_connection((host, port), timeout=5).close()
                answers[host] = True
            except ConnectionRefusedError:
                answers[host] = False
        raise Probed

    simulation = Simulation(PLATFORM, [workload], folder / "out", scheduler, timeout=120, batsim=batsim_binary)
    with pytest.raises(Probed):
        run_simulation(simulation, on_poll=probe)
    assert endpoints[0].startswith("tcp://127.0.0.1:")
    assert answers == {"127.0.0.1": True, address: False}


def test_a_scheduler_that_exits_mid_run_ends_the_run_at_once(setup, batsim_binary):
    folder, workload = setup
    (folder / "leaving.py").write_text(LEAVING)
    arguments = ["run", "--platform", PLATFORM, "--workload", workload, "-o", folder / "out", "--batsim", batsim_binary]
    arguments += ["--scheduler", f"command={sys.executable} {folder / 'leaving.py'} {{socket}}", "--timeout", "600"]
    started = time.monotonic()
    result = CliRunner().invoke(main, [str(a) for a in arguments])
    assert time.monotonic() - started < 60
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1] == (
        "Error: the scheduler exited (status 0) before the simulation's end, and Batsim was left waiting for "
        "its answer; stopped"
    )
    assert (folder / "out" / "INCOMPLETE").exists()


def test_a_policys_setsid_child_is_ended_with_its_run(setup, batsim_binary):
    folder, workload = setup
    arguments = ["run", "--platform", PLATFORM, "--workload", workload, "-o", folder / "out", "--batsim", batsim_binary]
    arguments += ["--scheduler", f"python={folder / 'policies.py'}:Escaping", "--no-figures"]
    result = CliRunner().invoke(main, [str(a) for a in arguments])
    escaped = int((folder / "escaped.pid").read_text())
    try:
        assert result.exit_code == 0, result.output
        assert wait_for(lambda: not alive(escaped), 10), "the policy's setsid child outlived its run"
    finally:
        kill_all([escaped])


def test_a_second_run_into_a_folder_being_written_fails_at_once(setup, batsim_binary):
    folder, workload = setup
    run = [COMMAND, "run", "--platform", PLATFORM, "--workload", workload, "-o", folder / "out"]
    run += ["--batsim", batsim_binary, "--no-figures"]
    first = subprocess.Popen([*map(str, run), "--scheduler", f"python={folder / 'policies.py'}:Slow"])
    children: set[int] = set()
    try:
        slow_started(folder)
        children = descendants(first.pid)
        before = sorted(path.name for path in (folder / "out").iterdir())
        started = time.monotonic()
        second = subprocess.run(list(map(str, run)), capture_output=True, text=True, timeout=120)
        assert time.monotonic() - started < 60
        assert second.returncode == 2
        assert second.stderr.strip().splitlines() == [
            f"Error: {folder / 'out'}: another run is writing this folder (process {first.pid}); "
            "wait for it to end or choose another"
        ]
        assert sorted(path.name for path in (folder / "out").iterdir()) == before  # nothing cleared or mixed in
    finally:
        first.kill()
        first.wait()
        kill_all(children)


@pytest.mark.skipif(shutil.which("uv") is None, reason="the documented launch needs uv")
def test_killing_uv_run_ends_the_command_batsim_and_the_scheduler(setup, batsim_binary):
    folder, workload = setup
    line = ["uv", "run", "--no-sync", "batsim-google", "run", "--platform", PLATFORM, "--workload", workload]
    line += ["-o", folder / "out", "--batsim", batsim_binary, "--scheduler", f"python={folder / 'policies.py'}:Slow"]
    uv = subprocess.Popen(list(map(str, line)), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: set[int] = set()
    try:
        slow_started(folder)
        children = descendants(uv.pid)
        assert batsims_among(children), "no Batsim among the command's processes"
        uv.kill()
        uv.wait()
        assert wait_for(lambda: not any(alive(pid) for pid in children), 30), [p for p in children if alive(p)]
        assert (folder / "out" / "INCOMPLETE").exists()
    finally:
        uv.kill()
        kill_all(children)


def test_a_campaign_ends_on_sigterm_with_its_workers_simulations(setup, batsim_binary):
    folder, _ = setup
    campaign = folder / "campaign.toml"
    campaign.write_text(
        textwrap.dedent(
            f"""
            timeout = 600
            [platforms]
            cell = {{file = "{PLATFORM}"}}
            [workloads]
            google = {{preset = "google", tasks = 10, seeds = [1, 2]}}
            [schedulers.slow]
            python = "{folder / "policies.py"}:Slow"
            """
        )
    )
    output = folder / "out"
    line = [COMMAND, "compare", campaign, "-o", output, "--jobs", "2", "--batsim", batsim_binary, "--no-progress"]
    compare = subprocess.Popen(list(map(str, line)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children: set[int] = set()
    try:
        slow_started(folder, 2)
        children = descendants(compare.pid)
        assert len(batsims_among(children)) == 2
        compare.send_signal(signal.SIGTERM)
        _, stderr = compare.communicate(timeout=30)
        assert compare.returncode == 130, stderr
        assert "interrupted: finished runs are kept" in stderr and "Traceback" not in stderr
        assert wait_for(lambda: not any(alive(pid) for pid in children), 15), [p for p in children if alive(p)]
        assert not list(output.rglob("done.json")) and not list(output.rglob("failed.json"))
    finally:
        compare.kill()
        kill_all(children)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_run_ends_on_a_signal_with_batsim_and_the_scheduler(setup, batsim_binary, signum):
    folder, workload = setup
    line = [COMMAND, "run", "--platform", PLATFORM, "--workload", workload, "-o", folder / "out"]
    line += ["--batsim", batsim_binary, "--scheduler", f"python={folder / 'policies.py'}:Slow"]
    run = subprocess.Popen(
        list(map(str, line)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    children: set[int] = set()
    try:
        slow_started(folder)
        children = descendants(run.pid)
        assert batsims_among(children)
        started = time.monotonic()
        run.send_signal(signum)
        _, stderr = run.communicate(timeout=30)
        assert time.monotonic() - started < 15
        assert run.returncode != 0 and "Traceback" not in stderr
        assert wait_for(lambda: not any(alive(pid) for pid in children), 15), [p for p in children if alive(p)]
        assert (folder / "out" / "INCOMPLETE").exists() and not (folder / "out" / "metrics.json").exists()
    finally:
        run.kill()
        kill_all(children)
