"""Option values that would hang or wreck a command are refused, naming the option or parameter."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.trace.schema import TaskEvent as E

SWF_LINE = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"


def _trace(tmp_path):
    """A trace of one task that runs 100 s."""
    write_part(
        tmp_path / "trace",
        [event(seconds_us(t), 1, 0, code) for t, code in [(0, E.SUBMIT), (1, E.SCHEDULE), (101, E.FINISH)]],
    )
    return tmp_path / "trace"


def _command(name: str, tmp_path) -> list[str]:
    swf = tmp_path / "x.swf"
    swf.write_text(SWF_LINE)
    return {
        "generate": ["generate", "--tasks", "10"],
        "trace convert": ["trace", "convert", str(_trace(tmp_path))],
        "swf convert": ["swf", "convert", str(swf), "--nb-res", "4"],
    }[name] + ["-o", str(tmp_path / "w.json")]


@pytest.mark.parametrize("command", ["generate", "trace convert", "swf convert"])
def test_a_grain_beyond_an_hour_is_refused(tmp_path, command):
    result = CliRunner().invoke(main, [*_command(command, tmp_path), "--grain", "1e300"])
    assert (
        result.exit_code == 2
        and "grain must be a positive number of seconds, at most 3600 (got 1e+300)" in result.output
    )
    assert not (tmp_path / "w.json").exists()


@pytest.mark.parametrize("command", [["trace", "convert"], ["trace", "stats"]])
def test_grace_nan_is_refused_and_inf_kept(tmp_path, command):
    args = [*command, str(_trace(tmp_path))] + (["-o", str(tmp_path / "w.json")] if command[1] == "convert" else [])
    refused = CliRunner().invoke(main, [*args, "--grace", "nan"])
    assert refused.exit_code == 2 and "Invalid value for '--grace': nan is not a number." in refused.output
    kept = CliRunner().invoke(main, [*args, "--grace", "inf"])
    assert kept.exit_code == 0, kept.output
