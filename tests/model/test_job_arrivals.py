"""Job-level arrivals in model files: validation with named errors, and the round trip."""

from __future__ import annotations

import dataclasses
import json

import pytest
from job_models import job_model, profiled_job_model

from batsim_google.errors import ParameterError
from batsim_google.model.workload_model import load_model, model_from_mapping, save_model


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_job_model_file_reads_back_as_written(tmp_path, suffix):
    model = job_model()
    path = tmp_path / f"jobs{suffix}"
    save_model(model, path)
    assert load_model(path).jobs == model.jobs


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("simultaneous",), 1.0, "jobs.simultaneous must be in [0, 1)"),
        (("zero_spread",), 1.5, "jobs.zero_spread must be in [0, 1]"),
        (("classes", 0, "frequency"), 0.9, "jobs.classes[].frequency must sum to 1"),
        (("classes", 1, "mix"), [0.5, 0.6], "jobs.classes[1].mix must be summing to 1"),
        (("classes", 1, "mix"), [1.0], "jobs.classes[1].mix must be 2 shares, one per class"),
        (("classes", 0, "tasks", "values"), [1, 2.5, 40], "jobs.classes[0].tasks.values[1] must be an integer >= 1"),
        (("classes", 0, "tasks", "law"), "gamma", "jobs.classes[0].tasks.law must be 'empirical'"),
        (("interarrival", "law"), "normal", "jobs.interarrival.law must be one of"),
        (("spread",), None, "jobs.spread is needed when jobs.zero_spread < 1"),
        (("classes",), [], "jobs.classes must list 2 job classes"),
        (("colour",), 1, "unknown key(s) in jobs: colour"),
    ],
)
def test_invalid_job_parameters_are_named(path, value, message):
    data = json.loads(json.dumps(job_model().to_mapping()))
    target = data["jobs"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ParameterError) as error:
        model_from_mapping(data)
    assert message in str(error.value)


def test_models_without_jobs_have_no_jobs_key():
    assert "jobs" not in dataclasses.replace(job_model(), jobs=None).to_mapping()
    assert model_from_mapping(job_model().to_mapping()).jobs == job_model().jobs


def test_a_job_profile_reads_back_and_must_match_the_task_profile(tmp_path):
    model = profiled_job_model()
    save_model(model, tmp_path / "m.toml")
    assert load_model(tmp_path / "m.toml").jobs.profile == model.jobs.profile
    data = json.loads(json.dumps(model.to_mapping()))
    data["jobs"]["profile"]["rates"] = [1.0] * 24
    with pytest.raises(ParameterError, match=r"jobs.profile.rates must be 48 rates, one per bin of arrival_profile"):
        model_from_mapping(data)
    data["jobs"]["profile"] = {"period": 3600.0, "rates": [1.0] * 48}
    with pytest.raises(ParameterError, match=r"jobs.profile.period must be arrival_profile's period \(86400 s\)"):
        model_from_mapping(data)
    del data["arrival_profile"]
    with pytest.raises(ParameterError, match="jobs.profile needs the model's arrival_profile"):
        model_from_mapping(data)
