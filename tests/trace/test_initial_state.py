"""The cell's initial state in `trace convert`: the tasks alive at the window start."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.trace.convert import Selection, convert_trace
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent as E

#: Inside part 00001 of the sample (it covers about 5,012 s to 10,000 s).
START, END = 7000.0, 8000.0


def _delay(data: dict, job: dict) -> float:
    return job["walltime"] if job["kind"] == "service" else data["profiles"][job["profile"]]["delay"]


@pytest.fixture(scope="module")
def window(google_2011, tmp_path_factory):
    path = tmp_path_factory.mktemp("initial") / "w.json"
    selection = Selection(start=START, end=END, initial_state=True)
    jobs = convert_trace([google_2011], path, selection, RowAccount(), nb_res=12583)
    return json.loads(path.read_text()), jobs


def test_tasks_running_at_a_window_start_inside_a_part_last_the_time_they_had_left(window, trace_reference):
    data, jobs = window
    ended, tasks = trace_reference
    kept = (E.FINISH, E.KILL)
    expected = {
        "running": sorted(
            (key, end - START)
            for key, submit, schedule, end, code, _, _ in ended
            if submit < START and schedule is not None and schedule < START < end and code in kept
        ),
        "pending": sorted(
            (key, end - schedule)
            for key, submit, schedule, end, code, _, _ in ended
            if submit < START and schedule is not None and schedule >= START and end > START and code in kept
        ),
    }
    for flag, reference in expected.items():
        ours = sorted(
            ((job["job_id"], job["task_index"]), _delay(data, job))
            for job in data["jobs"]
            if job.get("initial") == flag and not job["censored"]
        )
        assert len(ours) == len(reference) and [key for key, _ in ours] == [key for key, _ in reference]
        assert np.allclose([d for _, d in ours], [d for _, d in reference], rtol=0, atol=2e-6)
        assert all(job["subtime"] == 0 for job in data["jobs"] if job.get("initial") == flag)
    assert len(expected["running"]) > 5000  # the window opens on a loaded cell


def test_tasks_whose_end_is_not_in_the_input_are_censored_at_its_end(window, trace_reference):
    data, jobs = window
    input_end = trace_reference[1]["last_time"]
    still_open = trace_reference[1]["open"]  # key -> the submit and schedule of its open attempt

    def began(attempt: dict) -> float:
        """Where a censored record's time starts: the start (running there), its schedule, or its
        submission (submitted in the window, never scheduled)."""
        if attempt["schedule"] is not None:
            return max(attempt["schedule"], START)
        return attempt["submit"]

    def flag(attempt: dict) -> str | None:
        if attempt["submit"] >= START:
            return None
        return "running" if attempt["schedule"] < START else "pending"

    # pending at the start and never scheduled in the input: left out
    written = {key: attempt for key, attempt in still_open.items() if attempt["submit"] < END}
    left_out = [key for key, attempt in written.items() if attempt["submit"] < START and attempt["schedule"] is None]
    for key in left_out:
        del written[key]
    assert jobs.excluded["pending at the start, never scheduled in the input"] == len(left_out) > 1000
    expected = sorted((key, input_end - began(attempt), flag(attempt)) for key, attempt in written.items())
    censored = sorted(
        ((job["job_id"], job["task_index"]), job["walltime"], job.get("initial"))
        for job in data["jobs"]
        if job["censored"]
    )
    assert [key for key, _, _ in censored] == [key for key, _, _ in expected]
    assert np.allclose([d for _, d, _ in censored], [d for _, d, _ in expected], rtol=0, atol=1e-5)
    assert [flag for _, _, flag in censored] == [flag for _, _, flag in expected]
    assert sum(flag == "running" for _, _, flag in censored) > 100_000
    initial = [job for job in data["jobs"] if job["censored"] and job["initial"]]
    in_window = [job for job in data["jobs"] if job["censored"] and not job["initial"]]
    assert all(job["kind"] == "service" and job["subtime"] == 0 for job in initial)
    assert all(job["kind"] == "service" and 0 <= job["subtime"] < END - START for job in in_window)
    assert jobs.initial["censored"] == len(initial) and sum(jobs.censored.values()) == len(in_window) > 0
    assert jobs.censored["never scheduled"] == sum(job["wait"] is None for job in in_window)
    assert jobs.initial["running"] + jobs.initial["pending"] == sum(1 for job in data["jobs"] if job.get("initial"))
    assert "censored at the input's end" in jobs.summary("attempt")


def _small_trace(folder):
    """Task 0 runs across the start (ends at 30 s), task 1 waits across it (runs 40 to 45 s),
    task 2 runs across it and never ends, task 3 ends before it, task 4 is submitted in the window."""
    lines = [
        event(seconds_us(1), 1, 0, E.SUBMIT),
        event(seconds_us(2), 1, 0, E.SCHEDULE),
        event(seconds_us(3), 1, 1, E.SUBMIT),
        event(seconds_us(4), 1, 2, E.SUBMIT),
        event(seconds_us(5), 1, 2, E.SCHEDULE),
        event(seconds_us(6), 1, 3, E.SUBMIT),
        event(seconds_us(7), 1, 3, E.SCHEDULE),
        event(seconds_us(8), 1, 3, E.FINISH),
        event(seconds_us(25), 1, 4, E.SUBMIT),
        event(seconds_us(26), 1, 4, E.SCHEDULE),
        event(seconds_us(30), 1, 0, E.FINISH),
        event(seconds_us(36), 1, 4, E.FINISH),
        event(seconds_us(40), 1, 1, E.SCHEDULE),
        event(seconds_us(45), 1, 1, E.FINISH),
        event(seconds_us(50), 2, 0, E.SUBMIT),
    ]
    write_part(folder, lines)


def test_initial_state_of_a_small_trace_and_the_option_to_leave_it_out(tmp_path):
    trace = tmp_path / "trace"
    _small_trace(trace)
    out = tmp_path / "w.json"
    result = CliRunner().invoke(main, ["trace", "convert", str(trace), "-o", str(out), "--start", "20"])
    assert result.exit_code == 0, result.output
    jobs = {job["task_index"]: job for job in json.loads(out.read_text())["jobs"] if job["job_id"] == 1}
    data = json.loads(out.read_text())
    assert sorted(jobs) == [0, 1, 2, 4]  # task 3 ended before the start
    assert (jobs[0]["initial"], jobs[0]["censored"], _delay(data, jobs[0])) == ("running", 0, 10)
    assert (jobs[1]["initial"], jobs[1]["censored"], _delay(data, jobs[1])) == ("pending", 0, 5)
    assert (jobs[2]["initial"], jobs[2]["censored"], jobs[2]["kind"], jobs[2]["walltime"]) == (
        "running",
        1,
        "service",
        30,  # until the input's end, 50 s
    )
    assert jobs[4]["initial"] is None and jobs[4]["subtime"] == 5
    assert "initial state (written, submitted at the window start): running 2, pending 1" in result.output
    assert "of which censored at the input's end 1" in result.output

    result = CliRunner().invoke(
        main, ["trace", "convert", str(trace), "-o", str(tmp_path / "none.json"), "--start", "20", "--no-initial-state"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "none.json").read_text())
    # job 2, submitted at the input's end, is censored there (tests/trace/test_censoring.py)
    assert [(job["job_id"], job["task_index"]) for job in data["jobs"]] == [(1, 4), (2, 0)]
    assert "initial" not in data["jobs"][0] and [job["censored"] for job in data["jobs"]] == [0, 1]
    assert "initial state" not in result.output


def test_rows_of_tasks_that_began_before_the_input_are_reported_as_such(tmp_path):
    write_part(tmp_path / "trace", [event(seconds_us(1), 1, 0, E.SCHEDULE), event(seconds_us(2), 1, 0, E.FINISH)])
    rows = RowAccount()
    convert_trace([tmp_path / "trace"], tmp_path / "w.json", Selection(initial_state=True), rows, nb_res=8)
    assert rows.skipped == {
        "task began before the input: SCHEDULE without its SUBMIT": 1,
        "task began before the input: FINISH without its SUBMIT": 1,
    }
    assert "impossible" not in rows.summary()
