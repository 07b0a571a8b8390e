"""The streamed reader of a workload: jobs in Batsim's submission order with their profiles, read as
far as asked, and a file it cannot stream refused naming the file and the job."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from batsim_google.errors import InputFileError
from batsim_google.generation.batsim_json import WorkloadWriter
from batsim_google.simulation.workload_stream import (
    WorkloadStream,
    in_submission_order,
    profile_uses,
    streamed_jobs,
    unstreamable,
)


def written(path: Path, jobs: dict, grain: float | None = None) -> Path:
    """A workload as this package writes it (jobs a line each, their profiles after them)."""
    with WorkloadWriter(path, nb_res=7, grain=grain) as writer:
        writer.write(pl.DataFrame(jobs))
    return path


def raw(path: Path, jobs: list[dict], profiles: dict, **top) -> Path:
    path.write_text(json.dumps({"nb_res": 3, **top, "jobs": jobs, "profiles": profiles}))
    return path


def test_jobs_come_by_submission_time_then_by_id_text_as_batsim_submits_them(tmp_path):
    path = written(
        tmp_path / "w.json",
        {"id": [0, 1, 2, 9, 10, 11], "subtime": [0.0, 0.0, 0.0, 5.0, 5.0, 7.5], "delay": [1.0, 2, 3, 4, 5, 6]},
    )
    jobs = list(WorkloadStream(path).jobs())
    # "w0!10" < "w0!9" as text: Batsim's job_comparator_subtime_number sorts equal times by id string
    assert [job.job_id for job in jobs] == ["w0!0", "w0!1", "w0!2", "w0!10", "w0!9", "w0!11"]
    assert [job.subtime for job in jobs] == [0.0, 0.0, 0.0, 5.0, 5.0, 7.5]
    assert {job.job_id: job.delay for job in jobs}["w0!10"] == 5.0
    assert all(job.new_profile == {"type": "delay", "delay": job.delay} for job in jobs)
    assert jobs[0].fields["subtime"] == 0.0 and jobs[0].res == 1 and jobs[0].walltime == -1.0
    assert WorkloadStream(path).nb_res == 7


def test_a_shared_profile_is_handed_out_once_and_its_delay_kept(tmp_path):
    path = written(
        tmp_path / "w.json", {"id": [0, 1, 2], "subtime": [0.0, 1.0, 2.0], "delay": [10.0, 11.0, 30.0]}, 10.0
    )
    jobs = list(WorkloadStream(path).jobs())
    assert [job.profile for job in jobs] == ["g1", "g1", "g3"]
    assert [job.new_profile is not None for job in jobs] == [True, False, True]
    assert [job.delay for job in jobs] == [10.0, 10.0, 30.0]


def test_told_the_uses_the_reader_keeps_a_profile_until_its_last_job(tmp_path):
    """Profiles g1 (jobs 0, 2, 4) and g3 (job 1 alone); ids 3 and 5 have their own: only g1 is
    kept, and only until job 4; each of g1's jobs registers a copy of its own, so that Batsim
    (without profile reuse) may free it once that job ended; the others come as without the uses."""
    jobs = {"id": range(6), "subtime": [float(i) for i in range(6)], "delay": [10.0, 30.0, 11.0, 50.0, 12.0, 70.0]}
    path = written(tmp_path / "w.json", jobs, 10.0)
    assert profile_uses(path) == {"g1": 3}
    stream = WorkloadStream(path, uses=profile_uses(path))
    kept, told = [], []
    for job in stream.jobs():
        kept.append(sorted(stream._shared))
        told.append(job)
    assert kept == [["g1"], ["g1"], ["g1"], ["g1"], [], []]
    assert [job.profile for job in told] == ["g1@0", "g3", "g1@2", "g5", "g1@4", "g7"]
    assert [job.new_profile == {"type": "delay", "delay": job.delay} for job in told] == [True] * 6
    assert [job.delay for job in told] == [10.0, 30.0, 10.0, 50.0, 10.0, 70.0]
    untold = list(WorkloadStream(path).jobs())
    assert [job.profile for job in untold] == ["g1", "g3", "g1", "g5", "g1", "g7"]
    assert [job.new_profile is not None for job in untold] == [True, True, False, True, False, True]


def test_workloads_merge_by_time_the_first_workload_first_at_equal_times(tmp_path):
    first = written(tmp_path / "a.json", {"id": [0, 1], "subtime": [0.0, 4.0], "delay": [1.0, 1.0]})
    second = written(tmp_path / "b.json", {"id": [0, 1], "subtime": [2.0, 4.0], "delay": [1.0, 1.0]})
    assert [job.job_id for job in streamed_jobs([first, second])] == ["w0!0", "w1!0", "w0!1", "w1!1"]


def test_profiles_are_read_only_as_far_as_the_jobs_need(tmp_path):
    count = 3000
    path = written(
        tmp_path / "w.json", {"id": range(count), "subtime": [i / 10 for i in range(count)], "delay": [1.0] * count}
    )
    stream = WorkloadStream(path)
    jobs = stream.jobs()
    widest = 0
    for _ in range(count):
        next(jobs)
        widest = max(widest, len(stream._ahead))
    assert widest == 0  # this package's files give the profiles in their jobs' order: nothing is read ahead
    assert next(jobs, None) is None


def test_jobs_stream_before_the_rest_of_the_file_is_read(tmp_path):
    """The first jobs come out of a file whose end is broken: the file is never parsed whole."""
    lines = [json.dumps({"id": i, "subtime": float(i), "res": 1, "profile": "p"}) for i in range(500)]
    broken = '{"id": 500, "subtime": 500.0, "res": 1, "profile": "p", "cpu": nope}'
    path = tmp_path / "cut.json"
    path.write_text(
        '{"nb_res": 3, "jobs": [\n'
        + ",\n".join([*lines, broken])
        + '\n], "profiles": {"p": {"type": "delay", "delay": 1}}}'
    )
    jobs = WorkloadStream(path).jobs()
    assert [next(jobs).job_id for _ in range(3)] == ["w0!0", "w0!1", "w0!2"]
    with pytest.raises(InputFileError, match=r"cut\.json: jobs: not JSON"):
        list(jobs)


def test_a_job_earlier_than_the_one_before_it_is_refused_naming_the_file_and_the_job(tmp_path):
    profiles = {"p": {"type": "delay", "delay": 1}}
    jobs = [{"id": i, "subtime": t, "res": 1, "profile": "p"} for i, t in enumerate([0.0, 5.0, 3.0])]
    path = raw(tmp_path / "late.json", jobs, profiles)
    with pytest.raises(InputFileError, match=r"late\.json: jobs\[2\] \(id 2\) is submitted at 3 s, before"):
        list(WorkloadStream(path).jobs())
    assert not in_submission_order(path)  # a run streams it sorted instead


@pytest.mark.parametrize(
    ("jobs", "profiles", "message"),
    [
        ([{"id": 0, "subtime": 0, "res": 1, "profile": "nope"}], {}, r"job w0!0: profile 'nope' is not among"),
        ([{"id": 0, "subtime": "soon", "res": 1, "profile": "p"}], {}, r"jobs\[0\] \(id 0\): subtime 'soon' is not"),
        ([7], {}, r"jobs\[0\] is not a JSON object"),
        ([{"id": 0, "subtime": 0, "res": 1, "profile": "c"}], {"c": {"type": "composed", "seq": ["p"]}}, "composed"),
    ],
)
def test_bad_jobs_are_refused_naming_the_file(tmp_path, jobs, profiles, message):
    path = raw(tmp_path / "bad.json", jobs, profiles)
    with pytest.raises(InputFileError, match=r"bad\.json: .*" + message):
        list(WorkloadStream(path).jobs())


def test_a_file_that_is_no_workload_is_refused_naming_it(tmp_path):
    path = tmp_path / "none.json"
    path.write_text('{"nb_res": 3}')
    with pytest.raises(InputFileError, match=r"none\.json: no jobs array"):
        WorkloadStream(path)
    with pytest.raises(InputFileError, match=r"missing\.json"):
        WorkloadStream(tmp_path / "missing.json")


def test_composed_profiles_are_not_streamable(tmp_path):
    profiles = {"p": {"type": "delay", "delay": 1}, "c": {"type": "composed", "seq": ["p"]}}
    path = raw(tmp_path / "c.json", [{"id": 0, "subtime": 0.0, "res": 1, "profile": "c"}], profiles)
    assert unstreamable(path) == "profile 'c' is composed"
    good = written(tmp_path / "g.json", {"id": [0], "subtime": [0.0], "delay": [1.0]})
    assert unstreamable(good) is None


def test_a_file_out_of_order_is_sorted_on_disk_a_chunk_at_a_time(tmp_path, monkeypatch):
    import batsim_google.simulation.workload_stream as module

    monkeypatch.setattr(module, "SORT_CHUNK", 7)  # several sorted runs, merged
    times = [(i * 37) % 50 / 2 for i in range(50)]  # every time in a scrambled order, twice each
    profiles = {f"p{i}": {"type": "delay", "delay": float(i)} for i in range(50)}
    jobs = [{"id": i, "subtime": t, "res": 1, "profile": f"p{i}"} for i, t in enumerate(times)]
    jobs[3]["profile"] = jobs[4]["profile"] = "shared"
    profiles["shared"] = {"type": "delay", "delay": 99.0}
    path = raw(tmp_path / "scrambled.json", jobs, profiles)
    assert unstreamable(path) is None and not in_submission_order(path)
    streamed = list(WorkloadStream(path, in_order=False).jobs())
    expected = sorted((job["subtime"], f"w0!{job['id']}") for job in jobs)
    assert [(job.subtime, job.job_id) for job in streamed] == expected
    by_id = {job.job_id: job for job in streamed}
    assert by_id["w0!10"].delay == 10.0 and by_id["w0!3"].delay == by_id["w0!4"].delay == 99.0
    assert sum(job.new_profile is not None for job in streamed if job.profile == "shared") == 1
    assert [job.job_id for job in streamed_jobs([path], to_sort=[path])] == [job_id for _, job_id in expected]
