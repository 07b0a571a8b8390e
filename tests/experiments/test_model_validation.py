"""``validate-model`` without Batsim: the run is replaced by :func:`no_contention`, where every job
submitted in the window starts 2 s after its submission and runs its delay (those of the warm
start from 0); tests/integration/test_validate_model_batsim.py runs the same in Batsim."""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import polars as pl
import pytest
from trace_files import event, seconds_us, write_part

from batsim_google.errors import ParameterError
from batsim_google.experiments.model_validation import (
    JUDGED,
    REPORT,
    ModelWindow,
    model_report_lines,
    validate_model,
)
from batsim_google.experiments.replay_attempts import real_attempts, workload_jobs
from batsim_google.experiments.replay_fidelity import attempt_table, bands, group_names
from batsim_google.model.presets import preset
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES, GOOGLE_2011_START_TASKS
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent as E

WAIT_S = 2.0
START, END = 100.0, 5500.0  # an hour and a half: two hours in the hourly table


def no_contention(policy, platform, workload, folder, settings, calls):
    """Stands in for :func:`simulate`: the workload's jobs run without contention."""
    calls.append((policy, Path(platform), Path(workload)))
    document = json.loads(Path(workload).read_text())
    jobs = document["jobs"]
    own = workload_jobs(workload)
    initial = [job.get("initial") is not None for job in jobs]
    submit = [-math.inf if first else job["subtime"] for job, first in zip(jobs, initial)]
    start = [0.0 if first else job["subtime"] + WAIT_S for job, first in zip(jobs, initial)]
    delay = [document["profiles"][job["profile"]]["delay"] for job in jobs]
    table = pl.DataFrame(
        {
            "task": own["job"],
            "job": own["google_job"],
            "group": own.select(group_names(pl.col("google_priority"))).to_series(),
            "cpu": [job.get("cpu", 0.5) for job in jobs],
            "submit": submit,
            "start": start,
            "end": [s + d for s, d in zip(start, delay)],
            "evicted": [False] * len(jobs),
        }
    )
    return attempt_table(table), {"submitted": len(jobs), "balanced": True}


@pytest.fixture
def trace(tmp_path) -> Path:
    """In window time: normal tasks submitted at 100 s and 4,000 s that wait 3 s and run 500 s,
    a free task running from before the window until 3,000 s, all on machine 7."""
    rows = [(10.0, 1, 0, E.SUBMIT, 0), (20.0, 1, 0, E.SCHEDULE, 0), (3100.0, 1, 0, E.FINISH, 0)]
    for job, t in ((2, 200.0), (3, 4100.0)):
        rows += [(t, job, 0, E.SUBMIT, 2), (t + 3, job, 0, E.SCHEDULE, 2), (t + 503, job, 0, E.FINISH, 2)]
    rows.sort(key=lambda row: row[0])
    write_part(tmp_path / "trace", [event(seconds_us(t), j, i, c, priority=p) for t, j, i, c, p in rows])
    return tmp_path / "trace"


def _workload(path: Path) -> Path:
    """A free task running at the start and two normal tasks (model priority 0.25, Google's 2)."""
    jobs = [
        {"id": 0, "subtime": 0, "res": 1, "profile": "long", "priority": 0.1, "cpu": 0.0625, "initial": "running"},
        {"id": 1, "subtime": 100, "res": 1, "profile": "short", "priority": 0.25, "cpu": 0.0625},
        {"id": 2, "subtime": 4000, "res": 1, "profile": "short", "priority": 0.25, "cpu": 0.0625},
    ]
    profiles = {"long": {"type": "delay", "delay": 3000}, "short": {"type": "delay", "delay": 500}}
    path.write_text(json.dumps({"nb_res": GOOGLE_2011_MACHINES, "jobs": jobs, "profiles": profiles}))
    return path


def test_a_ready_workload_is_judged_by_the_replays_definitions_against_the_same_hours(trace, tmp_path):
    calls = []
    workload = _workload(tmp_path / "ready.json")
    output = tmp_path / "out"
    report = validate_model(trace, ModelWindow(START, END), output, workload, run=partial(no_contention, calls=calls))
    policy, platform, simulated_workload = calls[0]
    assert policy.horizon == END - START and simulated_workload == workload and platform.exists()
    real = real_attempts([trace], START, END, RowAccount())
    for side in ("real", "simulated"):
        assert report["bands"]["all"][side]["tasks"] == 2
    assert report["bands"]["normal"]["real"] == pytest.approx(bands(real, END - START)["normal"])
    assert report["bands"]["normal"]["real"]["median_wait_s"] == pytest.approx(3.0)
    assert report["bands"]["normal"]["simulated"]["median_wait_s"] == pytest.approx(WAIT_S)
    # the free task of the warm start runs until 3,000 s on both sides: the CPU in use is the same
    # but for the normal tasks' 1 s of wait less
    assert report["cpu_in_use"]["mean_ratio"] == pytest.approx(1.0, abs=0.01)
    per_hour = report["hourly"]
    assert per_hour["hour_starts_s"] == [0.0, 3600.0]
    assert per_hour["tasks_submitted"]["normal"] == {"real": [1, 1], "simulated": [1, 1]}
    assert per_hour["tasks_submitted"]["free"] == {"real": [0, 0], "simulated": [0, 0]}
    assert per_hour["cpu_in_use"]["real"][0] == pytest.approx((0.0625 * 3000 + 0.0625 * 500) / 3600, rel=1e-3)
    assert report["judged"] == JUDGED and "bursts" not in report
    assert report["workload"] == {"file": str(workload), "generated_with_seed": None}
    assert set(report) >= {"bands", "cpu_in_use", "targets", "eviction_p_values", "window", "cell", "policy"}
    assert json.loads((output / REPORT).read_text()) == json.loads(json.dumps(report))
    for name in ("wait_cdf.png", "cpu_in_use.png", "real_attempts.parquet", "simulated_attempts.parquet"):
        assert (output / name).stat().st_size > 0
    lines = list(model_report_lines(report))
    assert lines[0] == "judged: " + JUDGED
    assert any(line.startswith("CPU in use, simulated / real") for line in lines)
    assert not any("largest jobs" in line for line in lines)


def test_a_model_is_drawn_warm_at_the_cells_load_per_machine_on_a_sampled_cell(trace, tmp_path):
    calls = []
    machines, seed = 32, 3
    window = ModelWindow(0.0, 1800.0, seed, machines)
    run = partial(no_contention, calls=calls)
    report = validate_model(trace, window, tmp_path / "out", preset("google-2011-cell"), run=run)
    workload = calls[0][2]
    document = json.loads(workload.read_text())
    warm = [job for job in document["jobs"] if job.get("initial")]
    # the warm start holds the cell's running tasks per machine: a Poisson count, within 5 sigma
    expected = GOOGLE_2011_START_TASKS * machines / GOOGLE_2011_MACHINES
    assert abs(len(warm) - expected) < 5 * math.sqrt(expected)
    assert document["nb_res"] == machines and document["meta"]["seed"] == seed
    arrivals = [job for job in document["jobs"] if not job.get("initial")]
    assert all(0 <= job["subtime"] <= 1800.0 for job in arrivals)
    assert report["bands"]["all"]["simulated"]["tasks"] == sum(job["subtime"] < 1800.0 for job in arrivals)
    assert report["cell"] == {"machines": machines, "sampled": True, "seed": seed}
    assert report["workload"] == {"file": str(workload), "generated_with_seed": seed}
    # its jobs keep the sample's share of their tasks: so do the scheduler's passes, as a sampled replay's
    share = machines / GOOGLE_2011_MACHINES
    defaults = PolicyConfig()
    assert calls[0][0].pass_tasks == round(defaults.pass_tasks * share) < defaults.pass_tasks
    assert calls[0][0].pass_rate == pytest.approx(defaults.pass_rate * share)
    # every generated job has a group, by its model priority
    groups = pl.read_parquet(tmp_path / "out" / "simulated_attempts.parquet")["group"]
    assert groups.null_count() == 0 and groups.n_unique() >= 3
    # the same seed draws the same window
    again = validate_model(trace, window, tmp_path / "again", preset("google-2011-cell"), run=run)
    assert calls[1][2].read_bytes() == workload.read_bytes()
    assert again["bands"] == report["bands"]


def test_a_window_that_cannot_run_is_refused_before_anything_is_written(trace, tmp_path):
    with pytest.raises(ParameterError, match="0 <= --start < --end"):
        validate_model(trace, ModelWindow(600.0, 600.0), tmp_path / "out", preset("google-2011-cell"))
    with pytest.raises(ParameterError, match="--horizon is the window's length"):
        policy = PolicyConfig(horizon=60.0)
        validate_model(trace, ModelWindow(0.0, 600.0), tmp_path / "out", preset("google-2011-cell"), policy)
    assert not (tmp_path / "out").exists()
