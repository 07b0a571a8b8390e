"""idle-sleep's default in real Batsim 4.2.1 throws no work away: on 512 machines and 3,000 tasks
of the ``google`` preset with machines asleep after 120 s idle, a task that fits nowhere awake
waits for a machine to wake; evicting instead (Google's behaviour, without sleep) evicts hundreds
of tasks and abandons some at the restart cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from uncalibrated import UNCALIBRATED_OPTIONS

from batsim_google.cli import main

pytestmark = pytest.mark.batsim


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("cell512")
    platform, workload = folder / "cell512.xml", folder / "workload.json"
    for command in (
        ["platform", "--machines", "512", "-o", str(platform)],
        ["generate", "--preset", "google", "--tasks", "3000", "--seed", "1", "--nb-res", "512", "-o", str(workload)],
    ):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0, result.output
    return platform, workload


@pytest.mark.parametrize("waiting", [True, False])
def test_the_idle_sleep_default_abandons_no_task(tmp_path, batsim_binary, inputs, waiting):
    platform, workload = inputs
    command = ["run", "--platform", str(platform), "--workload", str(workload), "-o", str(tmp_path)]
    command += ["--energy", "idle-sleep", "--idle-timeout", "120", "--timeout", "600", "--no-progress"]
    command += UNCALIBRATED_OPTIONS  # evictions by preemption only
    command += ["--batsim", batsim_binary] + ([] if waiting else ["--evict-before-waking"])
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["tasks"] == 3000 and metrics["balanced"] is True
    if waiting:  # the default
        assert metrics["not_restarted"] == 0 and metrics["evictions"] == 0
        assert "abandoned at the restart cap 0" in result.output and "not restarted" not in result.output
    else:
        assert metrics["evictions"] > 100 and metrics["not_restarted"] > 0
        assert f"{metrics['not_restarted']} task(s) stopped and not restarted" in result.output
