"""`validate-replay`'s refusals, before anything is converted or run."""

from __future__ import annotations

from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main


def _invoke(tmp_path, *arguments):
    write_part(tmp_path / "trace", [event(seconds_us(10), 1, 0, 0)])
    return CliRunner().invoke(
        main, ["validate-replay", str(tmp_path / "trace"), "-o", str(tmp_path / "out"), *arguments]
    )


def test_a_window_that_ends_before_it_starts_is_refused(tmp_path):
    result = _invoke(tmp_path, "--start", "100", "--end", "50")
    assert result.exit_code == 2 and "0 <= --start < --end" in result.output
    assert not (tmp_path / "out" / "workload.json").exists()


def test_the_horizon_is_the_windows_length(tmp_path):
    result = _invoke(tmp_path, "--start", "0", "--end", "600", "--horizon", "300")
    assert result.exit_code == 2 and "--horizon is the window's length here (600 s)" in result.output


def test_the_calibrated_values_are_the_defaults_of_run_and_validate_replay(tmp_path):
    result = _invoke(tmp_path, "--start", "0", "--end", "600", "--overcommit", "0.5")
    assert result.exit_code == 2 and "--overcommit" in result.output
    for name in ("validate-replay", "run"):
        defaults = {param.name: param.default for param in main.commands[name].params}
        assert defaults["placement_latency"] == 2.0 and defaults["reclaim_on_placement"] == 0.0
        assert defaults["preemption_delay"] == 26.0 and defaults["preempt_share"] == 0.54
        assert defaults["preempt_memory"] == 0.05 and defaults["pay_for_room"] is False
        assert defaults["reclaim_rate"] == 0.0 and defaults["free_tier_room"] is True
        assert defaults["eviction_rate_normal"] == 1.6 and defaults["eviction_rate_production"] == 0.32


def test_a_single_window_needs_its_start_and_end_and_takes_no_sweep_option(tmp_path):
    result = _invoke(tmp_path, "--start", "0")
    assert result.exit_code == 2 and "give --start and --end (or --windows)" in result.output
    result = _invoke(tmp_path, "--start", "0", "--end", "600", "--jobs", "2")
    assert result.exit_code == 2 and "--jobs, --dask and --retry-failed go with --windows" in result.output


def test_a_sweep_needs_a_whole_window_in_the_span(tmp_path):
    # the trace's one event is at 10 s: no window of 600 s fits in [0, 10)
    result = _invoke(tmp_path, "--windows", "600")
    assert result.exit_code == 2 and "[0, 10) s holds no whole window of --windows 600 s" in result.output
    assert not (tmp_path / "out").exists()
