"""``run --scheduler``: what is refused before anything starts (no Batsim needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def workload(tmp_path) -> Path:
    path = tmp_path / "w.json"
    path.write_text('{"nb_res": 8, "jobs": [], "profiles": {}}')
    return path


def run(workload: Path, tmp_path: Path, *options: str):
    platform = str(FIXTURES / "cluster8.xml")
    arguments = ["run", "--platform", platform, "--workload", str(workload), "-o", str(tmp_path / "out")]
    return CliRunner().invoke(main, [*arguments, "--no-energy-outputs", *options])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--scheduler", "fillerSched"], "Invalid value for --scheduler: must be KIND=VALUE"),
        (["--scheduler", "command=batsched -v easy_bf"], "put '{socket}' in one argument"),
        (["--scheduler", "pybatsim=fillerSched", "--scheduler-options", "[1"], "take JSON"),
        (["--scheduler", "pybatsim=fillerSched", "--scheduler-needs", '{"x": true}'], "unknown key 'x'"),
        (
            ["--scheduler", "pybatsim=fillerSched", "--placement", "first-fit"],
            "--placement is an option of the built-in",
        ),
        (["--scheduler", "pybatsim=fcfsSchedSleep"], "refused: it switches machines to sleep"),
        (["--scheduler", "python=nowhere.py:Policy"], "no such file"),
    ],
)
def test_a_scheduler_that_cannot_run_is_refused_before_launch(tmp_path, workload, options, message):
    result = run(workload, tmp_path, *options)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_every_kind_takes_the_horizon_as_the_end_of_its_metrics(tmp_path, workload):
    """``--horizon`` is no longer refused with ``--scheduler``: the run goes on to Batsim (missing
    here), and a window that leaves nothing is refused before it, as for the built-in one."""
    result = run(workload, tmp_path, "--scheduler", "pybatsim=fillerSched", "--horizon", "3600", "--batsim", "/nope")
    assert result.exit_code == 1 and "no '/nope' executable" in result.output
    refused = run(workload, tmp_path, "--scheduler", "pybatsim=fillerSched", "--horizon", "60", "--warmup", "120")
    assert refused.exit_code == 2 and "the horizon (60 s) must come after the warm-up (120 s)" in refused.output
