"""``validate-replay --windows``: a small trace's windows replayed on worker processes, resumed, a
failure recorded. Batsim is replaced by :func:`fake_validate`, which returns a report built by the
package's own definitions from the window's real attempts and a simulated side that waits 2 s
(tests/integration/test_replay_sweep_batsim.py runs the same sweep in Batsim)."""

from __future__ import annotations

import csv
import json
from functools import partial
from pathlib import Path

import polars as pl
import pytest
from trace_files import event, seconds_us, write_part

from batsim_google.errors import ParameterError, SimulationError
from batsim_google.experiments.replay_attempts import real_attempts
from batsim_google.experiments.replay_bursts import bursts
from batsim_google.experiments.replay_fidelity import compare, eviction_p_values, targets
from batsim_google.experiments.replay_sweep import (
    COLUMNS,
    MARKER,
    WINDOWS,
    SweepWindows,
    replay_window,
    sweep_windows,
    windows,
)
from batsim_google.experiments.replay_validation import ATTEMPTS
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.settings import SimulationSettings
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent as E
from batsim_google.trace.span import last_event_time

LENGTH = 600.0


def _trace(folder: Path) -> Path:
    """Three 600 s windows (and a last piece of 150 s): quiet tasks, a giant job of 150 tasks at
    900 s that waited 40 s, free-tier tasks evicted at 1,500 s."""
    rows = []
    for job in range(30):  # quiet: one task every 60 s, 1 s wait, 100 s run
        t = 5.0 + 60 * job
        rows += [(t, job + 1, 0, E.SUBMIT, 2), (t + 1, job + 1, 0, E.SCHEDULE, 2), (t + 101, job + 1, 0, E.FINISH, 2)]
    for task in range(150):
        rows += [(900.0, 100, task, E.SUBMIT, 2), (940.0 + task / 100, 100, task, E.SCHEDULE, 2)]
        rows += [(1100.0, 100, task, E.FINISH, 2)]
    for task in range(20):
        rows += [(1300.0, 200, task, E.SUBMIT, 0), (1302.0, 200, task, E.SCHEDULE, 0)]
        rows += [(1500.0, 200, task, E.EVICT, 0), (1500.0, 200, task, E.SUBMIT, 0)]
        rows += [(1503.0, 200, task, E.SCHEDULE, 0), (1900.0, 200, task, E.FINISH, 0)]
    rows += [(1950.0, 300, 0, E.SUBMIT, 2)]
    rows.sort(key=lambda row: (row[0], row[1], row[2]))
    lines = [event(seconds_us(t), j, i, c, machine=str(500 + i), priority=p) for t, j, i, c, p in rows]
    write_part(folder / "trace", lines)
    return folder / "trace"


def fake_validate(trace, window, output, policy, **options) -> dict:
    """Stands in for validate_replay (same signature): the window's real attempts against a
    simulated side where every attempt submitted in the window waits 2 s. Fails with Batsim's
    error when ``fail-START`` is beside the trace; logs each call in ``calls.log`` there."""
    start, end = window.start, window.end
    beside = Path(trace).parent
    with (beside / "calls.log").open("a") as log:
        log.write(f"{start:g}\n")
    if (beside / f"fail-{start:g}").exists():
        raise SimulationError("batsim ended with exit code 1 (fake)")
    real = real_attempts([trace], start, end, RowAccount())
    options["say"](f"{real.height} real attempts")
    later = (pl.col("submit") >= 0) & pl.col("start").is_not_null()
    simulated = real.with_columns(pl.when(later).then(pl.col("submit") + 2.0).otherwise(pl.col("start")).alias("start"))
    Path(output).mkdir(parents=True)
    for name, table in (("real", real), ("simulated", simulated)):
        table.write_parquet(Path(output) / ATTEMPTS[name])
    report = {**compare(real, simulated, end - start), "bursts": bursts(real, simulated, end - start)}
    report["eviction_p_values"] = eviction_p_values(report)
    report["targets"] = targets(report)
    return report


def _calls(trace: Path) -> list[str]:
    return (trace.parent / "calls.log").read_text().split()


def _sweep(trace, output, say=lambda line: None, retry_failed=False, policy=PolicyConfig()):
    return sweep_windows(
        trace,
        output,
        SweepWindows(LENGTH, retry_failed=retry_failed),
        policy,
        settings=SimulationSettings(say=say),
        jobs=1,
        replay=partial(replay_window, validate=fake_validate),
    )


def test_the_windows_are_the_whole_ones_of_the_span():
    assert windows((0.0, 2000.0), 600.0) == [(0.0, 600.0), (600.0, 1200.0), (1200.0, 1800.0)]
    assert windows((3600.0, 7200.0), 3600.0) == [(3600.0, 7200.0)]
    assert windows((0.0, 500.0), 600.0) == []


def test_the_span_ends_at_the_traces_last_event(tmp_path):
    assert last_event_time(_trace(tmp_path)) == pytest.approx(1950.0)


def test_a_sweep_tabulates_every_window_and_group_and_target(tmp_path):
    trace = _trace(tmp_path)
    lines = []
    result = _sweep(trace, tmp_path / "out", say=lines.append)
    assert [(w.start, w.end) for w in result.windows] == [(0, 600), (600, 1200), (1200, 1800)]
    assert "left out: [1800, 1950) s, shorter than a window" in lines
    assert result.statuses == ["done", "done", "done"]
    table = pl.read_csv(tmp_path / "out" / "sweep.csv")
    assert tuple(table.columns) == COLUMNS
    # the giant job's window: normal has 160 real attempts (10 waited 1 s, the giant job's 150 40-41.5 s)
    middle = table.filter(pl.col("start") == 600)
    normal = {row["target"]: row for row in middle.filter(pl.col("group") == "normal").iter_rows(named=True)}
    assert set(normal) == {"median_wait", "share_started_60s", "evictions", "never_started"}
    assert normal["median_wait"]["real"] == pytest.approx(40.695) and normal["median_wait"]["simulated"] == 2.0
    assert normal["median_wait"]["met"] is False
    largest = middle.filter(pl.col("group") == "largest_job").row(0, named=True)
    assert (largest["real"], largest["simulated"], largest["met"]) == (pytest.approx(40.745), 2.0, False)
    cpu = middle.filter(pl.col("group") == "cpu_in_use")
    assert cpu["target"].to_list() == ["mean", "worst_minute"] and cpu["real"].to_list() == [1.0, 1.0]
    # the quiet windows hold no group of 100 real attempts: only the CPU in use is checked
    assert set(table.filter(pl.col("start") == 0)["group"]) == {"cpu_in_use"}
    document = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert document["rows"] == table.to_dicts()
    assert document["summary"] == {
        "windows": 3,
        "done": 3,
        "reused": 0,
        "failed": 0,
        "targets_checked": table.height,
        "targets_met": int(table["met"].sum()),
    }
    third = document["windows"][2]["bursts"]["evictions_per_minute"]
    assert third["real"][5] == 20 and sum(third["real"]) == 20  # the 20 evictions of minute 25
    assert result.summary() == (
        f"3 windows (3 replayed, 0 reused, 0 failed): targets met {int(table['met'].sum())} of {table.height} checked"
    )
    for name in ("sweep_evictions.png", "sweep_largest_jobs.png"):
        assert (tmp_path / "out" / name).stat().st_size > 10_000
    # what the window's validation said is kept beside its report
    marker = json.loads((tmp_path / "out" / WINDOWS / "600-1200" / MARKER).read_text())
    assert (
        marker["log"] == ["161 real attempts"]
    )  # 150 of the giant job, 10 quiet tasks, 1 from before and marker["report"]["targets"] == document["windows"][1]["targets"]


def test_a_sweep_resumes_and_records_a_failed_window_with_its_reason(tmp_path):
    trace = _trace(tmp_path)
    (tmp_path / "fail-600").touch()
    first = _sweep(trace, tmp_path / "out")
    assert first.statuses == ["done", "failed", "done"]
    assert sorted(_calls(trace)) == ["0", "1200", "600"]
    failed = json.loads((tmp_path / "out" / WINDOWS / "600-1200" / MARKER).read_text())
    assert failed["error"] == "batsim ended with exit code 1 (fake)"
    with (tmp_path / "out" / "sweep.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row["start"] == "600.0"]
    assert len(rows) == 1 and rows[0]["status"] == "failed"
    assert rows[0]["error"] == "batsim ended with exit code 1 (fake)"
    # again: nothing is rerun, the failure is reported as recorded
    second = _sweep(trace, tmp_path / "out")
    assert second.statuses == ["reused", "failed", "reused"] and len(_calls(trace)) == 3
    assert second.rows == first.rows[:0] + [
        dict(row, status="reused") if row["status"] == "done" else row for row in first.rows
    ]
    # asked to, the failed window is replayed, and only it
    (tmp_path / "fail-600").unlink()
    third = _sweep(trace, tmp_path / "out", retry_failed=True)
    assert third.statuses == ["reused", "done", "reused"] and _calls(trace)[3:] == ["600"]
    # other options: another fingerprint, every window again
    fourth = _sweep(trace, tmp_path / "out", policy=PolicyConfig(cpu_overcommit=1.5))
    assert fourth.statuses == ["done", "done", "done"] and len(_calls(trace)) == 7


def test_a_span_without_a_whole_window_is_refused(tmp_path):
    trace = _trace(tmp_path)
    with pytest.raises(ParameterError, match=r"\[0, 1950\) s holds no whole window of --windows 3600 s"):
        sweep_windows(trace, tmp_path / "out", SweepWindows(3600.0))
    with pytest.raises(ParameterError, match="--horizon is the window's length here"):
        sweep_windows(trace, tmp_path / "out", SweepWindows(600.0), PolicyConfig(horizon=100.0))
    assert not (tmp_path / "out").exists()
