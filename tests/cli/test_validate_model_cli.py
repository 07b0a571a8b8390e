"""`validate-model`'s refusals, before anything is generated or run, and its defaults."""

from __future__ import annotations

from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main


def _invoke(tmp_path, *arguments):
    write_part(tmp_path / "trace", [event(seconds_us(10), 1, 0, 0)])
    return CliRunner().invoke(
        main, ["validate-model", str(tmp_path / "trace"), "-o", str(tmp_path / "out"), *arguments]
    )


def test_a_window_that_ends_before_it_starts_is_refused(tmp_path):
    result = _invoke(tmp_path, "--start", "100", "--end", "50")
    assert result.exit_code == 2 and "0 <= --start < --end" in result.output
    assert not (tmp_path / "out").exists()


def test_a_ready_workload_goes_without_a_model(tmp_path):
    workload = tmp_path / "w.json"
    workload.write_text("{}")
    result = _invoke(tmp_path, "--start", "0", "--end", "600", "--workload", str(workload), "--preset", "google")
    assert result.exit_code == 2 and "give --workload or a model (--preset, --model), not both" in result.output
    result = _invoke(tmp_path, "--start", "0", "--end", "600", "--preset", "google", "--model", str(workload))
    assert result.exit_code == 2 and "give --preset or --model, not both" in result.output


def test_the_scheduler_options_are_validate_replays(tmp_path):
    mine = {param.name: param.default for param in main.commands["validate-model"].params}
    theirs = {param.name: param.default for param in main.commands["validate-replay"].params}
    shared = set(mine) & set(theirs) - {"output"}
    assert {"preempt_share", "placement_latency", "horizon", "timeout", "batsim_binary"} <= shared
    assert {name: mine[name] for name in shared} == {name: theirs[name] for name in shared}
