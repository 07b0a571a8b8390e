"""`trace convert --faithful`: evicted attempts folded into the next one, the others replayed as
they ended, the tasks running at the start on the trace's machine."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.errors import ParameterError
from batsim_google.trace.convert import Selection, convert_trace
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.schema import TaskEvent as E
from batsim_google.trace.vocabulary import END_EVENT_NAMES

START, END = 100.0, 1000.0


def _rows() -> list[str]:
    rows = [
        # job 1: running at the start on machine 501, evicted at 150, back on 502 until 400
        (10, 1, E.SUBMIT, ""),
        (20, 1, E.SCHEDULE, "501"),
        (150, 1, E.EVICT, "501"),
        (150, 1, E.SUBMIT, ""),
        (160, 1, E.SCHEDULE, "502"),
        (400, 1, E.FINISH, "502"),
        # job 2: submitted in the window, evicted at 300, back at 330 until 500
        (200, 2, E.SUBMIT, ""),
        (202, 2, E.SCHEDULE, "503"),
        (300, 2, E.EVICT, "503"),
        (300, 2, E.SUBMIT, ""),
        (330, 2, E.SCHEDULE, "504"),
        (500, 2, E.FINISH, "504"),
        # job 3: fails at 250 by itself, resubmitted at 251, finishes at 300
        (210, 3, E.SUBMIT, ""),
        (211, 3, E.SCHEDULE, "505"),
        (250, 3, E.FAIL, "505"),
        (251, 3, E.SUBMIT, ""),
        (255, 3, E.SCHEDULE, "505"),
        (300, 3, E.FINISH, "505"),
        # job 4: evicted at 260 and never back
        (220, 4, E.SUBMIT, ""),
        (221, 4, E.SCHEDULE, "506"),
        (260, 4, E.EVICT, "506"),
        # job 5: lost with its machine at 700
        (600, 5, E.SUBMIT, ""),
        (601, 5, E.SCHEDULE, "507"),
        (700, 5, E.LOST, "507"),
        (2000, 9, E.SUBMIT, ""),
    ]
    rows.sort(key=lambda row: row[0])
    return [event(seconds_us(t), job, 0, code, machine=machine) for t, job, code, machine in rows]


@pytest.fixture
def trace(tmp_path):
    write_part(tmp_path, _rows())
    return tmp_path


def _jobs(path) -> dict[int, list[dict]]:
    data = json.loads(path.read_text())
    by_job: dict[int, list[dict]] = {}
    for job in sorted(data["jobs"], key=lambda job: job["subtime"]):
        delay = job["walltime"] if job["kind"] == "service" else data["profiles"][job["profile"]]["delay"]
        by_job.setdefault(job["job_id"], []).append({**job, "delay": delay})
    return by_job


def test_evictions_are_folded_and_other_ends_replayed(trace, tmp_path):
    out = tmp_path / "w.json"
    selection = Selection(start=START, end=END, initial_state=True, faithful=True, end_events=END_EVENT_NAMES)
    account = convert_trace([trace], out, selection, RowAccount(), nb_res=4)
    jobs = _jobs(out)
    (first,) = jobs[1]  # running at the start on 501, to its end at 400
    assert first["initial"] == "running" and first["trace_machine"] == 501
    assert first["subtime"] == 0 and first["delay"] == pytest.approx(300.0)
    (second,) = jobs[2]  # submitted at 200, runs as its last attempt did: 170 s
    assert second["subtime"] == pytest.approx(100.0) and second["delay"] == pytest.approx(170.0)
    assert second.get("trace_machine") is None and second["end_event"] == "finish"
    failed, finished = jobs[3]  # both attempts, each at its own submission
    assert (failed["subtime"], failed["delay"], failed["end_event"]) == pytest.approx((110.0, 39.0, "fail"))
    assert (finished["subtime"], finished["delay"], finished["end_event"]) == pytest.approx((151.0, 45.0, "finish"))
    (left,) = jobs[4]  # never resubmitted: as it ran
    assert (left["subtime"], left["delay"], left["end_event"]) == pytest.approx((120.0, 39.0, "evict"))
    (lost,) = jobs[5]
    assert lost["end_event"] == "lost" and lost["delay"] == pytest.approx(99.0)
    assert 9 not in jobs and account.written == 6


def test_place_again_writes_no_trace_machine(trace, tmp_path):
    out = tmp_path / "w.json"
    result = CliRunner().invoke(
        main,
        [
            "trace",
            "convert",
            str(trace),
            "-o",
            str(out),
            "--start",
            "100",
            "--end",
            "1000",
            "--faithful",
            "--place-again",
        ],
    )
    assert result.exit_code == 0, result.output
    assert all(job.get("trace_machine") is None for jobs in _jobs(out).values() for job in jobs)
    assert len(_jobs(out)[3]) == 2


def test_faithful_refuses_what_it_cannot_replay(trace, tmp_path):
    with pytest.raises(ParameterError, match="per attempt"):
        Selection(faithful=True, per="task", end_events=END_EVENT_NAMES)
    with pytest.raises(ParameterError, match="every end event"):
        Selection(faithful=True)
    result = CliRunner().invoke(main, ["trace", "convert", str(trace), "-o", str(tmp_path / "x.json"), "--place-again"])
    assert result.exit_code == 2 and "--place-again is an option of --faithful" in result.output
