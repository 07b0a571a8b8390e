"""Absurd counts and durations are refused at once, naming the bound, instead of running until
killed: the bounds are declared once (batsim_google.parameters) and checked where the options are."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.errors import ParameterError
from batsim_google.experiments.window import Window
from batsim_google.generation.generator import generate
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.parameters import MAX_TASKS, MAX_TIME_S
from batsim_google.scheduling.policy_config import PolicyConfig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN4 = FIXTURES / "run4"
PLATFORM = FIXTURES / "cell4_energy.xml"
#: A bound refused at once: far less than the time any of these would run for.
AT_ONCE_S = 30


@pytest.fixture
def workload(tmp_path) -> Path:
    path = tmp_path / "input.json"
    path.write_text('{"nb_res": 4, "jobs": [], "profiles": {}}')
    return path


@pytest.mark.parametrize(
    "command, message",
    [
        (
            ["generate", "--tasks", "1000000000000000", "-o", "{dir}/w.json"],
            "--tasks': 1000000000000000 is not in the range 0<=x<=1000000000",
        ),
        (
            ["generate", "--duration", "1e15", "-o", "{dir}/w.json"],
            "--duration': 1000000000000000.0 is not in the range 0<=x<=4398046511104.0",
        ),
        (
            ["demo", "--tasks", "1000000000000000", "-o", "{dir}/demo"],
            "--tasks': 1000000000000000 is not in the range 1<=x<=1000000000",
        ),
        (
            ["failures", str(PLATFORM), "--horizon", "1e15", "-o", "{dir}/f.jsonl"],
            "--horizon': 1000000000000000.0 is not in the range 0<x<=4398046511104.0",
        ),
        (
            ["run", "--platform", str(PLATFORM), "--workload", "{w}", "-o", "{dir}/out", "--horizon", "1e15"],
            "--horizon': horizon must be <= 4.398e+12 seconds (got 1000000000000000.0)",
        ),
        (
            ["run", "--platform", str(PLATFORM), "--workload", "{w}", "-o", "{dir}/out", "--idle-timeout", "1e300"],
            "--idle-timeout': idle_timeout must be <= 4.398e+12 seconds (got 1e+300)",
        ),
        (
            ["run", "--platform", str(PLATFORM), "--workload", "{w}", "-o", "{dir}/out", "--restart-delay", "1e20"],
            "--restart-delay': restart_delay must be <= 4.398e+12 seconds (got 1e+20)",
        ),
        (
            ["run", "--platform", str(PLATFORM), "--workload", "{w}", "-o", "{dir}/out", "--warmup", "1e300"],
            "--warmup': 1e+300 is not in the range 0<=x<=4398046511104.0",
        ),
        (["metrics", str(RUN4), "--horizon", "1e300"], "--horizon': 1e+300 is not in the range 0<=x<=4398046511104.0"),
    ],
    ids=lambda value: value[0] if isinstance(value, list) else "",
)
def test_an_absurd_option_is_refused_at_once_with_its_bound(tmp_path, workload, command, message):
    started = time.monotonic()
    result = CliRunner().invoke(main, [part.format(dir=tmp_path, w=workload) for part in command])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert time.monotonic() - started < AT_ONCE_S
    assert not (tmp_path / "w.json").exists() or command[0] != "generate"


def test_a_duration_that_would_give_too_many_tasks_is_refused_at_once(tmp_path):
    started = time.monotonic()
    result = CliRunner().invoke(main, ["generate", "--duration", "1e9", "-o", str(tmp_path / "w.json")])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1].startswith("Error: duration 1e+09 s would give about 2e+10 tasks")
    assert f"more than {MAX_TASKS:.0e}" in result.output
    assert time.monotonic() - started < AT_ONCE_S
    assert list(tmp_path.iterdir()) == []


def test_a_duration_within_the_bound_still_generates(tmp_path):
    result = CliRunner().invoke(main, ["generate", "--duration", "600", "-o", str(tmp_path / "w.json")])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "options", [{"tasks": MAX_TASKS + 1}, {"duration": 2 * MAX_TIME_S}, {"duration": float("nan")}]
)
def test_the_python_api_refuses_the_same_bounds(options):
    with pytest.raises(ParameterError, match="must be"):
        next(generate(preset("google"), load_request_law(), np.random.default_rng(0), **options))


@pytest.mark.parametrize("name", ["horizon", "restart_delay", "idle_timeout"])
def test_a_campaigns_policy_refuses_times_beyond_the_bound(name):
    with pytest.raises(
        ParameterError, match=rf"policies.p: {name} must be <= 4.398e\+12 seconds \(got 1000000000000000.0\)"
    ):
        PolicyConfig.from_mapping({name: 1e15}, "policies.p")


def test_a_window_beyond_the_bound_is_refused():
    with pytest.raises(ParameterError, match="warmup must be"):
        Window(1e300)
    with pytest.raises(ParameterError, match="the horizon must be <= 4.398e"):
        Window(0.0, 1e300)
