"""Trace -> Batsim workload: jobs against the reference lifecycles, options, accounting."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.generation.batsim_json import MIN_DELAY
from batsim_google.trace.convert import Selection, convert_trace
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent as E

START, END = 600.0, 900.0


def _convert(sources, path, **selection):
    rows = RowAccount()
    jobs = convert_trace(sources, path, Selection(**selection), rows, nb_res=12583)
    return json.loads(path.read_text()), jobs, rows


@pytest.fixture(scope="module")
def window(google_2011, tmp_path_factory):
    return _convert([google_2011], tmp_path_factory.mktemp("w") / "w.json", start=START, end=END)


def makespan(data: dict, job: dict) -> float:
    """A task's makespan is its profile's delay; a service's lifetime is its walltime."""
    return job["walltime"] if job["kind"] == "service" else data["profiles"][job["profile"]]["delay"]


def test_window_jobs_are_the_reference_attempts(window, trace_reference):
    data, jobs, rows = window
    attempts, tasks = trace_reference
    expected = sorted(
        (key[0], key[1], submit - START, end - schedule)
        for key, submit, schedule, end, code, _, _ in attempts
        if START <= submit < END and code in (E.FINISH, E.KILL) and schedule is not None
    )
    # open at the input's end: censored there, from their schedule (or submission if never scheduled)
    censored = sorted(
        (key[0], key[1], attempt["submit"] - START, tasks["last_time"] - (attempt["schedule"] or attempt["submit"]))
        for key, attempt in tasks["open"].items()
        if START <= attempt["submit"] < END
    )
    assert len(censored) > 10 and sum(jobs.censored.values()) == len(censored)
    expected = sorted(expected + censored)
    ours = sorted((job["job_id"], job["task_index"], job["subtime"], makespan(data, job)) for job in data["jobs"])
    assert len(ours) == len(expected) > 5000
    assert [row[:2] for row in ours] == [row[:2] for row in expected]
    assert np.allclose([row[2:] for row in ours], [row[2:] for row in expected], rtol=0, atol=2e-6)
    assert jobs.written == len(ours) and rows.balanced


def test_window_jobs_carry_the_generator_fields(window):
    data, jobs, _ = window
    assert data["nb_res"] == 12583 and data["meta"]["window"] == [START, END]
    assert [job["id"] for job in data["jobs"]] == list(range(len(data["jobs"])))
    for job in data["jobs"]:
        assert 0 <= job["subtime"] < END - START and job["res"] == 1
        assert job["kind"] == job["class"] == ("service" if job["end_event"] == "kill" or job["censored"] else "task")
        assert job["censored"] == (job["end_event"] is None)  # the end of every other is in the input
        if job["kind"] == "service":  # runs until stopped at the end of its observed lifetime
            assert job["profile"] == "service" and job["walltime"] > 0
        else:
            assert job["walltime"] == -1
        assert job["priority"] == pytest.approx((job["google_priority"] + 1) / 12) and 0 < job["priority"] <= 1
        assert 0 <= job["cpu"] <= 1 and 0 <= job["memory"] <= 1 and job["scheduling_class"] in (0, 1, 2, 3)
        assert isinstance(job["user"], str) and isinstance(job["job_id"], int) and job["attempt"] >= 0
        assert makespan(data, job) > 0
    kinds = {job["kind"] for job in data["jobs"]}
    assert kinds == {"task", "service"}


def test_window_jobs_carry_their_google_job_like_generated_ones(window):
    data, _, _ = window
    assert all(job["google_job"] == job["job_id"] for job in data["jobs"])
    assert len({job["google_job"] for job in data["jobs"]}) < len(data["jobs"])  # tasks grouped by job


def test_every_attempt_is_written_or_excluded_for_a_reason(window, trace_reference):
    _, jobs, _ = window
    still_open = sum(state != "dead" for state in trace_reference[1]["state"].values())
    assert jobs.records == len(trace_reference[0]) + still_open  # every attempt, ended or not
    assert set(jobs.excluded) <= {
        "submitted outside the window",
        "still open at the end of the input",
        "end event not selected",
        "never scheduled",
        "makespan unknown",
    }
    assert jobs.summary("attempt").startswith(f"attempts {jobs.records} = written {jobs.written} + excluded")


def test_per_task_jobs_and_filters(google_2011, tmp_path):
    data, jobs, _ = _convert(
        [google_2011],
        tmp_path / "t.json",
        start=START,
        end=END,
        per="task",
        priority_groups=("production",),
        end_events=("finish",),
    )
    assert 0 < len(data["jobs"]) < 500
    for job in data["jobs"]:
        assert job["google_priority"] == 9 and job["kind"] == "task" and job["attempts"] >= 1
        assert 0 <= job["subtime"] < END - START
    assert jobs.excluded["priority group not selected"] > 1000
    data, _, _ = _convert([google_2011], tmp_path / "c.json", start=START, end=END, scheduling_classes=(3,))
    assert data["jobs"] and {job["scheduling_class"] for job in data["jobs"]} == {3}


def test_reading_stops_once_the_window_is_complete(tmp_path):
    part0 = []
    for task in range(5):  # submitted in [0, 10), all ended by 30 s
        part0 += [event(seconds_us(task), 1, task, E.SUBMIT), event(seconds_us(task + 0.5), 1, task, E.SCHEDULE)]
        part0.append(event(seconds_us(20 + task), 1, task, E.FINISH))
    part0.sort(key=lambda line: int(line.split(",")[0]))
    part1 = [event(seconds_us(100 + t), 2, t, E.SUBMIT) for t in range(50)]
    write_part(tmp_path, part0, part=0)
    write_part(tmp_path, part1, part=1)
    data, jobs, rows = _convert([tmp_path], tmp_path / "w.json", start=0, end=10)
    assert len(data["jobs"]) == 5 and [job["subtime"] for job in data["jobs"]] == [0, 1, 2, 3, 4]
    assert [data["profiles"][job["profile"]]["delay"] for job in data["jobs"]] == [19.5, 19.5, 19.5, 19.5, 19.5]
    assert rows.read == len(part0) and rows.balanced  # part 1 was never needed
    data, jobs, rows = _convert([tmp_path], tmp_path / "all.json", start=0)
    assert rows.read == len(part0) + len(part1) and len(data["jobs"]) == 55
    # part 1's tasks are pending at the input's end (149 s): censored there, from their submission
    # (the last, submitted at the end, for the shortest time a job lasts)
    pending = [job["walltime"] for job in data["jobs"] if job["job_id"] == 2]
    assert pending == [max(49 - t, MIN_DELAY) for t in range(50)] and jobs.censored["never scheduled"] == 50


def test_convert_command(google_2011, tmp_path):
    out = tmp_path / "w.json"
    result = CliRunner().invoke(
        main,
        [
            "trace",
            "convert",
            str(google_2011 / "task_events" / "part-00000-of-00500.csv.gz"),
            "-o",
            str(out),
            "--start",
            "600",
            "--end",
            "660",
            "--nb-res",
            "16",
            "--grain",
            "1",
            "--end-event",
            "finish",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert (
        lines[0].startswith("wrote ")
        and lines[1].startswith("attempts ")
        and lines[2].startswith("rows read 450146 = used 450146")
    )
    data = json.loads(out.read_text())
    assert data["nb_res"] == 16 and all(job["kind"] == "task" for job in data["jobs"])
    assert all(profile["delay"] == int(profile["delay"]) for profile in data["profiles"].values())
    bad = CliRunner().invoke(
        main, ["trace", "convert", str(google_2011), "-o", str(out), "--start", "10", "--end", "5"]
    )
    assert bad.exit_code == 2 and "--start (10.0) must be before --end (5.0)" in bad.output


def test_reading_ahead_writes_the_same_workload(google_2011, tmp_path):
    written = []
    for workers in (1, 2):
        rows = RowAccount()
        path = tmp_path / f"w{workers}.json"
        jobs = convert_trace(
            [google_2011], path, Selection(start=START, end=660.0), rows, nb_res=12583, workers=workers
        )
        written.append((path.read_bytes(), jobs.to_json(), rows.to_json()))
    assert written[0] == written[1] and written[0][1]["written"] > 100


@pytest.mark.parametrize("per", ["attempt", "task"])
def test_dropped_synthesized_records_are_excluded_and_counted_their_rows_still_used(tmp_path, per):
    write_part(
        tmp_path / "trace",
        [
            event(seconds_us(1), 1, 0, E.SUBMIT),
            event(seconds_us(2), 2, 0, E.SUBMIT),
            event(seconds_us(3), 1, 0, E.SCHEDULE, missing="0"),  # synthesized from a snapshot
            event(seconds_us(4), 2, 0, E.SCHEDULE),
            event(seconds_us(10), 1, 0, E.FINISH),
            event(seconds_us(12), 2, 0, E.FINISH),
        ],
    )
    result = CliRunner().invoke(
        main,
        [
            "trace",
            "convert",
            str(tmp_path / "trace"),
            "-o",
            str(tmp_path / "w.json"),
            "--per",
            per,
            "--drop-synthesized",
            "--strict",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{per}s 2 = written 1 + excluded 1 (synthesized record dropped: 1)" in result.output
    assert "rows read 6 = used 6 + skipped 0" in result.output  # job 1's FINISH is no impossible lifecycle
    (job,) = json.loads((tmp_path / "w.json").read_text())["jobs"]
    assert job["job_id"] == 2
    kept, _, _ = _convert([tmp_path / "trace"], tmp_path / "all.json", per=per)
    assert sorted(job["job_id"] for job in kept["jobs"]) == [1, 2]
