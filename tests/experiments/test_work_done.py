"""The warning when the policies of a scenario delivered different work."""

from __future__ import annotations

import polars as pl

from batsim_google.experiments.report import summary_table
from batsim_google.experiments.work_done import WORK_TOLERANCE, work_warnings


def _runs(delivered: dict[tuple[str, str], list[float]]) -> pl.DataFrame:
    rows = [
        {
            "platform": "p",
            "workload": workload,
            "workload_seed": seed,
            "failures": "none",
            "failure_seed": None,
            "policy": policy,
            "status": "done",
            "wall_seconds": 1.0,
            "energy_j": 1e9,
            "delivered_cpu_s": value,
            "directory": "d",
        }
        for (workload, policy), values in delivered.items()
        for seed, value in enumerate(values)
    ]
    return pl.DataFrame(rows, schema_overrides={"failure_seed": pl.Int64})


def test_a_scenario_whose_policies_delivered_different_work_is_flagged_on_its_rows():
    assert WORK_TOLERANCE == 0.01
    summary = summary_table(
        _runs(
            {
                ("w", "always-on"): [3600.0, 3600.0],
                ("w", "idle-sleep"): [3600.0, 3500.0],  # 1.4 % less on average
                ("v", "always-on"): [3600.0],
                ("v", "idle-sleep"): [3590.0],  # 0.28 % apart: fine
            }
        )
    )
    flagged = summary.filter(pl.col("warning").is_not_null())
    assert set(flagged["workload"]) == {"w"} and set(flagged["policy"]) == {"always-on", "idle-sleep"}
    assert set(flagged["metric"]) == {"energy_j", "delivered_cpu_s"}
    (warning,) = flagged["warning"].unique()
    assert warning == (
        "p/w/none: the policies delivered different work (CPU-hours: always-on 1, idle-sleep 0.9861; "
        "1.4% apart, more than 1%): compare their costs with care"
    )


def test_equal_work_a_single_policy_or_no_ledger_gives_no_warning():
    assert (
        work_warnings(summary_table(_runs({("w", "a"): [3600.0], ("w", "b"): [3600.0 * (1 - WORK_TOLERANCE)]}))) == {}
    )
    assert work_warnings(summary_table(_runs({("w", "a"): [3600.0, 10.0]}))) == {}
    no_ledger = _runs({("w", "a"): [1.0], ("w", "b"): [2.0]}).with_columns(pl.lit(None).alias("delivered_cpu_s"))
    assert work_warnings(summary_table(no_ledger)) == {}


def test_compares_printed_summary_shows_work_done_beside_costs_and_the_warning(capsys):
    from batsim_google.cli.experiments import _show_summary

    _show_summary(summary_table(_runs({("w", "a"): [3600.0, 7200.0], ("w", "b"): [1800.0]})))
    out, err = capsys.readouterr()
    assert out.splitlines()[:3] == [
        "p/w/none [a], n = 2 runs:",
        "  energy_j 1e+09 [1e+09, 1e+09]",
        "  delivered_cpu_s 5400 [3600, 7200]",
    ]
    assert err.startswith("warning: p/w/none: the policies delivered different work")
