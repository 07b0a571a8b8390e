"""docs/python.md's example runs as written: its first block writes the demo's files, its second
simulates them (only with Batsim on PATH)."""

from __future__ import annotations

import json
import re
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


def test_the_page_has_a_generation_block_and_a_simulation_block():
    generation, simulation = code_blocks()
    assert "write_generated_workload" in generation and "run_google_cell" in simulation


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
    summary = namespace["run"].summary
    assert summary["balanced"] and summary["submitted"] == 2000 and summary["open"] == 0
    assert (tmp_path / "experiment" / "results" / "out_jobs.csv").exists()
