"""Nothing lost, nothing stale: outputs never replace a run's own files; a run folder is complete or
marked incomplete (and then refused by the metrics); ``demo`` never replaces a user's file. No
Batsim needed: a stand-in executable plays Batsim where a run must end well."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.simulation.run import INCOMPLETE, METRICS_FILE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN4 = FIXTURES / "run4"
PLATFORM = FIXTURES / "cell4_energy.xml"
KEEP = "the user's own\n"


def invoke(arguments: list) -> object:
    return CliRunner().invoke(main, [str(a) for a in arguments])


def refusal(result, status: int = 2) -> str:
    assert result.exit_code == status, result.output
    assert "Traceback" not in result.output
    return result.output.strip().splitlines()[-1]


@pytest.fixture
def run_folder(tmp_path) -> Path:
    """An earlier run's folder (run4) with the metrics ``run`` wrote beside its outputs."""
    folder = shutil.copytree(RUN4, tmp_path / "results")
    (folder / METRICS_FILE).write_text('{"energy_j": 1.0}\n')
    return folder


@pytest.fixture
def workload(tmp_path) -> Path:
    """run4's own workload: its jobs' ids and submission times."""
    ran = RunOutputs(RUN4).jobs().filter(pl.col("workload_name") == "w0")
    jobs = [
        {"id": int(job), "subtime": time, "res": 1, "profile": "p"}
        for job, time in ran.select("job_id", "submission_time").iter_rows()
    ]
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 5}}}))
    return path


@pytest.mark.parametrize("name", ["out_jobs.csv", "out_tasks.csv", METRICS_FILE])
def test_per_core_jobs_and_metrics_json_refuse_a_file_of_the_run(run_folder, name):
    target = run_folder / name
    before = target.read_bytes()
    for command in (
        ["per-core-jobs", run_folder, "--platform", PLATFORM, "-o", target],
        ["metrics", run_folder, "--json", target],
    ):
        line = refusal(invoke(command))
        assert (
            line
            == f"Error: {target}: the output would replace a file of the input folder {run_folder}; write it elsewhere"
        )
        assert target.read_bytes() == before


def test_metrics_json_refuses_an_input_file(run_folder, workload, tmp_path):
    platform = shutil.copy(PLATFORM, tmp_path / "p.xml")
    for target in (workload, platform):
        before = Path(target).read_bytes()
        line = refusal(
            invoke(["metrics", run_folder, "--platform", platform, "--workload", workload, "--json", target])
        )
        assert "the output would replace the input" in line
        assert Path(target).read_bytes() == before


def test_a_new_file_in_the_run_folder_is_written(run_folder):
    assert invoke(["metrics", run_folder, "--json", run_folder / "again.json"]).exit_code == 0
    assert json.loads((run_folder / "again.json").read_text())["jobs"] > 0


FAILING_BATSIM = f"""#!{sys.executable}
import sys
print("4.2.1") if "--version" in sys.argv else sys.exit(1)
"""


def test_a_failed_run_over_an_old_one_leaves_no_stale_file_and_is_marked_incomplete(run_folder, workload, tmp_path):
    """Batsim fails at once: none of the old run's files stays beside the new ones."""
    batsim = tmp_path / "failing-batsim"
    batsim.write_text(FAILING_BATSIM)
    batsim.chmod(0o755)
    result = invoke(
        ["run", "--platform", PLATFORM, "--workload", workload, "-o", run_folder, "--no-energy-outputs"]
        + ["--batsim", batsim, "--timeout", "60"]
    )
    assert result.exit_code == 1 and "batsim exited with status 1" in result.output
    assert not (run_folder / METRICS_FILE).exists()
    assert not (run_folder / "out_jobs.csv").exists() and not (run_folder / "out_tasks.csv").exists()
    assert (run_folder / INCOMPLETE).is_file()


def test_the_metrics_refuse_a_folder_marked_incomplete(run_folder, tmp_path):
    (run_folder / INCOMPLETE).write_text("")
    expected = f"Error: {run_folder}: the run there did not end (interrupted or failed: see {INCOMPLETE}); run it again"
    assert refusal(invoke(["metrics", run_folder])) == expected
    assert refusal(invoke(["per-core-jobs", run_folder, "--platform", PLATFORM, "-o", tmp_path / "c.csv"])) == expected


FAKE_BATSIM = f"""#!{sys.executable}
import shutil, sys
if "--version" in sys.argv:
    sys.exit(print("4.2.1"))
prefix = sys.argv[sys.argv.index("-e") + 1]
shutil.copy({str(RUN4 / "out_jobs.csv")!r}, prefix + "_jobs.csv")
"""


def test_a_run_that_ends_well_is_no_longer_marked_and_writes_its_metrics(run_folder, workload, tmp_path):
    batsim = tmp_path / "fake-batsim"
    batsim.write_text(FAKE_BATSIM)
    batsim.chmod(0o755)
    result = invoke(
        ["run", "--platform", PLATFORM, "--workload", workload, "-o", run_folder, "--no-energy-outputs"]
        + ["--batsim", batsim, "--timeout", "60", "--scheduler", f"command={sys.executable} -c pass {{socket}}"]
        + ["--no-figures"]  # the stand-in writes Batsim's jobs only
    )
    assert result.exit_code == 0, result.output
    assert not (run_folder / INCOMPLETE).exists()
    assert json.loads((run_folder / METRICS_FILE).read_text())["jobs"] == RunOutputs(RUN4).jobs().height
    assert not (run_folder / "out_tasks.csv").exists()  # the old run's ledger is gone, not mixed in


def test_demo_never_replaces_a_users_file(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "workload.json").write_text(KEEP)
    line = refusal(invoke(["demo", "-o", folder, "--tasks", "20"]))
    assert line == f"Error: {folder / 'workload.json'} exists: demo never replaces a file; give -o a new folder"
    assert (folder / "workload.json").read_text() == KEEP
    assert sorted(path.name for path in folder.iterdir()) == ["workload.json"]
