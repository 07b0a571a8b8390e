"""The README's first command: ``demo`` writes a folder that the command it prints simulates."""

from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.platform.simgrid_xml import compute_hosts


def write_demo(folder) -> tuple[str, str]:
    result = CliRunner().invoke(main, ["demo", "-o", str(folder), "--tasks", "300", "--seed", "0"])
    assert result.exit_code == 0, result.output
    return result.output, result.output.split("simulate with:\n", 1)[1].strip()


def test_demo_writes_a_cell_a_workload_at_the_cells_load_and_failures(tmp_path):
    _, command = write_demo(tmp_path)
    assert len(compute_hosts(tmp_path / "platform.xml")) == 64
    workload = json.loads((tmp_path / "workload.json").read_text())
    assert workload["nb_res"] == 64 and len(workload["jobs"]) == 300
    assert workload["meta"]["arrival_scale"] == pytest.approx(GOOGLE_2011_MACHINES / 64)
    # 300 arrivals of mean 0.05 s stretched about 197 times: about 2,950 s, not 15 s.
    assert 1500 < workload["jobs"][-1]["subtime"] < 6000
    events = (tmp_path / "failures.jsonl").read_text().splitlines()
    assert events and all(json.loads(line)["type"] in ("machine_unavailable", "machine_available") for line in events)
    assert command.startswith("uv run batsim-google run --platform ")
    assert "README.txt" in {path.name for path in tmp_path.iterdir()}


@pytest.mark.batsim
def test_the_printed_command_simulates_the_demo_and_balances(tmp_path, batsim_binary):
    _, command = write_demo(tmp_path)
    arguments = shlex.split(command)[3:]  # after "uv run batsim-google"
    result = CliRunner().invoke(main, [*arguments, "--no-progress", "--timeout", "600"])
    assert result.exit_code == 0, result.output
    accounting = json.loads((tmp_path / "results" / "out_accounting.json").read_text())
    assert accounting["balanced"] and accounting["submitted"] == 300 and accounting["open"] == 0
    assert (tmp_path / "results" / "out_jobs.csv").exists()
