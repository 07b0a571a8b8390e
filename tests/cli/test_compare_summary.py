"""``compare``'s printed summary: a metric that fewer runs of a group have says of how many."""

from __future__ import annotations

import polars as pl

from batsim_google.cli.experiments import _show_summary


def _row(metric: str, n: int, mean: float | None) -> dict:
    interval = (None, None) if n < 2 else (mean - 1.0, mean + 1.0)
    return {
        "platform": "cell16",
        "workload": "generated",
        "failures": "none",
        "policy": "cell-on",
        "metric": metric,
        "n": n,
        "mean": mean,
        "std": None,
        "ci_low": interval[0],
        "ci_high": interval[1],
        "energy_correction": None,
        "warning": None,
    }


def test_a_mean_over_fewer_runs_than_the_group_says_of_how_many(capsys):
    # three seeds, only one of which submitted a task inside the window: one mean wait
    summary = pl.DataFrame([_row("energy_j", 3, 100.0), _row("mean_waiting_s", 1, 2.0), _row("evictions", 3, 5.0)])
    _show_summary(summary)
    printed = capsys.readouterr().out
    assert "cell16/generated/none [cell-on], n = 3 runs:" in printed
    assert "mean_waiting_s 2 (1 of 3 runs)" in printed
    assert "energy_j 100 [99, 101]," in printed and "evictions 5 [4, 6]" in printed
