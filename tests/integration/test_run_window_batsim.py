"""``run`` in real Batsim 4.2.1: the default measurement window is the workload's span, said in
one line; ``--window run`` measures to the run's end; the run's figures are drawn."""

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

PLATFORM = Path(__file__).resolve().parents[1] / "fixtures" / "cell4_energy.xml"
pytestmark = pytest.mark.batsim


def test_run_measures_the_workloads_span_by_default_and_draws_its_figures(tmp_path, batsim_binary):
    workload = tmp_path / "workload.json"
    write_generated_workload(
        workload, preset("google"), load_request_law(), 3, Generation(tasks=60, nb_res=4, arrival_scale=50)
    )
    submissions = sorted(job["subtime"] for job in json.loads(workload.read_text())["jobs"])
    span_end = submissions[-1] + (submissions[-1] - submissions[0]) / (len(submissions) - 1)
    arguments = ["run", "--platform", str(PLATFORM), "--workload", str(workload), "--batsim", batsim_binary]
    result = CliRunner().invoke(main, [*arguments, "-o", str(tmp_path / "span")])
    assert result.exit_code == 0, result.output
    assert "measured over the workload's span" in result.output and "--window run" in result.output
    metrics = json.loads((tmp_path / "span" / "metrics.json").read_text())
    assert metrics["window_start_s"] == pytest.approx(submissions[0])
    assert metrics["window_end_s"] == pytest.approx(span_end) and span_end < metrics["makespan_s"]
    for name in ("timeline.png", "waiting.png"):
        assert (tmp_path / "span" / name).stat().st_size > 10_000
    assert (tmp_path / "span" / "suspension.png").exists() == (metrics["suspended_tasks"] > 0)
    whole = CliRunner().invoke(main, [*arguments, "-o", str(tmp_path / "run"), "--window", "run", "--no-figures"])
    assert whole.exit_code == 0, whole.output
    assert "measured to the run's end" in whole.output
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert (metrics["window_start_s"], metrics["window_end_s"]) == (0.0, metrics["makespan_s"])
    assert not (tmp_path / "run" / "timeline.png").exists()
