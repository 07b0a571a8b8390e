"""``compare-workload``: fit's fidelity report for any Batsim workload against a trace, an SWF log
or another workload (laws' KS, rates, hourly profile, widths, jobs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law


def generated(path: Path, seed: int, model: str = "google", tasks: int = 3000, scale: float = 100.0) -> Path:
    write_generated_workload(
        path, preset(model), load_request_law(), seed, Generation(tasks=tasks, nb_res=64, arrival_scale=scale)
    )
    return path


def compare(*arguments: str):
    result = CliRunner().invoke(main, ["compare-workload", *arguments])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_workload_against_itself_is_identical_and_the_report_is_written(tmp_path):
    workload = generated(tmp_path / "w.json", 1)
    output = compare(str(workload), str(workload), "-o", str(tmp_path / "report"))
    assert "makespan KS 0.0000" in output and "inter-arrivals KS 0.0000" in output
    report = json.loads((tmp_path / "report" / "comparison.json").read_text())
    assert [c["makespan_ks"] for c in report["classes"]] == [0.0, 0.0]
    assert report["rates"]["original_rate"] == report["rates"]["other_rate"]
    assert report["rates"]["worst_profile_gap"] == 0.0
    markdown = (tmp_path / "report" / "comparison.md").read_text()
    assert "## Laws" in markdown and "## Rates" in markdown and "| task | " in markdown


def test_the_report_tells_a_slower_workload_and_another_model_apart(tmp_path):
    reference = generated(tmp_path / "reference.json", 1)
    same = json.loads(_report(tmp_path, generated(tmp_path / "same.json", 2), reference))
    slower = json.loads(_report(tmp_path, generated(tmp_path / "slow.json", 2, scale=1000.0), reference))
    other = json.loads(_report(tmp_path, generated(tmp_path / "kmeans.json", 2, model="kmeans-4"), reference))
    # the same model, another seed: close laws and rates
    assert max(c["makespan_ks"] for c in same["classes"]) < 0.08 and same["interarrival_ks"] < 0.08
    assert same["rates"]["other_rate"] / same["rates"]["original_rate"] == pytest.approx(1.0, rel=0.1)
    # inter-arrivals 10 times longer: a tenth of the rate, the same makespans
    assert slower["rates"]["other_rate"] / slower["rates"]["original_rate"] == pytest.approx(0.1, rel=0.15)
    assert slower["interarrival_ks"] > 0.5 and max(c["makespan_ks"] for c in slower["classes"]) < 0.08
    # another model's makespans
    assert max(c["makespan_ks"] for c in other["classes"]) > 0.2


def _report(tmp_path: Path, workload: Path, reference: Path) -> str:
    folder = tmp_path / f"report-{workload.stem}"
    compare(str(workload), str(reference), "-o", str(folder))
    return (folder / "comparison.json").read_text()


def test_a_workload_against_an_swf_log_compares_its_tasks(tmp_path):
    """An SWF log has tasks only (no services), one job a minute for five hours."""
    lines = [f"{i + 1} {i * 60} 0 {100 + 10 * (i % 7)} 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1" for i in range(300)]
    log = tmp_path / "log.swf"
    log.write_text("; a synthetic log\n" + "\n".join(lines) + "\n")
    output = compare(str(generated(tmp_path / "w.json", 1)), str(log))
    assert output.count("tasks in the workload") == 1  # the task class only
    assert "submissions per hour" in output and "60 (reference)" not in output
    assert "vs 60.2" in output  # 300 jobs over 299 minutes


def test_a_workload_that_is_not_json_or_unreadable_is_refused_naming_it(tmp_path):
    text = tmp_path / "w.txt"
    text.write_text("x")
    result = CliRunner().invoke(main, ["compare-workload", str(text), str(text)])
    assert result.exit_code == 2 and "w.txt: WORKLOAD is a Batsim workload (.json)" in result.output
    broken = tmp_path / "w.json"
    broken.write_text("{")
    result = CliRunner().invoke(main, ["compare-workload", str(broken), str(broken)])
    assert result.exit_code == 2 and "w.json" in result.output and "Traceback" not in result.output
