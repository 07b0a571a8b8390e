"""Records whose end is not in the input, kept censored at its end by `trace convert`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.trace.convert import Selection, convert_trace
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent as E

#: The window; the input ends at 100 s (its last row).
START, END, INPUT_END = 20.0, 60.0, 100.0


def _trace(folder):
    """Job 1: alive at the start; job 2: submitted in the window; jobs 3, 4: after it."""
    lines = [
        (1, 1, 0, E.SUBMIT),
        (2, 1, 0, E.SCHEDULE),  # running at the start, never ends
        (3, 1, 1, E.SUBMIT),  # pending at the start, never scheduled: left out
        (4, 1, 2, E.SUBMIT),  # pending at the start, scheduled at 30 s, never ends
        (25, 2, 0, E.SUBMIT),
        (27, 2, 0, E.SCHEDULE),  # scheduled in the window, never ends
        (30, 1, 2, E.SCHEDULE),
        (30, 2, 1, E.SUBMIT),  # never scheduled, never ends
        (31, 2, 2, E.SUBMIT),
        (32, 2, 2, E.SCHEDULE),
        (33, 2, 3, E.SUBMIT),
        (34, 2, 4, E.SUBMIT),
        (35, 2, 3, E.KILL),  # killed while pending: ended, never scheduled
        (35, 2, 4, E.SCHEDULE),
        (36, 2, 5, E.SUBMIT),
        (37, 2, 5, E.SCHEDULE),
        (40, 2, 2, E.FINISH),
        (45, 2, 5, E.EVICT),  # not a selected end event
        (50, 2, 4, E.KILL),
        (70, 3, 0, E.SUBMIT),  # after the window
        (100, 4, 0, E.SUBMIT),
    ]
    write_part(folder, [event(seconds_us(time), job, task, code) for time, job, task, code in lines])


def _jobs(path) -> dict:
    data = json.loads(path.read_text())
    return {(job["job_id"], job["task_index"]): job for job in data["jobs"]}, data


def _delay(data: dict, job: dict) -> float:
    return job["walltime"] if job["kind"] == "service" else data["profiles"][job["profile"]]["delay"]


@pytest.fixture
def converted(tmp_path):
    _trace(tmp_path / "trace")
    out = tmp_path / "w.json"
    account = convert_trace(
        [tmp_path / "trace"], out, Selection(start=START, end=END, initial_state=True), RowAccount(), nb_res=8
    )
    return _jobs(out), account


def test_records_whose_end_is_not_in_the_input_last_until_it_and_are_flagged(converted):
    (jobs, data), _ = converted
    expected = {  # key: (subtime, delay, kind, censored, never scheduled, wait)
        (1, 0): (0, INPUT_END - START, "service", 1, 0, 1),  # running: from the start
        (1, 2): (0, INPUT_END - 30, "service", 1, 0, 26),  # pending: from its schedule
        (2, 0): (5, INPUT_END - 27, "service", 1, 0, 2),  # its real wait is known
        (2, 1): (10, INPUT_END - 30, "service", 1, 1, None),  # from its submission
        (2, 2): (11, 8, "task", 0, 0, 1),
        (2, 4): (14, 15, "service", 0, 0, 1),
    }
    assert sorted(jobs) == sorted(expected)
    for key, (subtime, delay, kind, censored, never_scheduled, wait) in expected.items():
        job = jobs[key]
        assert (job["subtime"], _delay(data, job), job["kind"]) == (subtime, delay, kind)
        assert (job["censored"], job["never_scheduled"]) == (censored, never_scheduled)
        assert (job["wait"] is None) if wait is None else job["wait"] == pytest.approx(wait, abs=1e-6)


def test_the_account_adds_up_and_counts_the_censored_apart(converted):
    _, account = converted
    assert account.excluded == {
        "submitted outside the window": 2,  # jobs 3 and 4
        "pending at the start, never scheduled in the input": 1,
        "never scheduled": 1,  # killed while pending: its end is in the input
        "end event not selected": 1,  # evicted
    }
    assert account.records == 11 == account.written + sum(account.excluded.values())
    assert account.written == 6
    assert account.initial == {"running": 1, "pending": 1, "censored": 2}
    assert account.censored == {"scheduled": 1, "never scheduled": 1}
    assert account.to_json()["censored"] == {"scheduled": 1, "never scheduled": 1}
    assert account.summary("attempt").endswith(
        "; initial state (written, submitted at the window start): running 1, pending 1, of which censored at "
        "the input's end 2; submitted in the window and censored at the input's end (written): scheduled 1, "
        "never scheduled 1"
    )


def test_without_kill_the_censored_records_are_left_out_with_the_kill_ended_ones(tmp_path):
    _trace(tmp_path / "trace")
    out = tmp_path / "w.json"
    command = ["trace", "convert", str(tmp_path / "trace"), "-o", str(out), "--start", "20", "--end", "60"]
    result = CliRunner().invoke(main, [*command, "--end-event", "finish"])
    assert result.exit_code == 0, result.output
    jobs, _ = _jobs(out)
    assert list(jobs) == [(2, 2)]  # the only FINISH-ended one
    assert (
        "attempts 11 = written 1 + excluded 10 (still open at the end of the input: 5, end event not selected: 3, "
        "submitted outside the window: 2)" in result.output
    )
    assert "submitted in the window and censored" not in result.output
    assert "rows read 21 = used 21 + skipped 0" in result.output

    result = CliRunner().invoke(main, command)  # kill among the end events, as by default
    assert result.exit_code == 0, result.output
    assert "scheduled 1, never scheduled 1" in result.output and "written 6" in result.output
