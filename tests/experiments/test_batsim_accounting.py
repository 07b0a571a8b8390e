"""One accounting for every scheduler (:mod:`batsim_google.experiments.batsim_accounting`): a
hand-made run of a scheduler that keeps no ledger (as batsched: whole machines, parallel jobs,
rejections) on the 4-machine test cell, worked out on paper; and the built-in scheduler's run4,
where the accounting from Batsim's files gives the figures its ledger gave."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from batsim_google.experiments.batsim_accounting import (
    BY_SCHEDULER,
    NO_WALLTIME,
    TOO_WIDE,
    accounting,
    machine_rows,
    rejections,
)
from batsim_google.experiments.metrics import run_metrics
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.platform.simgrid_xml import compute_hosts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLATFORM = FIXTURES / "cell4_energy.xml"  # m0, m1: capacity 1, 100-200 W; m2, m3: capacity 0.5, 60-120 W
HEADER = (
    "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"
    "final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,"
    "allocated_resources,consumed_energy,metadata"
)


def _run(folder: Path) -> tuple[RunOutputs, Path]:
    """Jobs: w0!0 on m0-m1 (CPU 0.5 each) 0-100; w0!1 on m2 (CPU 0.25) 50-150; w0!2 on m3 (no CPU
    request: the whole machine) 0-40; w0!3 (8 machines) and w0!4 (no walltime) rejected."""
    folder.mkdir()
    rows = [
        "0,w0,0,0,2,110,1,COMPLETED_SUCCESSFULLY,0,100,100,0,100,1,0-1,0,",
        "1,w0,1,20,1,110,1,COMPLETED_SUCCESSFULLY,50,100,150,30,130,1.3,2,0,",
        "2,w0,2,0,1,50,1,COMPLETED_SUCCESSFULLY,0,40,40,0,40,1,3,0,",
        "3,w0,3,0,8,100,0,REJECTED,,,,,,,,,",
        "4,w0,4,0,1,-1,0,REJECTED,,,,,,,,,",
    ]
    (folder / "out_jobs.csv").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    (folder / "out_machine_states.csv").write_text(
        "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n0,0,0,0,1,3\n"
    )
    workload = folder.parent / "workload.json"
    jobs = [
        {"id": 0, "subtime": 0, "res": 2, "walltime": 110, "profile": "a", "cpu": 0.5},
        {"id": 1, "subtime": 20, "res": 1, "walltime": 110, "profile": "a", "cpu": 0.25},
        {"id": 2, "subtime": 0, "res": 1, "walltime": 50, "profile": "a"},
        {"id": 3, "subtime": 0, "res": 8, "walltime": 100, "profile": "a", "cpu": 0.1},
        {"id": 4, "subtime": 0, "res": 1, "walltime": -1, "profile": "a", "cpu": 0.1},
    ]
    workload.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"a": {"type": "delay", "delay": 1}}}))
    return RunOutputs(folder), workload


def test_the_load_the_idle_machines_and_the_utilization_of_a_run_without_ledger(tmp_path):
    outputs, workload = _run(tmp_path / "run")
    figures = accounting(outputs, compute_hosts(PLATFORM), 0.0, 200.0, [workload])
    # load: (full - idle) x CPU / capacity x time, per machine: 2 x 100 x 0.5 x 100, 60 x 0.5 x 100, 60 x 1 x 40
    assert figures["load_energy_j"] == pytest.approx(10_000 + 3_000 + 2_400)
    # CPU x time: 0.5 x 100 x 2 + 0.25 x 100 + 0.5 (m3's whole capacity) x 40, over 3 x 200
    assert figures["utilization"] == pytest.approx(145 / 600)
    assert figures["occupancy"] == pytest.approx((100 + 100 + 100 + 40) / 800)
    # every machine on throughout (no pstate changes): idle W x (200 - busy)
    assert figures["idle_energy_j"] == pytest.approx(100 * 100 + 100 * 100 + 60 * 100 + 60 * 160)
    # the window cuts the jobs: [50, 100] holds 50 s of w0!0 on m0 and m1 and of w0!1 on m2, none of w0!2
    window = accounting(outputs, compute_hosts(PLATFORM), 50.0, 100.0, [workload])
    assert window["load_energy_j"] == pytest.approx(2 * 100 * 0.5 * 50 + 60 * 0.5 * 50)
    assert window["idle_energy_j"] == pytest.approx(60 * 50)  # m3 alone idle


def test_machines_asleep_are_not_idle(tmp_path):
    outputs, workload = _run(tmp_path / "run")
    (tmp_path / "run" / "out_pstate_changes.csv").write_text("time,machine_id,new_pstate\n0,0-3,0\n60,3,1\n180,3,0\n")
    figures = accounting(outputs, compute_hosts(PLATFORM), 0.0, 200.0, [workload])
    # m3 asleep 60-180: on 80 s, of which 40 busy
    assert figures["idle_energy_j"] == pytest.approx(100 * 100 + 100 * 100 + 60 * 100 + 60 * 40)


def test_without_the_workload_a_job_takes_its_machines_whole(tmp_path):
    outputs, _ = _run(tmp_path / "run")
    figures = accounting(outputs, compute_hosts(PLATFORM), 0.0, 200.0)
    assert figures["utilization"] == pytest.approx((1 * 100 * 2 + 0.5 * 100 + 0.5 * 40) / 600)
    assert figures["load_energy_j"] == pytest.approx(2 * 100 * 100 + 60 * 100 + 60 * 40)


def test_rejections_by_reason(tmp_path):
    outputs, workload = _run(tmp_path / "run")
    assert rejections(outputs, [workload], machines=4) == {NO_WALLTIME: 1, TOO_WIDE: 1}
    assert rejections(outputs, (), machines=4) == {NO_WALLTIME: 2}  # unknown requests: none known
    metrics = run_metrics(outputs, PLATFORM, workloads=[workload])
    assert metrics["jobs_rejected"] == metrics["jobs_refused"] == 2
    assert metrics["rejected_by_reason"] == {NO_WALLTIME: 1, TOO_WIDE: 1}


def test_tasks_open_at_the_horizon_are_not_refused():
    from batsim_google.experiments.batsim_accounting import refused

    assert refused({"censored: pending at the horizon": 5, BY_SCHEDULER: 2, NO_WALLTIME: 1}) == 3


def test_the_built_in_schedulers_run_is_accounted_from_batsims_files_as_its_ledger_does():
    run4 = RunOutputs(FIXTURES / "run4")
    metrics = run_metrics(run4, PLATFORM)
    # run4's README: w0!4 is rejected as larger than every machine, w0!7's resubmission (resubmit!w0_7#1)
    # as its user killed it while pending: both left work undone
    assert metrics["rejected_by_reason"] == {
        "killed_by_user: while pending": 1,
        "rejected: larger than every machine": 1,
    }
    assert metrics["jobs_refused"] == 2
    figures = accounting(run4, compute_hosts(PLATFORM), 0.0, metrics["makespan_s"])
    assert figures["utilization"] == metrics["utilization"]
    assert figures["load_energy_j"] == metrics["load_energy_j"]


def test_a_jobs_machines_are_read_from_its_ranges_and_ones(tmp_path):
    """Batsim's "0-1 3": machines 0, 1 and 3. A file of single machines (this package's
    scheduler's) is read without ranges, to the same rows as when one of them is written a range."""
    outputs, workload = _run(tmp_path / "run")
    path, text = outputs.path("jobs.csv"), outputs.path("jobs.csv").read_text()
    path.write_text(text.replace(",0-1,", ",0-1 3,"))
    assert machine_rows(outputs, [workload]).filter(pl.col("job") == "w0!0")["machine"].to_list() == [0, 1, 3]
    path.write_text(text.replace(",0-1,", ",0,"))
    singles = machine_rows(outputs, [workload])
    assert singles["machine"].to_list() == [0, 2, 3]
    path.write_text(text.replace(",0-1,", ",0,").replace("1.3,2,0,", "1.3,2-2,0,"))
    assert machine_rows(outputs, [workload]).equals(singles)
