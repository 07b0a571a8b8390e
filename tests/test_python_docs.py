"""docs/python.md's example runs as written: its first block writes the demo's files, its second
simulates them, its third is a script with a policy of its own (the last two only with Batsim on
PATH)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def code_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), flags=re.DOTALL | re.MULTILINE)


def write_inputs(folder: Path, monkeypatch) -> dict:
    """Run the generation block in ``folder``; its variables, for the simulation block."""
    monkeypatch.chdir(folder)
    namespace: dict = {}
    exec(compile(code_blocks()[0], f"{PAGE}[generation]", "exec"), namespace)
    return namespace


def test_the_page_has_a_generation_block_a_simulation_block_and_a_script():
    generation, simulation, script = code_blocks()
    assert "write_generated_workload" in generation and "simulate" in simulation
    assert "class WholeMachine(Policy)" in script and 'if __name__ == "__main__":' in script


def test_the_example_writes_the_demos_cell_workload_and_failures(tmp_path, monkeypatch):
    write_inputs(tmp_path, monkeypatch)
    from batsim_google.platform.simgrid_xml import compute_hosts

    folder = tmp_path / "experiment"
    assert len(compute_hosts(folder / "platform.xml")) == 64
    workload = json.loads((folder / "workload.json").read_text())
    assert workload["nb_res"] == 64 and len(workload["jobs"]) == 2000
    assert workload["meta"]["arrival_scale"] == pytest.approx(12_583 / 64)
    events = [json.loads(line) for line in (folder / "failures.jsonl").read_text().splitlines()]
    assert events and max(event["timestamp"] for event in events) < 2 * 24 * 3600


@pytest.mark.batsim
def test_the_example_simulates_them_and_the_accounting_balances(tmp_path, monkeypatch, batsim_binary):
    namespace = write_inputs(tmp_path, monkeypatch)
    exec(compile(code_blocks()[1], f"{PAGE}[simulation]", "exec"), namespace)
    run = namespace["run"]
    summary = run.simulation.summary
    assert summary["balanced"] and summary["submitted"] == 2000 and summary["open"] == 0
    assert (run.output / "out_jobs.csv").exists()
    assert json.loads((run.output / "metrics.json").read_text()) == run.metrics


@pytest.mark.batsim
@pytest.mark.parametrize("guarded", [True, False])
def test_the_script_runs_its_own_policy_and_an_unguarded_one_fails_in_one_line(
    tmp_path, monkeypatch, batsim_binary, guarded
):
    """The script as a user runs it, ``python whole_machine.py``; without its ``__main__`` guard the
    scheduler's process, importing it, would start a simulation of its own: refused."""
    write_inputs(tmp_path, monkeypatch)
    script = code_blocks()[2]
    if not guarded:
        script = script.replace('if __name__ == "__main__":', "if True:")
    (tmp_path / "whole_machine.py").write_text(script)
    done = subprocess.run(
        [sys.executable, "whole_machine.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    if guarded:
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("mean wait ")
        metrics = json.loads((tmp_path / "experiment" / "whole-machine" / "metrics.json").read_text())
        assert metrics["balanced"] and metrics["evictions"] == 0
    else:
        assert done.returncode != 0
        assert "started a simulation as it was loaded to find its policy" in done.stderr.strip().splitlines()[-1]
