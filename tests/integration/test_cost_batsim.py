"""The cost reductions the platforms carry, and the estimator against a real Batsim run."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from uncalibrated import UNCALIBRATED

from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.cost_model import estimate, read_workload_cost
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.schedulers import built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings

pytestmark = pytest.mark.batsim

PLATFORM = REPO / "platforms" / "google-2011-cell-64.xml"


def _burst_workload(path, jobs):
    """``jobs`` small tasks at time 0, lasting 10 s, that all fit the 64 machines at once."""
    request = {"class": "task", "kind": "task", "priority": 0.5, "cpu": 1e-4, "memory": 1e-4}
    lines = [{"id": i, "subtime": 0.0, "res": 1, "profile": "p", "walltime": -1, **request} for i in range(jobs)]
    path.write_text(json.dumps({"nb_res": 64, "jobs": lines, "profiles": {"p": {"type": "delay", "delay": 10.0}}}))
    return path


def test_burst_starts_at_its_instant_with_the_platforms_simgrid_settings(tmp_path, batsim_binary):
    workload = _burst_workload(tmp_path / "w.json", 3000)
    run = run_scheduler(
        built_in(PolicyConfig(**UNCALIBRATED)),  # no placement latency: the burst starts at once
        RunInputs(PLATFORM, [workload]),
        tmp_path / "out",
        SimulationSettings(timeout=600, batsim=batsim_binary, energy_outputs=False, batsim_log="information"),
    )
    log = (tmp_path / "out" / "batsim.log").read_text()
    assert "Set 'contexts/guard-size' to '0'" in log
    assert "Set 'contexts/stack-size' to '16'" in log
    with (tmp_path / "out" / "out_jobs.csv").open() as jobs:
        header = jobs.readline().strip().split(",")
        starts = [float(line.split(",")[header.index("starting_time")]) for line in jobs]
    assert len(starts) == 3000
    # Without latency the burst starts within microseconds (message sizes over the bandwidths);
    # with Batsim's example latencies one job started every 0.6 ms: 1.8 s for these 3,000.
    assert max(starts) < 1e-3
    # Memory, unlike time, does not depend on the machine's load: the estimate holds within 1.5x.
    predicted = estimate(read_workload_cost(workload), 64).peak_bytes
    assert predicted / 1.5 <= run.simulation.batsim_peak_rss <= predicted * 1.5
