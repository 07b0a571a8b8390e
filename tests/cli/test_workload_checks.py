"""A workload is checked once, the same way, by every command that reads it (estimate, run, fit,
metrics --workload): what Batsim refuses or cannot take is refused naming the job and the bound;
``metrics DIR --workload W`` refuses a W the run did not simulate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.outputs import RunOutputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN4 = FIXTURES / "run4"
PLATFORM = FIXTURES / "cell4_energy.xml"


def invoke(arguments: list) -> object:
    return CliRunner().invoke(main, [str(a) for a in arguments])


def refusal(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output.strip().splitlines()[-1]


def run4_jobs() -> list[dict]:
    """The jobs run4 simulated as w0: their ids and submission times, one delay profile each."""
    ran = RunOutputs(RUN4).jobs().filter(pl.col("workload_name") == "w0").sort("submission_time")
    return [
        {"id": int(job), "subtime": time, "res": 1, "profile": "p", "walltime": -1}
        for job, time in ran.select("job_id", "submission_time").iter_rows()
    ]


def write_workload(path: Path, jobs: list[dict], delay: float = 10.0) -> Path:
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": delay}}}))
    return path


#: A workload Batsim cannot take, and what the refusal says of job 5.
BAD = {
    "negative submission": ({"subtime": -3.0}, 10.0, "job 5: subtime -3 must be >= 0"),
    "submission beyond the bound": (
        {"subtime": 1e15},
        10.0,
        "job 5: subtime 1e+15 must be >= 0 and below 4.398e+12 s",
    ),
    "walltime of 1e300": ({"walltime": 1e300}, 10.0, "job 5: walltime 1e+300 must be -1 (none), or > 0 and at most"),
    "zero walltime": ({"walltime": 0}, 10.0, "job 5: walltime 0 must be -1 (none), or > 0"),
    "delay of 1e44": ({}, 1e44, "job 0: delay 1e+44 must be > 0 and at most 4.398e+12 s (2^42 s"),
    "zero delay": ({}, 0.0, "job 0: delay 0 must be > 0"),
}


def bad_workload(path: Path, case: str) -> tuple[Path, str]:
    change, delay, message = BAD[case]
    jobs = [dict(job, **change) if job["id"] == 5 else job for job in run4_jobs()]
    return write_workload(path, jobs, delay), message


COMMANDS = {
    "estimate": ["estimate", PLATFORM, "{w}"],
    "run": ["run", "--platform", PLATFORM, "--workload", "{w}", "-o", "{dir}/out", "--no-energy-outputs"],
    "fit": ["fit", "{w}", "-o", "{dir}/m.toml"],
    "metrics": ["metrics", "{dir}/run4", "--workload", "{w}"],
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_refuses_what_batsim_cannot_take_naming_the_job(tmp_path, command, case):
    shutil.copytree(RUN4, tmp_path / "run4")
    workload, message = bad_workload(tmp_path / "w.json", case)
    line = refusal(invoke([str(part).format(w=workload, dir=tmp_path) for part in COMMANDS[command]]))
    assert line.startswith(f"Error: {workload}: {message}"), line
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.toml").exists()


def test_a_job_whose_profile_is_missing_is_refused_everywhere(tmp_path):
    jobs = [dict(job, profile="nowhere") if job["id"] == 2 else job for job in run4_jobs()]
    workload = write_workload(tmp_path / "w.json", jobs)
    line = refusal(invoke(["estimate", PLATFORM, workload]))
    assert line == f"Error: {workload}: job 2: profile 'nowhere' is not among the profiles"


def test_metrics_takes_the_workload_the_run_simulated(tmp_path):
    workload = write_workload(tmp_path / "w.json", run4_jobs())
    result = invoke(["metrics", RUN4, "--workload", workload])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda jobs: [dict(job, subtime=job["subtime"] + 3600) for job in jobs],
            "its job 0 is submitted at 3600 s, at 0 s in the run",
        ),
        (lambda jobs: [job for job in jobs if job["id"] != 7], "it has no job 7, which the run had"),
        (
            lambda jobs: [*jobs, {"id": 99, "subtime": 50.0, "res": 1, "profile": "p"}],
            "its job 99 (submitted at 50 s) is not in the run",
        ),
    ],
    ids=["another window", "a job fewer", "a job more"],
)
def test_metrics_refuses_a_workload_the_run_did_not_simulate(tmp_path, change, message):
    workload = write_workload(tmp_path / "w.json", change(run4_jobs()))
    line = refusal(invoke(["metrics", RUN4, "--workload", workload, "--json", tmp_path / "m.json"]))
    assert line == f"Error: {workload}: not the workload w0 the run in {RUN4} simulated: {message}"
    assert not (tmp_path / "m.json").exists()


def test_a_later_job_a_run_cut_at_its_horizon_never_saw_is_no_mismatch(tmp_path):
    jobs = [*run4_jobs(), {"id": 99, "subtime": 1e6, "res": 1, "profile": "p"}]
    result = invoke(["metrics", RUN4, "--workload", write_workload(tmp_path / "w.json", jobs)])
    assert result.exit_code == 0, result.output


def test_metrics_refuses_fewer_workloads_than_the_run_simulated(tmp_path):
    shutil.copytree(RUN4, tmp_path / "run4")
    jobs_csv = tmp_path / "run4" / "out_jobs.csv"
    lines = jobs_csv.read_text().splitlines()
    jobs_csv.write_text("\n".join([*lines, lines[1].replace(",w0,", ",w1,")]) + "\n")
    workload = write_workload(tmp_path / "w.json", run4_jobs())
    line = refusal(invoke(["metrics", tmp_path / "run4", "--workload", workload]))
    assert (
        line
        == f"Error: {tmp_path / 'run4'}: the run simulated workload(s) w1 too: give every --workload it ran, in its order"
    )
