"""A campaign's workers, and the simulations they start, die with their parent even when it is
killed with SIGKILL (which it cannot catch to stop them): tested by really killing one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from processes import alive, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

#: A campaign process: the campaign's own pool, whose worker writes its pid and runs for an hour.
CAMPAIGN = """
import sys, time
from batsim_google.experiments.execution import local_pool
from pathlib import Path

def long_run(path):
    import os
    Path(path).write_text(str(os.getpid()))
    time.sleep(3600)

if __name__ == "__main__":
    pool = local_pool(2)
    pool.submit(long_run, sys.argv[1])
    time.sleep(3600)
"""

#: A campaign's worker running a simulation: its scheduler and Batsim (here, sleepers) write their pids.
WORKER = """
import sys
from pathlib import Path
from batsim_google.simulation.runner import _supervise

out = Path(sys.argv[1])
sleeper = [sys.executable, "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(3600)"]
_supervise({"scheduler": sleeper + [str(out / "scheduler.pid")], "batsim": sleeper + [str(out / "batsim.pid")]}, out, 3600, None, None)
"""


def pids(paths: list[Path]) -> list[int]:
    assert wait_for(lambda: all(path.is_file() and path.read_text() for path in paths)), "the children never started"
    return [int(path.read_text()) for path in paths]


def end(pids_: list[int]) -> None:
    """Kill what survived a failed test."""
    for pid in pids_:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def start(script: str, tmp_path: Path, *arguments: str) -> subprocess.Popen:
    (tmp_path / "script.py").write_text(script)
    return subprocess.Popen([sys.executable, str(tmp_path / "script.py"), *arguments], cwd=tmp_path)


def test_a_campaigns_worker_dies_when_the_campaign_is_killed(tmp_path):
    campaign = start(CAMPAIGN, tmp_path, str(tmp_path / "worker.pid"))
    try:
        (worker,) = pids([tmp_path / "worker.pid"])
        assert alive(worker)
        campaign.send_signal(signal.SIGKILL)
        campaign.wait()
        assert wait_for(lambda: not alive(worker), 30), f"worker {worker} survived its campaign"
    finally:
        campaign.kill()
        end([int(path.read_text()) for path in [tmp_path / "worker.pid"] if path.is_file() and path.read_text()])


def test_a_simulation_dies_when_its_worker_is_killed(tmp_path):
    worker = start(WORKER, tmp_path, str(tmp_path))
    try:
        children = pids([tmp_path / "scheduler.pid", tmp_path / "batsim.pid"])
        assert all(alive(pid) for pid in children)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert wait_for(lambda: not any(alive(pid) for pid in children), 30), "a simulation survived its worker"
    finally:
        worker.kill()
        end(
            [
                int(p.read_text())
                for p in (tmp_path / "scheduler.pid", tmp_path / "batsim.pid")
                if p.is_file() and p.read_text()
            ]
        )


#: A Dask worker runs its tasks in threads: the simulation is started from one, then the worker is killed.
THREADED_WORKER = WORKER.replace(
    "_supervise({",
    "import threading\nthreading.Thread(target=lambda: _supervise({",
).replace("out, 3600, None, None)", "out, 3600, None, None)).start()\nimport time\ntime.sleep(3600)")


def test_a_simulation_started_from_a_thread_dies_when_its_worker_is_killed(tmp_path):
    worker = start(THREADED_WORKER, tmp_path, str(tmp_path))
    files = [tmp_path / "scheduler.pid", tmp_path / "batsim.pid"]
    try:
        children = pids(files)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert wait_for(lambda: not any(alive(pid) for pid in children), 30), "a simulation survived its worker"
    finally:
        worker.kill()
        end([int(p.read_text()) for p in files if p.is_file() and p.read_text()])
