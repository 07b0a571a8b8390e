"""The over-commit a run reached, and the energy per CPU-hour it ran, on a schedule worked out on
paper: the load's energy caps a machine's load at 1, so CPU allocated past a machine's capacity
costs nothing (:mod:`batsim_google.experiments.load_energy`), and the metrics say how much."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from batsim_google.cli.metrics import summary_lines
from batsim_google.experiments.load_energy import load_energy, overcommit
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


def _jobs(*rows: tuple[int, float, float, float]) -> pl.DataFrame:
    machine, start, finish, cpu = zip(*rows)
    return pl.DataFrame(
        {"machine": machine, "starting_time": start, "finish_time": finish, "cpu": cpu},
        schema={"machine": pl.Int64, "starting_time": pl.Float64, "finish_time": pl.Float64, "cpu": pl.Float64},
    )


def test_cpu_past_a_machines_capacity_is_counted_and_costs_no_load_energy():
    # m2 (capacity 0.5): 0.5 CPU over 0-100 and 0.25 over 50-150: load 1, then 1.5, then 0.5
    jobs = _jobs((2, 0.0, 100.0, 0.5), (2, 50.0, 150.0, 0.25))
    above = overcommit(jobs, [1.0, 1.0, 0.5, 0.5])
    assert above.cpu_s == pytest.approx(0.25 * 50)  # 0.75 CPU on 0.5 for 50 s
    assert above.peak_load == pytest.approx(1.5)
    # the load's energy: (120 - 60) W x (1 x 50 + 1 (capped, not 1.5) x 50 + 0.5 x 50)
    assert load_energy(jobs, compute_hosts(PLATFORM)) == pytest.approx(60 * 125)


def test_a_machine_within_its_capacity_is_not_overcommitted():
    # m0 (capacity 1): two jobs of 0.5 back to back and side by side, never past 1
    jobs = _jobs((0, 0.0, 100.0, 0.5), (0, 0.0, 50.0, 0.5), (0, 50.0, 80.0, 0.5))
    above = overcommit(jobs, [1.0, 1.0, 0.5, 0.5])
    assert above.cpu_s == 0.0
    assert above.peak_load == pytest.approx(1.0)
    assert overcommit(_jobs((0, 0.0, 0.0, 0.5)).clear(), [1.0]) == (0.0, 0.0)  # no job: no load


def _run(folder: Path) -> tuple[RunOutputs, Path]:
    """The over-committed schedule on m2 by a scheduler without ledger (as a pybatsim one), and
    Batsim's energy: 36 kJ by the end (150 s)."""
    folder.mkdir()
    rows = [
        "0,w0,0,0,1,200,1,COMPLETED_SUCCESSFULLY,0,100,100,0,100,1,2,0,",
        "1,w0,1,0,1,200,1,COMPLETED_SUCCESSFULLY,50,100,150,50,150,1.5,2,0,",
    ]
    (folder / "out_jobs.csv").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    (folder / "out_machine_states.csv").write_text(
        "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n0,0,0,0,3,1\n150,0,0,0,4,0\n"
    )
    (folder / "out_consumed_energy.csv").write_text(
        "time,energy,event_type,wattmin,epower\n0,0,s,0,0\n150,36000,e,0,0\n"
    )
    workload = folder.parent / "workload.json"
    jobs = [
        {"id": 0, "subtime": 0, "res": 1, "walltime": 200, "profile": "a", "cpu": 0.5},
        {"id": 1, "subtime": 0, "res": 1, "walltime": 200, "profile": "a", "cpu": 0.25},
    ]
    workload.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"a": {"type": "delay", "delay": 1}}}))
    return RunOutputs(folder), workload


def test_a_runs_metrics_and_summary_show_the_overcommit_and_the_energy_per_cpu_hour(tmp_path):
    outputs, workload = _run(tmp_path / "run")
    metrics = run_metrics(outputs, PLATFORM, workloads=[workload])
    assert metrics["allocated_cpu_s"] == pytest.approx(0.5 * 100 + 0.25 * 100)
    assert metrics["overcommit_cpu_s"] == pytest.approx(12.5)
    assert metrics["peak_machine_load"] == pytest.approx(1.5)
    assert metrics["load_energy_j"] == pytest.approx(7_500)
    # Batsim's 36 kJ + the load's 7.5 kJ, over 75 CPU-seconds (no ledger: the CPU allocated)
    assert metrics["energy_per_cpu_hour_j"] == pytest.approx((36_000 + 7_500) / (75 / 3600))
    line = summary_lines(metrics)[0]
    assert "over-commit 0.003472 CPU-h above capacity (17 % of the CPU-h allocated" in line
    assert "peak machine load 1.5" in line
    assert "energy per CPU-h 2.088 MJ" in line


def test_without_the_platform_the_overcommit_of_the_builtin_scheduler_is_unknown():
    metrics = run_metrics(RunOutputs(FIXTURES / "run4"))  # requests are fractions of the largest machine
    assert metrics["overcommit_cpu_s"] is None and metrics["peak_machine_load"] is None
    with_platform = run_metrics(RunOutputs(FIXTURES / "run4"), PLATFORM)
    assert with_platform["overcommit_cpu_s"] is not None
    assert with_platform["energy_per_cpu_hour_j"] == pytest.approx(
        with_platform["energy_j"] / (with_platform["delivered_cpu_s"] / 3600)
    )


def test_the_campaign_summary_prints_the_overcommit_beside_the_energy_per_cpu_hour(capsys):
    from batsim_google.cli.experiments import _show_summary
    from batsim_google.experiments.report import summary_table

    rows = [
        {
            "platform": "p",
            "workload": "w",
            "workload_seed": seed,
            "failures": "none",
            "failure_seed": None,
            "policy": "packed",
            "status": "done",
            "wall_seconds": 1.0,
            "energy_j": 1e9,
            "energy_per_cpu_hour_j": 2e6,
            "allocated_cpu_s": 7200.0,
            "overcommit_cpu_s": 360.0 * seed,
            "peak_machine_load": 1.5,
            "directory": "d",
        }
        for seed in (1, 3)
    ]
    _show_summary(summary_table(pl.DataFrame(rows, schema_overrides={"failure_seed": pl.Int64})))
    out = capsys.readouterr().out
    assert (
        "  energy_per_cpu_hour_j 2e+06 [2e+06, 2e+06], allocated_cpu_s 7200 [7200, 7200], "
        "overcommit_cpu_s 720 [360, 1080], peak_machine_load 1.5 [1.5, 1.5]\n" in out
    )
