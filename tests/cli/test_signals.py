"""Commands end on SIGTERM, SIGINT or the death of their launcher, their children with them, leaving
nothing marked complete. Real processes, launched as a user launches them; Batsim is a stand-in
that waits (it writes its pid and sleeps), so that the runs are surely under way when the signal
comes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from processes import alive, descendants, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLATFORM = FIXTURES / "cell4_energy.xml"
COMMAND = Path(sys.executable).parent / "batsim-google"


def waiting_batsim(folder: Path) -> Path:
    """A Batsim that writes its pid into ``folder/pids`` and waits."""
    pids = folder / "pids"
    pids.mkdir()
    path = folder / "batsim"
    path.write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        'if sys.argv[1:] == ["--version"]:\n    sys.exit(print("4.2.1"))\n'
        f"open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close()\ntime.sleep(600)\n"
    )
    path.chmod(0o755)
    return path


def started_batsims(folder: Path, count: int, seconds: float = 180) -> list[int]:
    assert wait_for(lambda: len(list((folder / "pids").iterdir())) >= count, seconds), "the runs never started"
    return [int(path.name) for path in (folder / "pids").iterdir()]


def kill_all(pids) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def default_sigint() -> None:
    """SIGINT as a terminal delivers it: a test run in the background may have inherited it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def workload(tmp_path: Path) -> Path:
    path = tmp_path / "w.json"
    done = subprocess.run(
        [COMMAND, "generate", "--tasks", "10", "--nb-res", "4", "-o", path, "--no-progress"], capture_output=True
    )
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.skipif(shutil.which("uv") is None, reason="the documented launch needs uv")
def test_killing_uv_run_ends_the_command_batsim_and_the_scheduler(tmp_path):
    """``uv run batsim-google run``, uv killed with SIGKILL: the command, Batsim and the scheduler end too."""
    batsim = waiting_batsim(tmp_path)
    line = ["uv", "run", "--no-sync", "batsim-google", "run", "--platform", PLATFORM, "--workload", workload(tmp_path)]
    line += ["-o", tmp_path / "out", "--batsim", batsim, "--no-energy-outputs", "--timeout", "600"]
    uv = subprocess.Popen(list(map(str, line)), cwd=Path(__file__).resolve().parents[2], stdout=subprocess.DEVNULL)
    children: set[int] = set()
    try:
        started_batsims(tmp_path, 1)
        children = descendants(uv.pid)
        assert len(children) >= 4, children  # the command, the scheduler, Batsim's launcher, Batsim
        uv.kill()
        uv.wait()
        assert wait_for(lambda: not any(alive(pid) for pid in children), 30), [p for p in children if alive(p)]
        assert (tmp_path / "out" / "INCOMPLETE").exists()
    finally:
        uv.kill()
        kill_all(children)


CAMPAIGN = """
    timeout = 600
    energy_outputs = false
    [platforms]
    small = {cell = 4}
    [workloads]
    google = {preset = "google", tasks = 10}
    [policies.first]
    energy = "always-on"
    [policies.second]
    energy = "always-on"
    placement = "best-fit"
"""


def started_campaign(tmp_path: Path, **launch) -> tuple[subprocess.Popen, Path]:
    """``compare`` of :data:`CAMPAIGN` on two workers with a waiting Batsim, launched with ``launch``;
    the process and its output folder."""
    batsim = waiting_batsim(tmp_path)
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(textwrap.dedent(CAMPAIGN))
    output = tmp_path / "out"
    line = [COMMAND, "compare", campaign, "-o", output, "--jobs", "2", "--batsim", batsim, "--no-progress"]
    process = subprocess.Popen(
        list(map(str, line)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **launch
    )
    return process, output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_campaign_ends_on_a_signal_with_its_workers_simulations(tmp_path, signum):
    compare, output = started_campaign(tmp_path, preexec_fn=default_sigint)
    children: set[int] = set()
    try:
        started_batsims(tmp_path, 2)
        children = descendants(compare.pid)
        compare.send_signal(signum)
        _, stderr = compare.communicate(timeout=30)
        assert compare.returncode == 130, stderr
        assert "interrupted: finished runs are kept" in stderr and "Traceback" not in stderr
        assert wait_for(lambda: not any(alive(pid) for pid in children), 15), [p for p in children if alive(p)]
        assert not list(output.rglob("done.json")) and not list(output.rglob("failed.json"))
    finally:
        compare.kill()
        kill_all(children)


def test_a_campaign_ends_when_its_whole_process_group_is_sent_sigterm_twice(tmp_path):
    """``timeout`` then the user's ``kill -TERM -- -PGID``: the command, its workers and their
    simulations each get SIGTERM twice; a second signal to the command must not cut its workers'
    shutdown short (it hung, waiting at exit for a worker that never got its sentinel)."""
    compare, output = started_campaign(tmp_path, start_new_session=True)
    children: set[int] = set()
    try:
        started_batsims(tmp_path, 2)
        children = descendants(compare.pid)
        os.killpg(compare.pid, signal.SIGTERM)
        os.kill(compare.pid, signal.SIGTERM)  # as ``timeout`` passes its own on
        _, stderr = compare.communicate(timeout=60)
        assert compare.returncode in (130, -signal.SIGTERM), stderr
        assert wait_for(lambda: not any(alive(pid) for pid in children), 15), [p for p in children if alive(p)]
        assert not list(output.rglob("done.json")) and not list(output.rglob("failed.json"))
    finally:
        compare.kill()
        kill_all(children)
