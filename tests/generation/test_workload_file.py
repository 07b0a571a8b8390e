"""Batsim JSON workloads: structure, reproducibility, bounds, profile sharing."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.generation.batsim_json import IN_FLIGHT, MAX_GRAIN, WorkloadWriter
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law


def _write(path, seed=3, **bounds):
    kwargs = {"tasks": 1000} if not bounds else bounds
    write_generated_workload(path, preset("google"), load_request_law(), seed, Generation(**kwargs))
    return json.loads(path.read_text())


def test_jobs_profiles_and_extra_fields(tmp_path):
    data = _write(tmp_path / "w.json")
    assert data["nb_res"] == 12583
    jobs, profiles = data["jobs"], data["profiles"]
    services = [job for job in jobs if job["kind"] == "service"]
    assert len(jobs) == 1000 and len(profiles) == 1000 - len(services) + 1
    assert 200 < len(services) < 400
    assert [job["id"] for job in jobs] == list(range(1000))
    subtimes = [job["subtime"] for job in jobs]
    assert subtimes == sorted(subtimes) and subtimes[0] > 0
    for job in jobs:
        assert set(job) == {"id", "subtime", "res", "profile", "walltime", "class", "kind", "priority", "cpu", "memory"}
        assert job["res"] == 1
        assert job["kind"] == job["class"] in ("task", "service")
        if job["kind"] == "service":  # runs until stopped at the end of its lifetime (walltime)
            assert job["profile"] == "service" and job["walltime"] > 0
        else:
            assert job["walltime"] == -1
        assert 0 < job["priority"] <= 1 and 0 <= job["cpu"] <= 1 and 0 <= job["memory"] <= 1
        profile = profiles[job["profile"]]
        assert profile["type"] == "delay" and profile["delay"] > 0
        assert "!" not in str(job["id"])
    assert data["meta"]["seed"] == 3 and data["meta"]["model"]["dynamism"] == 0.05


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    _write(tmp_path / "a.json", seed=11)
    _write(tmp_path / "b.json", seed=11)
    _write(tmp_path / "c.json", seed=12)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert (tmp_path / "a.json").read_bytes() != (tmp_path / "c.json").read_bytes()


def test_a_shorter_run_is_a_prefix_of_a_longer_one(tmp_path):
    short = _write(tmp_path / "short.json", tasks=100)["jobs"]
    long = _write(tmp_path / "long.json", tasks=70_000)["jobs"]
    assert short == long[:100]


def test_duration_bound(tmp_path):
    data = _write(tmp_path / "d.json", duration=60.0)
    subtimes = np.array([job["subtime"] for job in data["jobs"]])
    assert subtimes.max() <= 60.0
    # 60 s at a mean inter-arrival of 0.05 s: about 1200 tasks (Poisson-like spread).
    assert abs(len(subtimes) - 1200) < 4 * np.sqrt(1200 * 2)
    assert _write(tmp_path / "zero.json", duration=0.0)["jobs"] == []


def test_grain_shares_rounded_profiles(tmp_path):
    path = tmp_path / "g.json"
    write_generated_workload(path, preset("google"), load_request_law(), 5, Generation(tasks=5000, grain=60))
    data = json.loads(path.read_text())
    assert len(data["profiles"]) < 1000
    write_generated_workload(tmp_path / "f.json", preset("google"), load_request_law(), 5, Generation(tasks=5000))
    exact = json.loads((tmp_path / "f.json").read_text())
    for coarse_job, job in zip(data["jobs"], exact["jobs"]):
        if job["kind"] == "service":
            assert coarse_job["walltime"] == job["walltime"]
            continue
        delay = data["profiles"][coarse_job["profile"]]["delay"]
        true_delay = exact["profiles"][job["profile"]]["delay"]
        assert delay % 60 == 0 and delay >= 60
        assert abs(delay - true_delay) <= 30 or (true_delay < 30 and delay == 60)


def test_writer_rejects_bad_parameters_and_removes_partial_files(tmp_path):
    with pytest.raises(ValueError, match="nb_res"):
        WorkloadWriter(tmp_path / "x.json", 0)
    with pytest.raises(ValueError, match="grain"):
        WorkloadWriter(tmp_path / "x.json", 4, grain=0)
    path = tmp_path / "partial.json"
    with pytest.raises(ValueError, match="lack column"):
        with WorkloadWriter(path, 4) as writer:
            writer.write(pl.DataFrame({"id": [1], "subtime": [0.0]}))
    assert not path.exists()


def test_writer_keeps_explicit_res_walltime_and_string_columns(tmp_path):
    path = tmp_path / "w.json"
    with WorkloadWriter(path, 8) as writer:
        writer.write(
            pl.DataFrame(
                {
                    "id": [1, 2],
                    "subtime": [0.5, 1.0],
                    "delay": [3.0, 0.0],
                    "res": [2, 8],
                    "walltime": [10.0, 20.0],
                    "user": ['a"b', "c"],
                }
            )
        )
        writer.write(pl.DataFrame({"id": [3], "subtime": [2.0], "delay": [1.5]}))
    data = json.loads(path.read_text())
    assert [(j["id"], j["res"], j["walltime"]) for j in data["jobs"][:2]] == [(1, 2, 10.0), (2, 8, 20.0)]
    assert data["jobs"][0]["user"] == 'a"b'
    assert data["profiles"]["2"]["delay"] > 0  # a zero delay is lifted to the minimum
    assert data["jobs"][2]["res"] == 1 and data["jobs"][2]["walltime"] == -1


def test_writer_keeps_the_order_and_the_strings_of_many_batches(tmp_path):
    """More batches than are formatted at once come out in order; strings that JSON must escape
    (quotes, backslashes, control characters) and missing values read back as they were given;
    the services' profile is written once; an empty workload is valid JSON too."""
    names = ['q"uote', "back\\slash", "new\nline", "tab\t", "bell\x07", "café", None]
    expected, path = [], tmp_path / "w.json"
    with WorkloadWriter(path, 4) as writer:
        for batch in range(3 * IN_FLIGHT + 1):
            ids = list(range(batch * 10, batch * 10 + 10))
            rows = {
                "id": ids,
                "subtime": [float(i) for i in ids],
                "delay": [i + 0.5 for i in ids],
                "kind": ["service" if i % 4 == 0 else "task" for i in ids],
                "user": [names[i % len(names)] for i in ids],
            }
            writer.write(pl.DataFrame(rows))
            expected += [dict(zip(rows, values)) for values in zip(*rows.values())]
    data = json.loads(path.read_text())
    assert [(j["id"], j["subtime"], j["kind"], j["user"]) for j in data["jobs"]] == [
        (e["id"], e["subtime"], e["kind"], e["user"]) for e in expected
    ]
    tasks = [e for e in expected if e["kind"] == "task"]
    assert sorted(data["profiles"]) == sorted([str(e["id"]) for e in tasks] + ["service"])
    assert all(data["profiles"][str(e["id"])]["delay"] == e["delay"] for e in tasks)
    assert path.read_text().count('"service":{') == 1
    with WorkloadWriter(tmp_path / "empty.json", 4):
        pass
    assert json.loads((tmp_path / "empty.json").read_text())["jobs"] == []


def test_arrival_scale_stretches_the_same_arrivals_and_nothing_else(tmp_path):
    """Scale 1 is the default to the byte; scale F multiplies every submission time by F (the
    same draws), leaves every other field alone and is recorded in the meta."""
    default = tmp_path / "default.json"
    write_generated_workload(default, preset("google"), load_request_law(), 5, Generation(tasks=3000, nb_res=512))
    one = tmp_path / "one.json"
    write_generated_workload(
        one, preset("google"), load_request_law(), 5, Generation(tasks=3000, nb_res=512, arrival_scale=1.0)
    )
    assert one.read_bytes() == default.read_bytes()
    scaled = tmp_path / "scaled.json"
    factor = 12583 / 512
    write_generated_workload(
        scaled, preset("google"), load_request_law(), 5, Generation(tasks=3000, nb_res=512, arrival_scale=factor)
    )
    base, stretched = json.loads(default.read_text()), json.loads(scaled.read_text())
    assert stretched["meta"]["arrival_scale"] == factor and "arrival_scale" not in base["meta"]
    times = np.array([[a["subtime"], b["subtime"]] for a, b in zip(base["jobs"], stretched["jobs"])])
    np.testing.assert_allclose(times[:, 1], times[:, 0] * factor, rtol=1e-5, atol=1e-5)
    strip = [{key: value for key, value in job.items() if key != "subtime"} for job in base["jobs"]]
    assert strip == [{key: value for key, value in job.items() if key != "subtime"} for job in stretched["jobs"]]
    with pytest.raises(ValueError, match="arrival_scale"):
        write_generated_workload(
            tmp_path / "bad.json", preset("google"), load_request_law(), 5, Generation(tasks=10, arrival_scale=0.0)
        )


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("subtime", -1.0, "subtime -1 must be >= 0"),
        ("subtime", 2.0**43, "subtime 8.79609e+12 must be >= 0 and below 4.398e+12 s"),
        ("delay", 1e44, "delay 1e+44 must be > 0 and at most 4.398e+12 s"),
        ("walltime", 1e300, "walltime 1e+300 must be -1 (none), or > 0"),
        ("walltime", 0.0, "walltime 0 must be -1 (none), or > 0"),
    ],
)
def test_writer_refuses_times_batsim_cannot_take_naming_the_job(tmp_path, column, value, message):
    path = tmp_path / "w.json"
    jobs = pl.DataFrame({"id": [0, 7], "subtime": [0.0, 1.0], "delay": [5.0, 5.0], "walltime": [-1.0, 10.0]})
    jobs = jobs.with_columns(pl.when(pl.col("id") == 7).then(value).otherwise(pl.col(column)).alias(column))
    with pytest.raises(InputFileError) as refused:
        with WorkloadWriter(path, 4) as writer:
            writer.write(jobs)
    assert str(refused.value).startswith(f"{path}: job 7: {message}")
    assert not path.exists()


def test_writer_refuses_times_that_are_not_finite_and_leaves_no_file(tmp_path, monkeypatch):
    path = tmp_path / "w.json"
    jobs = pl.DataFrame({"id": [0, 1], "subtime": [0.0, 1.0], "delay": [5.0, float("inf")]})
    with pytest.raises(InputFileError, match=r"w.json: job 1: delay inf must be > 0 and at most 4.398e\+12 s"):
        with WorkloadWriter(path, 4) as writer:
            writer.write(jobs)
    assert not path.exists()
    with pytest.raises(InputFileError, match=r"job 1: subtime missing must be >= 0"):
        with WorkloadWriter(path, 4) as writer:
            writer.write(pl.DataFrame({"id": [0, 1], "subtime": [0.0, None], "delay": [1.0, 2.0]}))
    assert not path.exists()
    with pytest.raises(ValueError, match="more than 1e\\+15 grains of 1e-12 s"):
        with WorkloadWriter(path, 4, grain=1e-12) as writer:
            writer.write(jobs.head(1).with_columns(delay=pl.lit(1e4)))
    assert not path.exists()
    import batsim_google.generation.batsim_json as batsim_json

    def full_disk(lines, out):
        raise OSError("No space left on device")

    monkeypatch.setattr(batsim_json, "_write_lines", full_disk)  # the batch waits in the background until close
    with pytest.raises(OSError, match="No space left"):
        with WorkloadWriter(path, 4) as writer:
            writer.write(jobs.head(1))
    assert not path.exists()


def test_frequencies_within_the_tolerance_generate_and_no_zero_weight_is_drawn(tmp_path):
    from batsim_google.model.laws import draw_categories
    from batsim_google.model.workload_model import model_from_mapping

    data = preset("google").to_mapping()
    data["classes"][1]["frequency"] = 0.3000005  # sums to 1 within the model's 1e-6
    model = model_from_mapping(data)
    assert write_generated_workload(tmp_path / "w.json", model, load_request_law(), 0, Generation(tasks=100)) == 100
    drawn = draw_categories([(0.5, 0.0), (0.25, 0.75)], np.repeat([0, 1], 10_000), np.random.default_rng(0))
    assert not drawn[:10_000].any()  # a uniform beyond a row's total picks no weight-0 category
    assert abs(drawn[10_000:].mean() - 0.75) < 0.02
    with pytest.raises(ValueError, match="duration must be a number of seconds >= 0 and <= 4.398e"):
        write_generated_workload(tmp_path / "w.json", model, load_request_law(), 0, Generation(duration=float("inf")))


@pytest.mark.parametrize("grain", [1e300, MAX_GRAIN * 1.01, float("inf"), float("nan")])
def test_a_grain_coarser_than_the_rule_is_refused(tmp_path, grain):
    with pytest.raises(ValueError, match=f"grain must be a positive number of seconds, at most {MAX_GRAIN:g}"):
        WorkloadWriter(tmp_path / "x.json", 4, grain=grain)
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        ({}, "give exactly one of tasks"),
        ({"tasks": 10, "duration": 60.0}, "give exactly one of tasks"),
        ({"tasks": -1}, "tasks must be >= 0"),
        ({"tasks": 10, "arrival_scale": -2.0}, "arrival_scale must be > 0"),
    ],
)
def test_a_generation_is_refused_when_made_not_when_written(bounds, message):
    with pytest.raises(ParameterError, match=message):
        Generation(**bounds)
