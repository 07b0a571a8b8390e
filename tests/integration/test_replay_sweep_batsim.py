"""`validate-replay --windows` in real Batsim: two 300 s windows of the trace sample on 64 sampled
machines, each replayed from its own state, then resumed without replaying anything."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.replay_fidelity import BANDS

pytestmark = pytest.mark.batsim

START, END, LENGTH, MACHINES = 600.0, 1200.0, 300.0, 64


@pytest.fixture(scope="module")
def sweep(google_2011, batsim_binary, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    arguments = ["validate-replay", str(google_2011), "--windows", str(LENGTH), "--start", str(START)]
    arguments += ["--end", str(END), "--sample-cell", str(MACHINES), "--seed", "1", "--jobs", "2"]
    arguments += ["-o", str(folder / "out"), "--batsim", batsim_binary, "--timeout", "300", "--no-progress"]
    first = CliRunner().invoke(main, [*arguments, "--json", str(folder / "sweep.json")])
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(main, [*arguments, "--json", str(folder / "again.json")])
    assert second.exit_code == 0, second.output
    return folder, first.output, second.output


def test_every_window_is_replayed_from_its_own_state_and_tabulated(sweep):
    folder, output, _ = sweep
    document = json.loads((folder / "sweep.json").read_text())
    assert [(w["start"], w["end"], w["status"]) for w in document["windows"]] == [
        (600.0, 900.0, "done"),
        (900.0, 1200.0, "done"),
    ]
    table = pl.read_csv(folder / "out" / "sweep.csv")

    def without_status(rows):
        return [{key: value for key, value in row.items() if key != "status"} for row in rows]

    assert without_status(table.to_dicts()) == without_status(document["rows"])  # the table: reused since
    assert set(table["status"]) == {"reused"} and table["met"].null_count() == 0
    for window in document["windows"]:
        report = json.loads(
            (
                folder / "out" / "windows" / f"{window['start']:g}-{window['end']:g}" / "replay_validation.json"
            ).read_text()
        )
        assert set(report["bands"]) == set(BANDS) and report["window"] == {
            "start": window["start"],
            "end": window["end"],
        }
        assert report["targets"] == window["targets"] and report["bursts"] == window["bursts"]
        assert len(report["bursts"]["evictions_per_minute"]["simulated"]) == 5
        # the window's rows are its report's targets, one row each
        rows = table.filter(pl.col("start") == window["start"])
        assert rows.height == sum(len(group) for group in report["targets"].values())
    summary = document["summary"]
    assert summary["windows"] == 2 and summary["done"] == 2 and summary["targets_checked"] == table.height
    assert f"targets met {summary['targets_met']} of {summary['targets_checked']} checked" in output
    for name in ("sweep_evictions.png", "sweep_largest_jobs.png"):
        assert (folder / "out" / name).stat().st_size > 10_000


def test_a_second_invocation_reuses_every_window(sweep):
    folder, first, second = sweep
    again = json.loads((folder / "again.json").read_text())
    assert [w["status"] for w in again["windows"]] == ["reused", "reused"]
    assert again["summary"]["targets_met"] == json.loads((folder / "sweep.json").read_text())["summary"]["targets_met"]
    assert "2 windows (0 replayed, 2 reused, 0 failed)" in second
    assert "window [600, 900) s:" in first and "window [600, 900) s:" not in second
    assert second.splitlines()[-2] == first.splitlines()[-2].replace("2 replayed, 0 reused", "0 replayed, 2 reused")
