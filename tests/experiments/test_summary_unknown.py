"""The summary of schedulers with and without the ledger: what only the ledger knows reads "n/a"
(n = 0, a null mean), never 0, and the table says where the delay-job energy correction applies."""

from __future__ import annotations

import polars as pl

from batsim_google.experiments.report import summary_table


def _runs() -> pl.DataFrame:
    def row(policy: str, seed: int, evictions, load) -> dict:
        return {
            "platform": "p",
            "workload": "w",
            "workload_seed": seed,
            "failures": "none",
            "failure_seed": None,
            "policy": policy,
            "status": "done",
            "wall_seconds": 1.0,
            "energy_j": 1e9,
            "mean_waiting_s": 10.0 * (seed + 1),
            "evictions": evictions,
            "load_energy_j": load,
            "directory": "d",
        }

    rows = [row("google", s, 3 + s, 100.0) for s in (1, 2)] + [row("filler", s, None, None) for s in (1, 2)]
    return pl.DataFrame(rows, schema_overrides={"failure_seed": pl.Int64})


def test_ledger_metrics_of_a_scheduler_without_one_are_unknown_not_zero():
    summary = summary_table(_runs())
    filler = summary.filter(pl.col("policy") == "filler")
    evictions = filler.filter(pl.col("metric") == "evictions").row(0, named=True)
    assert evictions["n"] == 0 and evictions["mean"] is None
    assert filler.filter(pl.col("metric") == "mean_waiting_s")["mean"].item() == 25.0
    google = summary.filter((pl.col("policy") == "google") & (pl.col("metric") == "evictions")).row(0, named=True)
    assert google["n"] == 2 and google["mean"] == 4.5


def test_a_metric_no_run_knows_still_has_its_rows():
    summary = summary_table(_runs().filter(pl.col("policy") == "filler"))
    assert set(summary["metric"]) == {"energy_j", "mean_waiting_s", "evictions", "load_energy_j"}
    assert summary.filter(pl.col("metric") == "evictions")["n"].item() == 0


def test_the_table_says_where_the_delay_job_energy_correction_was_applied():
    summary = summary_table(_runs())
    corrections = dict(summary.select("policy", "energy_correction").unique().iter_rows())
    assert corrections == {"google": "applied", "filler": "not applied"}


def test_the_printed_summary_shows_n_a_and_the_correction(capsys):
    from batsim_google.cli.experiments import _show_summary

    _show_summary(summary_table(_runs()))
    out = capsys.readouterr().out
    assert "p/w/none [filler], n = 2 runs (energy: delay-job load correction not applied):" in out
    assert "evictions n/a" in out and "evictions 4.5 [4, 5]" in out
