"""Task lifecycles: synthetic sequences, impossible rows, chunking, and the real parts."""

from __future__ import annotations

import csv
import gzip
import math

import numpy as np
import polars as pl
import pytest
from trace_files import event, seconds_us, write_part

import batsim_google.trace.held as held
import batsim_google.trace.rebuild as rebuilding
from batsim_google.trace.rebuild import rebuild
from batsim_google.trace.row_accounting import RowAccount, TraceError
from batsim_google.trace.schema import TaskEvent as E


def _run(sources, **options) -> tuple[pl.DataFrame, pl.DataFrame, RowAccount]:
    account = options.pop("account", None) or RowAccount()
    attempts, tasks = [], []
    for batch in rebuild(sources, account, **options):
        attempts.append(batch.attempts)
        tasks.append(batch.tasks)
    return pl.concat(attempts), pl.concat(tasks), account


STORY = [  # (seconds, job, task, event, machine)
    (0, 1, 0, E.SUBMIT, ""),
    (0, 1, 0, E.SCHEDULE, "5"),  # running when the trace starts
    (1, 2, 0, E.SUBMIT, ""),
    (3, 2, 0, E.SCHEDULE, "6"),
    (4, 2, 0, E.EVICT, "6"),
    (4, 2, 0, E.SUBMIT, ""),  # evicted, resubmitted at once
    (9, 2, 0, E.SCHEDULE, "8"),
    (10, 2, 0, E.UPDATE_RUNNING, "8"),
    (15, 2, 0, E.FINISH, "8"),
    (20, 1, 0, E.KILL, "5"),
    (21, 3, 0, E.SUBMIT, ""),
    (22, 3, 0, E.KILL, ""),  # killed while pending
    (30, 4, 0, E.SUBMIT, ""),
    (31, 4, 0, E.SCHEDULE, "9"),  # still running at the end
]


def _story_lines() -> list[str]:
    lines = []
    for second, job, task, code, machine in STORY:
        time = 0 if second == 0 else seconds_us(second)
        cpu = {E.UPDATE_RUNNING: "0.5", E.FINISH: ""}.get(code, "0.25")  # FINISH: request not given
        lines.append(event(time, job, task, int(code), machine=machine, cpu=cpu))
    return lines


def test_attempts_and_tasks_of_a_story(tmp_path):
    write_part(tmp_path, _story_lines())
    attempts, tasks, account = _run([tmp_path])
    assert account.read == account.used == len(STORY) and account.balanced
    rows = {(a["job_id"], a["attempt"]): a for a in attempts.iter_rows(named=True)}
    assert set(rows) == {(1, 0), (2, 0), (2, 1), (3, 0), (4, 0)}
    first = rows[(1, 0)]  # submitted and scheduled before the window: times -inf, makespan unknown
    assert first["submit"] == -math.inf and first["schedule"] == -math.inf and first["end"] == 20
    assert first["end_event"] == E.KILL and first["makespan"] is None and first["wait"] is None
    evicted, finished = rows[(2, 0)], rows[(2, 1)]
    assert (evicted["submit"], evicted["schedule"], evicted["end"], evicted["end_event"]) == (1, 3, 4, E.EVICT)
    assert evicted["wait"] == 2 and evicted["makespan"] == 1 and evicted["machine_id"] == 6
    assert (finished["submit"], finished["schedule"], finished["end"], finished["end_event"]) == (4, 9, 15, E.FINISH)
    assert finished["makespan"] == 6 and finished["updates"] == 1 and finished["cpu_request"] == 0.5
    assert finished["events"] == 4 and finished["machine_id"] == 8
    pending_kill = rows[(3, 0)]
    assert pending_kill["schedule"] is None and pending_kill["makespan"] is None and pending_kill["end_event"] == E.KILL
    still_open = rows[(4, 0)]
    assert still_open["end"] is None and still_open["end_event"] is None and still_open["schedule"] == 31
    by_job = {t["job_id"]: t for t in tasks.iter_rows(named=True)}
    assert {job: (t["task_events"], t["attempts"]) for job, t in by_job.items()} == {
        1: (3, 1),
        2: (7, 2),
        3: (2, 1),
        4: (2, 1),
    }
    assert by_job[2]["first_submit"] == 1 and by_job[2]["submit"] == 4 and by_job[2]["end_event"] == E.FINISH
    assert by_job[4]["end_event"] is None  # reported open, not dropped


def test_chunking_and_part_boundaries_do_not_change_the_result(tmp_path, monkeypatch):
    lines = _story_lines()
    write_part(tmp_path / "one", lines)
    for part, cut in enumerate([(0, 5), (5, 9), (9, len(lines))]):
        write_part(tmp_path / "three", lines[cut[0] : cut[1]], part=part)
    whole = _run([tmp_path / "one"])
    monkeypatch.setattr(rebuilding, "CHUNK_ROWS", 2)
    pieces = _run([tmp_path / "three"])
    for a, b in zip(whole[:2], pieces[:2]):
        assert a.sort(["job_id", "task_index", "attempt"]).equals(b.sort(["job_id", "task_index", "attempt"]))


IMPOSSIBLE = [
    (1, 1, 0, E.SCHEDULE, "task began before the input: SCHEDULE without its SUBMIT"),
    (2, 2, 0, E.SUBMIT, None),
    (3, 2, 0, E.SUBMIT, "impossible lifecycle: SUBMIT of a pending task"),
    (4, 2, 0, E.FINISH, "impossible lifecycle: FINISH of a pending task"),
    (5, 2, 0, E.SCHEDULE, None),
    (6, 2, 0, E.UPDATE_PENDING, "impossible lifecycle: UPDATE_PENDING of a running task"),
    (7, 2, 0, E.FINISH, None),
    (8, 2, 0, E.KILL, "impossible lifecycle: KILL of a dead task"),
]


def test_impossible_rows_are_skipped_counted_or_reported(tmp_path):
    lines = [event(seconds_us(t), job, task, int(code)) for t, job, task, code, _ in IMPOSSIBLE]
    path = write_part(tmp_path, lines)
    attempts, tasks, account = _run([tmp_path])
    expected = {reason: 1 for *_, reason in IMPOSSIBLE if reason}
    assert account.skipped == expected and account.used == 3 and account.balanced
    (attempt,) = attempts.iter_rows(named=True)
    assert (attempt["submit"], attempt["schedule"], attempt["end"], attempt["end_event"]) == (2, 5, 7, E.FINISH)
    first_bad = next(i for i, row in enumerate(IMPOSSIBLE, start=1) if row[-1])
    with pytest.raises(
        TraceError, match=rf"{path}:{first_bad}: task began before the input: SCHEDULE without its SUBMIT"
    ):
        _run([tmp_path], account=RowAccount(strict=True))


def test_a_chunk_with_only_impossible_rows(tmp_path):
    write_part(tmp_path, [event(seconds_us(1), 1, 0, E.SUBMIT)], part=0)
    write_part(tmp_path, [event(seconds_us(2), 1, 0, E.SUBMIT), event(seconds_us(3), 2, 0, E.FINISH)], part=1)
    write_part(tmp_path, [event(seconds_us(4), 1, 0, E.SCHEDULE), event(seconds_us(5), 1, 0, E.FINISH)], part=2)
    attempts, tasks, account = _run([tmp_path])
    assert account.used == 3 and account.total_skipped == 2 and account.balanced
    assert attempts.select("submit", "schedule", "end").rows() == [(1, 4, 5)] and tasks["task_events"].to_list() == [3]


@pytest.mark.parametrize("split_at", [None, 3, 5])
def test_a_task_quiet_longer_than_the_grace_is_reported_and_forgotten(tmp_path, split_at):
    lines = [
        event(seconds_us(1), 1, 0, E.SUBMIT),
        event(seconds_us(2), 1, 0, E.SCHEDULE),
        event(seconds_us(3), 1, 0, E.FAIL),
        event(seconds_us(500), 1, 0, E.SUBMIT),
        event(seconds_us(501), 1, 0, E.SCHEDULE),
        event(seconds_us(502), 1, 0, E.FINISH),
    ]
    if split_at:  # the next part starts the second life (3) or continues it (5)
        write_part(tmp_path, lines[:split_at], part=0)
        write_part(tmp_path, lines[split_at:], part=1)
    else:
        write_part(tmp_path, lines)
    attempts, tasks, _ = _run([tmp_path], grace=1000)
    assert tasks["task_events"].to_list() == [6] and tasks["attempts"].to_list() == [2]
    assert attempts["attempt"].to_list() == [0, 1]
    attempts, tasks, _ = _run([tmp_path], grace=100)
    assert tasks.sort("first_submit").select("task_events", "attempts", "end_event").rows() == [
        (3, 1, E.FAIL),
        (3, 1, E.FINISH),
    ]
    assert attempts.sort("submit").select("attempt", "end_event").rows() == [(0, E.FAIL), (0, E.FINISH)]


# --- the real parts -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(google_2011, trace_reference):
    attempts, tasks, account = _run([google_2011], grace=1e9)
    return attempts, tasks, account, trace_reference


def test_real_parts_match_the_row_by_row_reference(real):
    attempts, tasks, account, (reference, task_info) = real
    assert account.balanced and not account.skipped
    ended = attempts.filter(pl.col("end_event").is_not_null())
    assert ended.height == len(reference)
    ours = ended.select("end_event").to_series().value_counts().sort("end_event").rows()
    theirs = pl.Series("end_event", [a[4] for a in reference], dtype=pl.Int8).value_counts().sort("end_event").rows()
    assert ours == theirs
    ours_events = dict(
        zip(zip(tasks["job_id"].to_list(), tasks["task_index"].to_list()), tasks["task_events"].to_list())
    )
    assert ours_events == task_info["events"]
    still_open = sum(1 for s in task_info["state"].values() if s != "dead")
    assert attempts["end_event"].null_count() == still_open == tasks["end_event"].null_count()


def test_real_lifecycles_are_consistent(real):
    attempts = real[0]
    submit, schedule, end = (attempts[c].fill_null(np.nan).to_numpy() for c in ("submit", "schedule", "end"))
    known = ~np.isnan(schedule)
    assert np.all(schedule[known] >= submit[known])
    both = known & ~np.isnan(end)
    assert np.all(end[both] >= schedule[both])
    ran = attempts.filter(pl.col("makespan").is_not_null())
    assert (ran["makespan"] >= 0).all() and ran.height > 50_000
    assert (ran["makespan"] - (ran["end"] - ran["schedule"])).abs().max() < 1e-6


def test_tasks_spanning_part_000_and_001_are_joined(real, google_2011):
    attempts = real[0]
    parts = sorted((google_2011 / "task_events").glob("part-*.csv.gz"))
    submitted, resubmitted, ended, last_time = set(), set(), {}, 0.0
    for number, path in enumerate(parts[:2]):
        with gzip.open(path, "rt", newline="") as handle:
            for row in csv.reader(handle):
                key, code, time = (int(row[2]), int(row[3])), int(row[5]), int(row[0]) / 1e6 - 600
                if number == 0:
                    last_time = max(last_time, time)
                    if code == E.SUBMIT and row[0] != "0":
                        submitted.add(key)
                elif code == E.SUBMIT:
                    resubmitted.add(key)
                elif code == E.FINISH and key not in resubmitted:
                    ended[key] = time
    spanning = (submitted & set(ended)) - resubmitted
    assert len(spanning) > 100
    joined = attempts.filter(pl.col("end_event") == E.FINISH).select("job_id", "task_index", "submit", "end")
    joined = {(j, t): (s, e) for j, t, s, e in joined.iter_rows()}
    for key in spanning:
        submit, end = joined[key]
        assert submit <= last_time < end and end == pytest.approx(ended[key], abs=1e-6)


def _batches(sources, **options) -> tuple[list, RowAccount]:
    account = options.pop("account", None) or RowAccount()
    return list(rebuild(sources, account, **options)), account


def _same_batches(one: list, other: list) -> None:
    assert len(one) == len(other)
    for a, b in zip(one, other):
        assert a.attempts.equals(b.attempts) and a.tasks.equals(b.tasks)
        assert np.array_equal(a.submits, b.submits) and np.array_equal(a.new_task, b.new_task)
        assert np.array_equal(a.synthesized_submit, b.synthesized_submit)


@pytest.mark.parametrize("workers", [2, 3])
def test_reading_ahead_gives_the_same_batches_and_accounts(google_2011, workers):
    alone, account = _batches([google_2011], grace=600.0)
    ahead, account_ahead = _batches([google_2011], grace=600.0, workers=workers)
    _same_batches(alone, ahead)
    assert account_ahead == account and account.balanced


def test_reading_ahead_keeps_bad_rows_accounts_strict_errors_and_early_stops(tmp_path):
    first = [event(seconds_us(t), 1, t, E.SUBMIT) for t in range(6)] + [event(seconds_us(7), 2, 0, E.FINISH)]
    second = [event(seconds_us(10 + t), 1, t, E.SCHEDULE) for t in range(6)] + ["1,2,3"]  # wrong column count
    first_path = write_part(tmp_path / "trace", first, part=0)
    write_part(tmp_path / "trace", second, part=1)
    write_part(tmp_path / "bad", second[-1:], part=1)
    for workers in (1, 2):
        batches, account = _batches([tmp_path / "trace"], workers=workers)
        assert account.read == 14 and account.used == 12 and account.balanced
        assert account.skipped == {
            "wrong column count": 1,
            "task began before the input: FINISH without its SUBMIT": 1,
        }
        # the rebuild's error in part 0 comes first, though the reading thread may be past part 1's
        with pytest.raises(TraceError, match=rf"{first_path}:7: task began before the input: FINISH"):
            _batches([tmp_path / "trace"], workers=workers, account=RowAccount(strict=True))
        with pytest.raises(TraceError, match=rf"{tmp_path / 'bad'}.*:1: wrong column count"):
            _batches([tmp_path / "bad"], workers=workers, account=RowAccount(strict=True))
        account = RowAccount()
        stopped = list(rebuild([tmp_path / "trace"], account, workers=workers, until=lambda lifecycles: True))
        assert len(stopped) == 2 and account.read == 7 and account.balanced  # part 1 read ahead, not counted


def test_ids_too_large_for_one_integer_key(tmp_path):
    lines = _story_lines()
    write_part(tmp_path / "small", lines)
    big = 2**62  # IDs this large need (job, task) pair keys: job 2 gets them, from part 1 on
    renamed = []
    for line in lines:
        fields = line.split(",")
        if fields[2] == "2":
            fields[2], fields[3] = str(2 + big), str(int(fields[3]) + big)
        renamed.append(",".join(fields))
    write_part(tmp_path / "big", renamed[:1], part=0)  # job 1 only: one-integer keys, job 1 held
    write_part(tmp_path / "big", renamed[1:], part=1)
    small, big_ids = _run([tmp_path / "small"]), _run([tmp_path / "big"])
    for ours, theirs in zip(small[:2], big_ids[:2]):
        assert theirs["job_id"].max() == 2 + big
        theirs = theirs.with_columns(
            pl.when(pl.col("job_id") == 2 + big).then(2).otherwise(pl.col("job_id")).alias("job_id"),
            pl.when(pl.col("job_id") == 2 + big)
            .then(pl.col("task_index") - big)
            .otherwise(pl.col("task_index"))
            .alias("task_index"),
        )
        assert ours.sort(["job_id", "task_index", "attempt"]).equals(theirs.sort(["job_id", "task_index", "attempt"]))


def test_an_attribute_is_its_last_value_seen(tmp_path):
    lines = [
        event(seconds_us(1), 1, 0, E.SUBMIT, user=""),
        event(seconds_us(2), 1, 0, E.SCHEDULE, user="alice"),
        event(seconds_us(3), 1, 0, E.FINISH, user=""),
        event(seconds_us(4), 2, 0, E.SUBMIT, user=""),
        event(seconds_us(5), 2, 0, E.KILL, user=""),
    ]
    write_part(tmp_path, lines)
    attempts, tasks, _ = _run([tmp_path])
    assert dict(attempts.select("job_id", "user").iter_rows()) == {1: "alice", 2: None}


def test_held_records_are_compacted_without_changing_the_results(google_2011, monkeypatch):
    monkeypatch.setattr(rebuilding, "CHUNK_ROWS", 1 << 15)
    expected, _ = _batches([google_2011], grace=60.0)
    monkeypatch.setattr(held, "_MIN_COMPACT", 1)  # compact as soon as dead rows outnumber live ones
    sizes = []
    add = held.HeldTasks.add

    def add_and_measure(self, records, rows=None):
        add(self, records, rows)
        sizes.append((len(self.column("state")), len(self)))  # (rows, live records)

    monkeypatch.setattr(held.HeldTasks, "add", add_and_measure)
    compacted, _ = _batches([google_2011], grace=60.0)
    _same_batches(expected, compacted)
    assert all(rows <= 2 * live + 1 for rows, live in sizes)
    assert any(later[0] < earlier[0] for earlier, later in zip(sizes, sizes[1:]))  # it did compact


def test_new_tasks_are_first_submissions_and_resubmissions_after_the_grace(tmp_path):
    lines = [
        event(seconds_us(1), 1, 0, E.SUBMIT),
        event(seconds_us(2), 1, 1, E.SUBMIT),
        event(seconds_us(3), 1, 0, E.SCHEDULE),
        event(seconds_us(4), 1, 0, E.FAIL),
        event(seconds_us(5), 1, 0, E.SUBMIT),
        event(seconds_us(6), 1, 0, E.KILL),
        event(seconds_us(600), 1, 0, E.SUBMIT),
    ]
    write_part(tmp_path, lines)
    batches, _ = _batches([tmp_path], grace=100.0)
    submits = np.concatenate([batch.submits for batch in batches])
    new_task = np.concatenate([batch.new_task for batch in batches])
    assert submits.tolist() == [1, 2, 5, 600] and new_task.tolist() == [True, True, False, True]


def test_rows_of_the_same_time_are_taken_in_the_order_their_lifecycle_allows(tmp_path):
    path = write_part(
        tmp_path,
        [
            event(seconds_us(1), 1, 0, E.SCHEDULE),
            event(seconds_us(1), 1, 0, E.SUBMIT),  # written the other way round
            event(seconds_us(2), 2, 0, E.SUBMIT),
            event(seconds_us(3), 3, 0, E.SUBMIT),
            event(seconds_us(4), 2, 0, E.FINISH),
            event(seconds_us(4), 2, 0, E.SCHEDULE),  # scheduled and done at once
            event(seconds_us(5), 1, 0, E.FINISH),
            event(seconds_us(6), 3, 0, E.FINISH),
            event(seconds_us(6), 3, 0, E.UPDATE_RUNNING),  # no order is possible
        ],
    )
    attempts, tasks, account = _run([tmp_path])
    times = {row[0]: row[1:] for row in attempts.select("job_id", "submit", "schedule", "end", "events").rows()}
    assert times[1] == (1, 1, 5, 3) and times[2] == (2, 4, 4, 3)
    assert (
        account.skipped
        == {
            "impossible lifecycle: FINISH of a pending task": 1,
            "impossible lifecycle: UPDATE_RUNNING of a pending task": 1,
        }
        and account.used == 7
    )
    assert account.notes == [
        f"{path}: 2 pair(s) of rows of a task with the same time taken in the order "
        "their lifecycle allows (first: lines 1 and 2)"
    ]
    assert "note: " in account.summary()
    write_part(tmp_path / "good", [event(seconds_us(1), 1, 0, E.SCHEDULE), event(seconds_us(1), 1, 0, E.SUBMIT)])
    _run([tmp_path / "good"], account=RowAccount(strict=True))  # a note is no error
