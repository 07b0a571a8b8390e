"""SWF logs: the real KTH log against a plain parse, unknown (-1) fields, bad lines."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import plain_swf_jobs

from batsim_google.cli import main
from batsim_google.trace.row_accounting import RowAccount, TraceError
from batsim_google.trace.swf import header_processors, read_header, read_swf


def test_kth_log_becomes_a_workload_of_its_jobs(kth, tmp_path):
    out = tmp_path / "kth.json"
    result = CliRunner().invoke(main, ["swf", "convert", str(kth), "-o", str(out)])
    assert result.exit_code == 0, result.output
    plain = plain_swf_jobs(kth)
    usable = [job for job in plain if job[4] > 0 or job[7] > 0]
    data = json.loads(out.read_text())
    assert data["nb_res"] == 100 and data["meta"]["header"]["MaxProcs"] == "100"
    assert len(data["jobs"]) == len(usable) == len(plain) - 1
    for job, line in zip(data["jobs"], usable):
        assert job["job_id"] == line[0] and job["subtime"] == line[1] and job["wait"] == line[2]
        assert data["profiles"][job["profile"]]["delay"] == max(line[3], 1e-6)
        assert job["res"] == (line[4] if line[4] > 0 else line[7]) and job["requested_time"] == line[8]
        assert job["kind"] == "task" and job["priority"] == 0.5 and job["cpu"] == 1.0
        assert job["memory"] is None  # the log has no memory (-1): unknown, not -1
        assert job["end_event"] == {1: "finish", 0: "fail", 5: "kill"}.get(int(line[10]), "lost")
    assert (
        f"jobs {len(plain)} = written {len(usable)} + excluded 1 (processor count unknown or zero: 1)" in result.output
    )
    assert f"rows read {len(plain)} = used {len(plain)} + skipped 0" in result.output


def test_header_fields(kth):
    header = read_header(kth)
    assert header["UnixStartTime"] == "843480031" and header_processors(header, "log.swf") == 100
    assert "http" not in header  # a continuation line is not a field


SWF = """; MaxNodes: 8
; Note: test log
1 0 5 100 2 -1 -1 2 200 -1 1 3 1 -1 -1 -1 -1 -1
2 10 -1 50 4 -1 512 4 100 1024 5 4 1 -1 -1 -1 -1 -1
3 20 0 -1 1 -1 -1 1 60 -1 0 3 1 -1 -1 -1 -1 -1
4 -1 0 30 1 -1 -1 1 60 -1 1 3 1 -1 -1 -1 -1 -1
5 30 0 30 1 -1
6 40 0 abc 1 -1 -1 1 60 -1 1 3 1 -1 -1 -1 -1 -1
7 50 0 30 16 -1 -1 16 60 -1 1 3 1 -1 -1 -1 -1 -1
"""


def test_unknown_fields_and_bad_lines(tmp_path):
    log = tmp_path / "t.swf"
    log.write_text(SWF)
    out = tmp_path / "t.json"
    result = CliRunner().invoke(
        main, ["swf", "convert", str(log), "-o", str(out), "--node-memory", "2048", "--priority", "0.25"]
    )
    assert result.exit_code == 0, result.output
    jobs = json.loads(out.read_text())["jobs"]
    assert [job["job_id"] for job in jobs] == [1, 2]
    assert jobs[0]["memory"] is None and jobs[1]["memory"] == 0.5  # requested 1024 KB of 2048
    assert jobs[1]["wait"] is None and jobs[1]["kind"] == "task" and jobs[1]["end_event"] == "kill"
    assert all(job["priority"] == 0.25 for job in jobs)
    assert (
        "rows read 7 = used 4 + skipped 3 (non-numeric field: 1, unknown submit time: 1, wrong field count: 1)"
        in result.output
    )
    assert "jobs 4 = written 2 + excluded 2 (" in result.output
    assert "makespan unknown: 1" in result.output and "needs more resources than nb_res: 1" in result.output
    with pytest.raises(TraceError, match=rf"{log}:6: unknown submit time"):
        list(read_swf(log, RowAccount(strict=True)))


def test_nb_res_is_required_without_a_header(tmp_path):
    log = tmp_path / "t.swf"
    log.write_text("\n".join(SWF.splitlines()[2:4]) + "\n")
    result = CliRunner().invoke(main, ["swf", "convert", str(log), "-o", str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "no MaxProcs/MaxNodes" in result.output


@pytest.mark.parametrize("field, value", [(3, "-5"), (1, str(2**64)), (1, "-3")])
def test_negative_and_huge_fields_are_out_of_range(tmp_path, field, value):
    job = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1".split()
    bad = list(job)
    bad[field] = value
    log = tmp_path / "t.swf"
    log.write_text("; MaxProcs: 4\n" + " ".join(job) + "\n" + " ".join(bad) + "\n")
    account = RowAccount()
    assert sum(len(frame) for frame in read_swf(log, account)) == 1
    assert account.used == 1 and account.skipped == {"value out of range": 1} and account.balanced
    with pytest.raises(TraceError, match=rf"{log}:3: value out of range"):
        list(read_swf(log, RowAccount(strict=True)))
