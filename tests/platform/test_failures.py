"""Failure law: seeded, alternating, within the horizon, and the laws it claims."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO
from procset import ProcSet
from scipy import stats

from batsim_google.cli import main
from batsim_google.errors import ParameterError
from batsim_google.platform.failures import DEFAULT_MTBF, MAX_FAILURE_EVENTS, FailureLaw, draw_failures


def _periods(changes, machines):
    """Complete up periods (from 0 or a repair to the next failure) and down periods."""
    up, down = [], []
    for machine in range(machines):
        mine = changes.resource == machine
        times, available = changes.time[mine], changes.available[mine]
        assert (available == (np.arange(len(times)) % 2 == 1)).all()  # down, up, down, ...
        starts = np.r_[0.0, times[1::2]]
        failures = times[0::2]
        up.append(failures - starts[: len(failures)])
        down.append(times[1::2] - failures[: len(times[1::2])])
    return np.concatenate(up), np.concatenate(down)


def test_default_law_is_the_2011_removal_rate():
    assert DEFAULT_MTBF / 86_400 == pytest.approx(12_583 / (870 / 2))
    assert FailureLaw().mean_repair_time == 3_600


def test_seeded_alternating_and_within_the_horizon():
    law = FailureLaw(mean_time_between_failures=500.0, mean_repair_time=50.0)
    a = draw_failures(40, law, 10_000.0, np.random.default_rng(7))
    b = draw_failures(40, law, 10_000.0, np.random.default_rng(7))
    c = draw_failures(40, law, 10_000.0, np.random.default_rng(8))
    assert np.array_equal(a.time, b.time) and np.array_equal(a.resource, b.resource)
    assert not np.array_equal(a.time, c.time)
    assert a.time.min() > 0 and a.time.max() < 10_000.0
    assert set(a.resource.tolist()) <= set(range(40))
    _periods(a, 40)  # asserts down/up alternation per machine


@pytest.mark.parametrize("shape", [1.0, 0.6])
def test_up_and_down_times_follow_the_law(shape):
    law = FailureLaw(mean_time_between_failures=100.0, time_between_failures_shape=shape, mean_repair_time=10.0)
    changes = draw_failures(50, law, 100_000.0, np.random.default_rng(1))
    up, down = _periods(changes, 50)
    scale = 100.0 / math.gamma(1 + 1 / shape)
    assert stats.kstest(up, stats.weibull_min(shape, scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(down, stats.expon(scale=10.0).cdf).pvalue > 1e-3
    # A law of another mean or shape is told apart.
    assert stats.kstest(up, stats.weibull_min(shape, scale=1.2 * scale).cdf).pvalue < 1e-6
    assert stats.kstest(up, stats.weibull_min(shape * 1.3, scale=scale).cdf).pvalue < 1e-6
    cycles = 100_000.0 / (100.0 + 10.0)
    assert len(up) / 50 == pytest.approx(cycles, rel=0.05)


def test_bad_laws_are_refused():
    with pytest.raises(ValueError, match="mean_repair_time must be a positive number"):
        FailureLaw(mean_repair_time=0)
    with pytest.raises(ValueError, match="horizon"):
        draw_failures(3, FailureLaw(), 0.0, np.random.default_rng(0))


def test_failures_command(tmp_path):
    runner = CliRunner()
    assert runner.invoke(main, ["platform", "--machines", "64", "-o", str(tmp_path / "p.xml")]).exit_code == 0
    out = tmp_path / "events.jsonl"
    args = [
        "failures",
        str(tmp_path / "p.xml"),
        "-o",
        str(out),
        "--mtbf",
        "3600",
        "--mttr",
        "600",
        "--horizon",
        "86400",
        "--seed",
        "4",
    ]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert {e["type"] for e in events} == {"machine_unavailable", "machine_available"}
    assert all(0 < e["timestamp"] < 86_400 for e in events)
    # 64 machines x 86400 s / (3600 + 600) s per cycle: about 1317 failures.
    failures = sum(len(ProcSet.from_str(e["resources"])) for e in events if e["type"] == "machine_unavailable")
    assert failures == pytest.approx(64 * 86_400 / 4_200, abs=4 * math.sqrt(1317))
    again = tmp_path / "again.jsonl"
    assert runner.invoke(main, [*args[:3], str(again), *args[4:]]).exit_code == 0
    assert again.read_bytes() == out.read_bytes()
    refused = runner.invoke(main, [*args, "--machine-events", str(tmp_path)])
    assert refused.exit_code == 2 and "give no failure law" in refused.output


@pytest.mark.parametrize(
    "law",
    [
        {"mean_time_between_failures": math.inf},
        {"mean_repair_time": math.nan},
        {"repair_time_shape": 1e-9},
        {"time_between_failures_shape": True},
    ],
)
def test_laws_without_a_finite_mean_are_refused(law):
    with pytest.raises(ParameterError, match=f"{next(iter(law))} must be"):
        FailureLaw(**law)


@pytest.mark.parametrize("horizon", [math.inf, math.nan, -1.0])
def test_a_horizon_that_never_ends_is_refused(horizon):
    with pytest.raises(ParameterError, match="horizon must be a positive finite number"):
        draw_failures(3, FailureLaw(), horizon, np.random.default_rng(0))


@pytest.mark.parametrize(
    "law",
    [
        FailureLaw(mean_time_between_failures=1.0, mean_repair_time=1.0),
        # rare long periods among countless short ones: few expected, many drawn
        FailureLaw(mean_time_between_failures=86_400.0, time_between_failures_shape=0.01, repair_time_shape=0.01),
    ],
)
def test_a_law_drawing_too_many_events_is_refused(law):
    with pytest.raises(ParameterError, match=f"more than {MAX_FAILURE_EVENTS:,} events"):
        draw_failures(200, law, 29 * 86_400.0, np.random.default_rng(0))


def test_no_machine_to_fail_is_refused():
    with pytest.raises(ParameterError, match="at least one machine"):
        draw_failures(0, FailureLaw(), 10.0, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--horizon", "inf"),
        ("--horizon", "nan"),
        ("--mtbf", "nan"),
        ("--mtbf", "inf"),
        ("--mttr", "inf"),
        ("--mttr-shape", "1e-9"),
    ],
)
def test_failures_command_refuses_values_that_never_end(tmp_path, option, value):
    platform = REPO / "tests" / "fixtures" / "cluster8.xml"
    result = CliRunner().invoke(main, ["failures", str(platform), "-o", str(tmp_path / "f.jsonl"), option, value])
    assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output
    assert not (tmp_path / "f.jsonl").exists()


def test_failures_command_on_a_platform_without_hosts(tmp_path):
    platform = tmp_path / "empty.xml"
    platform.write_text('<?xml version="1.0"?>\n<platform version="4.1"><zone id="z" routing="Full"/></platform>\n')
    result = CliRunner().invoke(main, ["failures", str(platform), "-o", str(tmp_path / "f.jsonl")])
    assert (
        result.exit_code == 2
        and result.output
        == f"Error: {platform}: no compute host (a <host> or <cluster> that is neither master nor storage)\n"
    )


def test_failures_command_refuses_too_many_events(tmp_path):
    platform = REPO / "tests" / "fixtures" / "cluster8.xml"
    result = CliRunner().invoke(
        main, ["failures", str(platform), "-o", str(tmp_path / "f.jsonl"), "--mtbf", "1", "--mttr", "1"]
    )
    assert result.exit_code == 2 and f"more than {MAX_FAILURE_EVENTS:,} events" in result.output
