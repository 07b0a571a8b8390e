"""``run``'s line saying what its metrics measured, and how to measure something else."""

from __future__ import annotations

from batsim_google.cli.run import measured_line

METRICS = {"window_start_s": 5.79, "window_end_s": 19724.5, "makespan_s": 2_747_520.0}


def test_the_span_line_names_the_window_the_runs_end_and_the_options():
    line = measured_line(METRICS, "span", True)
    assert line.startswith("measured over the workload's span, 5.79 s to 19724.5 s (5.48 h)")
    assert "ended at 2.74752e+06 s (31.8 days)" in line
    assert "--window run" in line and "--horizon" in line


def test_other_windows_say_what_they_are():
    assert measured_line(METRICS, "horizon", False).startswith("measured from the warm-up to the horizon")
    assert measured_line(METRICS, "run", False).startswith("measured to the run's end, ")
    assert "no workload span" in measured_line(METRICS, "span", False)
