"""The paper's tables on the real parts against an independent computation; streaming helpers."""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.trace.rebuild import rebuild
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent as E
from batsim_google.trace.stats import LogHistogram, Moments, TraceStats
from batsim_google.trace.stats_render import render_text

GROUP_OF = {
    p: g
    for g, ps in {"free": (0, 1), "normal": range(2, 9), "production": (9,), "monitoring": (10, 11)}.items()
    for p in ps
}


@pytest.fixture(scope="module")
def tables(google_2011):
    stats = TraceStats()
    account = RowAccount()
    for batch in rebuild([google_2011], account, grace=1e9):
        stats.update(batch)
    assert account.balanced
    return stats.tables()


@pytest.fixture(scope="module")
def three_event_tasks(trace_reference):
    """(end event, priority, class, makespan, schedule, end) of each task with 3 events, by the
    reference (schedule None: never scheduled)."""
    attempts, tasks = trace_reference
    by_task = {}
    for key, _, schedule, end, code, priority, klass in attempts:
        makespan = end - schedule if schedule is not None else math.nan
        by_task.setdefault(key, []).append((code, priority, klass, makespan, schedule, end))
    return {key: by_task.get(key, [None])[-1] for key, count in tasks["events"].items() if count == 3}


def test_table1_events_per_task(tables, trace_reference):
    counts = Counter(min(n, 9) for n in trace_reference[1]["events"].values())
    table = tables["table1_events_per_task"]
    assert table["tasks"] == [counts[n] for n in range(1, 10)]
    assert table["total"] == len(trace_reference[1]["events"])
    assert table["open_at_end"] == sum(s != "dead" for s in trace_reference[1]["state"].values())


def test_table2_end_of_three_event_tasks(tables, three_event_tasks):
    ends = Counter(E(t[0]).name.capitalize() if t else "open" for t in three_event_tasks.values())
    table = tables["table2_end_of_three_event_tasks"]
    assert dict(zip(table["event"], table["tasks"])) == {name: ends[name] for name in table["event"]}
    assert table["total"] == len(three_event_tasks) and abs(sum(table["percent"]) - 100) < 1e-9


def test_tables_3_to_5_classes_priorities_groups(tables, three_event_tasks):
    modeled = [t for t in three_event_tasks.values() if t and t[0] in (E.FINISH, E.KILL) and t[4] is not None]
    assert tables["table3_scheduling_class"]["tasks"] == [sum(t[2] == c for t in modeled) for c in range(4)]
    assert tables["table4_priority"]["tasks"] == [sum(t[1] == p for t in modeled) for p in range(12)]
    groups = Counter(GROUP_OF[t[1]] for t in modeled)
    table5 = tables["table5_priority_group"]
    assert table5["tasks"] == [groups[g] for g in table5["group"]]


@pytest.mark.parametrize(("key", "code"), [("table6_makespan_finish", E.FINISH), ("table7_makespan_kill", E.KILL)])
def test_tables_6_and_7_makespans(tables, three_event_tasks, key, code):
    chosen = [t for t in three_event_tasks.values() if t and t[0] == code and t[4] is not None]
    table = tables[key]
    before = sum(t[4] == -math.inf for t in chosen)
    after = sum(t[4] != -math.inf and t[5] == math.inf for t in chosen)
    assert table["censored"] == {"scheduled_before_window": before, "ended_after_window": after}
    assert before + after == sum(not np.isfinite(t[3]) for t in chosen) and before > 1000
    for group in ("free", "normal", "production", "monitoring", "all"):
        values = np.array([t[3] for t in chosen if np.isfinite(t[3]) and group in ("all", GROUP_OF[t[1]])])
        stats = table[group]
        assert stats["count"] == len(values)
        if len(values) > 1:
            assert stats["mean"] == pytest.approx(values.mean(), rel=1e-9)
            assert stats["std"] == pytest.approx(values.std(ddof=1), rel=1e-6)
            assert stats["median"] == pytest.approx(np.median(values), rel=0.003)


def test_interarrival_mean(tables, google_2011):
    times, new_tasks, seen = [], [], set()
    for path in sorted((google_2011 / "task_events").glob("part-*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            for row in csv.reader(handle):
                key = (row[2], row[3])
                if row[5] == "0" and row[0] != "0":
                    times.append(int(row[0]))
                    if key not in seen:  # a task's first event (grace 1e9: no task record is closed)
                        new_tasks.append(int(row[0]))
                seen.add(key)
    for kind, submitted in (("submissions", times), ("new_tasks", new_tasks)):
        gaps = np.diff(np.array(submitted)) / 1e6
        arrivals = tables["interarrival"][kind]
        assert arrivals["count"] == len(gaps) > 1000 and arrivals["mean"] == pytest.approx(gaps.mean(), rel=1e-9)


def test_log_histogram_quantiles_are_exact_to_the_bin():
    values = np.random.default_rng(7).lognormal(6.25, 1.42, size=200_000)
    histogram = LogHistogram()
    for part in np.array_split(values, 7):
        histogram.add(part)
    for q in (0.1, 0.5, 0.9, 0.99):
        assert histogram.quantile(q) == pytest.approx(np.quantile(values, q), rel=0.0025)
    x, cdf = histogram.cdf()
    assert cdf[-1] == pytest.approx(1.0) and np.all(np.diff(cdf) >= 0)
    assert np.interp(np.median(values), x, cdf) == pytest.approx(0.5, abs=0.003)


def test_moments_merge_batches_exactly():
    values = np.random.default_rng(3).pareto(1.5, size=50_001) * 1e4 + 1e6
    moments = Moments()
    for part in np.array_split(values, 13):
        moments.add(part)
    assert moments.count == len(values)
    assert moments.mean == pytest.approx(values.mean(), rel=1e-12)
    assert moments.std == pytest.approx(values.std(ddof=1), rel=1e-9)


def test_stats_command_writes_tables_json_csv_and_plots(tmp_path):
    lines = []
    for task in range(40):  # finished tasks of 10 + task seconds, and killed services
        start = task * 2
        code = E.KILL if task % 4 == 0 else E.FINISH
        lines += [
            (seconds_us(start), task, E.SUBMIT),
            (seconds_us(start + 1), task, E.SCHEDULE),
            (seconds_us(start + 11 + task), task, code),
        ]
    lines.sort()
    write_part(tmp_path / "trace", [event(t, 1, task, int(code), priority=task % 12) for t, task, code in lines])
    result = CliRunner().invoke(
        main,
        [
            "trace",
            "stats",
            str(tmp_path / "trace"),
            "--json",
            str(tmp_path / "s.json"),
            "--csv",
            str(tmp_path / "s.csv"),
            "--plots",
            str(tmp_path / "plots"),
            "--bin",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Table 7." in result.output
    assert result.output.strip().splitlines()[-1] == "rows read 120 = used 120 + skipped 0"
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["table1_events_per_task"]["tasks"][2] == 40
    finish = data["table6_makespan_finish"]["all"]
    expected = [10 + t for t in range(40) if t % 4]
    assert finish["count"] == 30 and finish["mean"] == pytest.approx(np.mean(expected))
    assert data["table7_makespan_kill"]["monitoring"]["mean"] is None  # no task: null, not NaN
    assert data["rows"] == {"read": 120, "used": 120, "skipped": {}, "incidents": []}
    rows = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert {"table": "table1_events_per_task", "row": "3", "column": "tasks", "value": "40"} in rows
    pngs = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert pngs == [
        "fig3_interarrival_cdf.png",
        "fig5_running_finish.png",
        "fig6_running_kill.png",
        "fig7_makespan_finish_cdf.png",
        "fig8_makespan_kill_cdf.png",
    ]
    assert all((tmp_path / "plots" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_stats_command_strict_stops_with_file_and_line(tmp_path):
    path = write_part(tmp_path, [event(seconds_us(1), 1, 0, E.SUBMIT), "not,a,row"])
    result = CliRunner().invoke(main, ["trace", "stats", str(tmp_path), "--strict"])
    assert result.exit_code == 2 and f"{path}:2: wrong column count" in result.output
    result = CliRunner().invoke(main, ["trace", "stats", str(tmp_path)])
    assert result.exit_code == 0
    assert "rows read 2 = used 1 + skipped 1 (wrong column count: 1)" in result.output


AFTER_WINDOW_US = 2**63 - 1


def _stats(folder, **options) -> dict:
    stats = TraceStats(bin_width=5.0, **options)
    account = RowAccount(strict=True)
    for batch in rebuild([folder], account):
        stats.update(batch)
    return stats


def test_the_papers_population_is_scheduled_and_unknown_makespans_are_counted_by_cause(tmp_path):
    write_part(
        tmp_path,
        [
            event(0, 1, 0, E.SUBMIT),
            event(0, 1, 0, E.SCHEDULE),  # before the window
            event(seconds_us(1), 2, 0, E.SUBMIT),
            event(seconds_us(2), 3, 0, E.SUBMIT),
            event(seconds_us(3), 3, 0, E.SCHEDULE),
            event(seconds_us(5), 2, 0, E.UPDATE_PENDING),
            event(seconds_us(20), 1, 0, E.FINISH),
            event(seconds_us(30), 2, 0, E.KILL),  # never scheduled
            event(AFTER_WINDOW_US, 3, 0, E.KILL),  # after the window
        ],
    )
    stats = _stats(tmp_path)
    tables = stats.tables()
    table2 = tables["table2_end_of_three_event_tasks"]
    assert dict(zip(table2["event"], table2["tasks"]))["Kill"] == 2 and table2["total"] == 3
    assert tables["table3_scheduling_class"]["total"] == 2  # SUBMIT, UPDATE_PENDING, KILL is not the paper's
    assert tables["table6_makespan_finish"]["censored"] == {"scheduled_before_window": 1, "ended_after_window": 0}
    assert tables["table7_makespan_kill"]["censored"] == {"scheduled_before_window": 0, "ended_after_window": 1}
    times, running = stats.running_series("kill")
    assert times[-1] == 30.0 and running.tolist() == [0, 1, 1, 1, 1, 1, 1]  # scheduled at 3 s, to the last time seen
    assert "makespan unknown: 0 scheduled before the window, 1 ended after it" in render_text(tables)


def test_dropping_synthesized_records_leaves_out_their_tasks_and_nothing_else(google_2011):
    kept, dropped = _stats(google_2011), _stats(google_2011, synthesized=False)
    full, without = kept.tables(), dropped.tables()
    # part 00000's 291 synthesized SUBMITs (time 0) belong to 291 tasks; their other rows still
    # carry those tasks' states: no impossible lifecycle, no task split (the strict account passed)
    assert without["table1_events_per_task"]["synthesized_tasks_dropped"] == 291
    assert without["table1_events_per_task"]["total"] == full["table1_events_per_task"]["total"] - 291
    assert "synthesized_tasks_dropped" not in full["table1_events_per_task"]
    assert full["interarrival"] == without["interarrival"]  # synthesized submissions are at time 0


def test_dropped_synthesized_submissions_leave_the_inter_arrivals(tmp_path):
    write_part(
        tmp_path,
        [
            event(seconds_us(1), 1, 0, E.SUBMIT),
            event(seconds_us(2), 2, 0, E.SUBMIT, missing="2"),
            event(seconds_us(4), 3, 0, E.SUBMIT),
        ],
    )
    kept, dropped = _stats(tmp_path).tables(), _stats(tmp_path, synthesized=False).tables()
    assert kept["interarrival"]["submissions"] == {"count": 2, "mean": 1.5}
    assert dropped["interarrival"]["submissions"] == {"count": 1, "mean": 3.0}


def test_a_bin_too_small_for_the_span_is_refused_naming_bin(tmp_path):
    lines = [
        event(seconds_us(10), 1, 0, E.SUBMIT),
        event(seconds_us(20), 1, 0, E.SCHEDULE),
        event(seconds_us(100), 1, 0, E.FINISH),
    ]
    write_part(tmp_path, lines)
    result = CliRunner().invoke(
        main, ["trace", "stats", str(tmp_path), "--plots", str(tmp_path / "d"), "--bin", "1e-6"]
    )
    assert result.exit_code == 2 and "--bin 1e-06: the running-task curves would need more than" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "d").exists()
