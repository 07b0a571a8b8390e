"""``fit`` of any Batsim workload: durations from each profile type it can say something of, the
rest counted by reason; the jobs of tasks a generated workload carries (``google_job``) kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.fitting.batsim_input import read_batsim_table
from batsim_google.fitting.model_fit import (
    FitSettings,
    fit_model,
)
from batsim_google.fitting.table import task_table
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.request_law import load_request_law
from batsim_google.trace.row_accounting import RowAccount

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from job_models import job_model  # noqa: E402

WORKLOADS = Path(__file__).resolve().parents[1] / "fixtures" / "batsim_shapes" / "workloads"
FAST = ["lognormal-ml", "exponential"]


def test_durations_of_each_computing_profile_type_at_a_given_speed():
    table = read_batsim_table(WORKLOADS / "compute_profiles.json", speed=1e9)
    rows = table.frame.select("makespan", "width", "unusable").rows()
    network = "profile with communications: its duration depends on the network"
    assert rows == [
        (20.2, 1.0, None),  # delay
        (0.5, 4.0, None),  # parallel: its largest cpu, 5e8 flops at 1 Gflop/s
        (None, 4.0, f"parallel {network}"),
        (3.0, 2.0, None),  # parallel_homogeneous: 3e9 flops on each machine
        (None, 4.0, f"parallel_homogeneous {network}"),
        (4.0, 2.0, None),  # parallel_homogeneous_total: 8e9 flops over 2 machines
        (2.0, 4.0, None),  # ... over 4
        (pytest.approx(69.6), 1.0, None),  # composed: 3 x (20.2 s + 3e9 flops)
        (None, 4.0, f"parallel {network}"),  # composed of a part with communications
        (3.0, 1.0, None),
    ]
    assert table.notes() == [
        "10 of 10 jobs have no kind: taken as tasks (they run to their end)",
        "10 of 10 jobs have no priority: they get 0.5",
    ]


def test_what_cannot_be_used_is_counted_by_reason():
    frame = read_batsim_table(WORKLOADS / "compute_profiles.json").frame  # no speed
    account = RowAccount()
    checked = task_table(frame, account, "compute_profiles.json")
    assert account.read == 10 == account.used + sum(account.skipped.values())
    assert checked.frame["makespan"].to_list() == [20.2]
    assert account.skipped == {
        "profile of flops: its duration needs the machines' speed (--speed)": 6,
        "parallel profile with communications: its duration depends on the network": 2,
        "parallel_homogeneous profile with communications: its duration depends on the network": 1,
    }
    traces = read_batsim_table(WORKLOADS / "trace_profiles.json", speed=1e9).frame["unusable"].to_list()
    assert traces == [
        "usage_trace profile: its duration is the replay of a usage trace",
        "smpi profile: its duration is the replay of an MPI trace",
    ]
    storage = read_batsim_table(WORKLOADS / "storage_profiles.json").frame["unusable"].to_list()
    assert (
        storage[:2]
        == [
            "parallel_homogeneous_pfs profile: its duration depends on the storage and network",
            "data_staging profile: its duration depends on the storage and network",
        ]
        and storage[2] is None
    )


def test_walltimes_cut_durations_and_bad_sequences_are_named(tmp_path):
    path = tmp_path / "w.json"
    profiles = {
        "long": {"type": "delay", "delay": 100},
        "loop": {"type": "composed", "seq": ["loop", "long"]},
        "hole": {"type": "composed", "seq": ["long", "nowhere"]},
        "odd": {"type": "gpu_kernel"},
    }
    jobs = [
        {"id": "cut", "subtime": 0, "res": 1, "profile": "long", "walltime": 30},
        {"id": "loop", "subtime": 1, "res": 1, "profile": "loop"},
        {"id": "hole", "subtime": 2, "res": 1, "profile": "hole"},
        {"id": "odd", "subtime": 3, "res": 1, "profile": "odd"},
        {"id": "lost", "subtime": 4, "res": 1, "profile": "missing"},
    ]
    path.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": profiles}))
    frame = read_batsim_table(path).frame
    assert frame["makespan"].to_list() == [30.0, None, None, None, None]
    assert frame["unusable"].to_list() == [
        None,
        "composed profile that contains itself",
        "composed profile of profile 'nowhere', which is not defined",
        "profile type 'gpu_kernel' is not one of Batsim 4.2.1's",
        "job of a profile the workload does not define",
    ]


def test_the_jobs_of_tasks_of_a_generated_workload_survive_into_the_fit(tmp_path):
    path = tmp_path / "jobs.json"
    write_generated_workload(path, job_model(), load_request_law(), 3, Generation(tasks=1200, nb_res=64))
    jobs = json.loads(path.read_text())["jobs"]
    groups = {job["google_job"] for job in jobs}
    frame = read_batsim_table(path).frame
    assert frame["job_id"].n_unique() == len(groups) and "width" not in frame.columns
    result = fit_model(frame, FitSettings(methods=FAST, profile="none"))
    assert result.jobs is not None and result.jobs.job_count == len(groups)
    output = (
        CliRunner()
        .invoke(main, ["fit", str(path), "-o", str(tmp_path / "m.toml"), "--laws", "lognormal-ml", "--no-fidelity"])
        .output
    )
    assert f"jobs: {len(groups)}, " in output
    assert "[jobs]" in (tmp_path / "m.toml").read_text()


def test_tasks_of_no_job_are_jobs_of_their_own(tmp_path):
    path = tmp_path / "w.json"
    profiles = {"p": {"type": "delay", "delay": 5}}
    jobs = [{"id": str(i), "subtime": i, "res": 1, "profile": "p"} for i in range(4)]
    jobs[0]["google_job"], jobs[1]["google_job"] = 7, 7
    path.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": profiles}))
    assert read_batsim_table(path).frame["job_id"].to_list() == [7, 7, -3, -4]
