"""Model validation, model files, presets and the priority mapping."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate

from batsim_google.errors import ParameterError
from batsim_google.model.presets import PRESETS, preset
from batsim_google.model.priority import (
    draw_priorities,
    google_priority,
    priority_law,
    rate_for_centroid,
    rate_for_mean,
    unit_priority,
)
from batsim_google.model.workload_model import load_model, model_from_mapping


def google_mapping() -> dict:
    return preset("google").to_mapping()


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("dynamism",), 0.0, "dynamism must be > 0"),
        (("dynamism",), -1.0, "dynamism must be > 0"),
        (("classes", 0, "frequency"), 0.6, "frequency must sum to 1"),
        (("classes", 1, "disparity"), 1.0, "classes[1].disparity must be > 1"),
        (("classes", 0, "mass"), 0.0, "classes[0].mass must be > 0"),
        (("classes", 1, "lambda"), 0.0, "classes[1].lambda must be > 0"),
        (("classes", 0, "kind"), "batch", "classes[0].kind must be one of"),
        (("classes", 0, "mass"), "big", "classes[0].mass must be a finite number"),
        (("classes", 0, "mass"), float("nan"), "classes[0].mass must be a finite number"),
        (("classes", 1, "name"), "task", "classes[].name must be unique"),
        (("simultaneous",), 1.0, "simultaneous must be in [0, 1"),
        (("simultaneous",), -0.1, "simultaneous must be in [0, 1"),
    ],
)
def test_invalid_parameters_are_named(path, value, message):
    data = google_mapping()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ParameterError, match=message.replace("[", r"\[").replace("]", r"\]")):
        model_from_mapping(data)


def test_unknown_and_missing_keys_are_named():
    data = google_mapping()
    data["classes"][0]["sigma"] = 2
    with pytest.raises(ParameterError, match=r"unknown key\(s\) in classes\[0\]: sigma"):
        model_from_mapping(data)
    data = google_mapping()
    data["dynamic"] = 1
    with pytest.raises(ParameterError, match="unknown model key"):
        model_from_mapping(data)
    data = google_mapping()
    del data["classes"][1]["mass"]
    with pytest.raises(ParameterError, match=r"classes\[1\]\.mass is missing"):
        model_from_mapping(data)


def test_toml_and_json_model_files(tmp_path):
    toml = tmp_path / "model.toml"
    toml.write_text(
        'dynamism = 0.5\n[[classes]]\nname = "short"\nfrequency = 0.25\nmass = 10\n'
        'disparity = 2\nlambda = 4\n[[classes]]\nname = "long"\nkind = "service"\n'
        "frequency = 0.75\nmass = 1000\ndisparity = 5\nlambda = 1\n"
    )
    model = load_model(toml)
    assert model.dynamism == 0.5
    assert [(c.name, c.kind, c.mass) for c in model.classes] == [("short", "task", 10.0), ("long", "service", 1000.0)]
    as_json = tmp_path / "model.json"
    as_json.write_text(json.dumps(model.to_mapping()))
    assert load_model(as_json) == model
    assert "simultaneous" not in model.to_mapping()
    together = model_from_mapping({**model.to_mapping(), "simultaneous": 0.4})
    assert together.simultaneous == 0.4 and model_from_mapping(together.to_mapping()) == together


def test_model_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("dynamism = 0.05\nclasses = [{frequency = 1, mass = 5, disparity = 0.5, lambda = 1}]\n")
    with pytest.raises(ParameterError, match=r"bad\.toml: classes\[0\]\.disparity must be > 1"):
        load_model(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ParameterError, match=r"broken\.json"):
        load_model(broken)
    with pytest.raises(ParameterError, match="must end in .toml or .json"):
        load_model(tmp_path / "model.yaml")


def test_google_preset_is_the_papers():
    model = preset("google")
    assert model.dynamism == 0.05
    assert [(c.kind, c.frequency, c.mass, c.disparity, c.priority_rate) for c in model.classes] == [
        ("task", 0.7, 1700.0, 3.8, 6.0),
        ("service", 0.3, 8000.0, 24.0, 3.0),
    ]


def test_kmeans_presets_follow_tables_8_and_9():
    two = preset("kmeans-2")
    assert [(c.frequency, c.mass, c.disparity) for c in two.classes] == [(0.405, 3508.0, 17.2), (0.595, 2456.0, 6.2)]
    four = preset("kmeans-4")
    assert [c.mass for c in four.classes] == [1911.0, 2482.0, 1662.0, 137630.0]
    assert [c.kind for c in four.classes] == ["task", "task", "task", "service"]
    centroids = [0.9, 0.53, 4.2, 3.39]
    for task_class, centroid in zip(four.classes, centroids):
        assert priority_law(task_class.priority_rate).mean() == pytest.approx(unit_priority(centroid), abs=1e-9)
    with pytest.raises(ValueError, match="unknown preset"):
        preset("nope")
    assert set(PRESETS) == {"google", "kmeans-2", "kmeans-4", "google-2011-cell"}


def test_priority_mapping():
    assert unit_priority(0) == pytest.approx(1 / 12)
    assert unit_priority(11) == 1.0
    assert np.all(np.diff(unit_priority(np.arange(12))) > 0)
    # The rate solves the mean of the truncated exponential, checked by quadrature.
    for mean in (0.05, 0.164, 0.3, 0.45):
        rate = rate_for_mean(mean)
        density = lambda x, rate=rate: rate * np.exp(-rate * x) / (1 - np.exp(-rate))  # noqa: E731
        assert integrate.quad(lambda x, density=density: x * density(x), 0, 1)[0] == pytest.approx(mean, abs=1e-9)
    # Higher centroid priority -> higher mean priority -> lower rate.
    rates = [rate_for_centroid(p) for p in (0.5, 1, 2, 3, 4)]
    assert rates == sorted(rates, reverse=True)
    with pytest.raises(ValueError, match="out of reach"):
        rate_for_centroid(6)


def test_google_priority_is_the_inverse_of_unit_priority_and_bands_drawn_priorities():
    from batsim_google.model.priority import google_priority

    levels = np.arange(12)
    assert google_priority(unit_priority(levels)).tolist() == levels.tolist()
    assert google_priority(np.round(unit_priority(levels), 6)).tolist() == levels.tolist()  # 6 decimals
    # a drawn priority in ]p / 12, (p + 1) / 12] is Google's p: 0.17 is above 2/12, 0.16 below
    assert google_priority([1e-9, 0.16, 0.17, 0.5, 0.75, 1.0]).tolist() == [0, 1, 2, 5, 8, 11]
    assert np.isnan(google_priority(np.nan))


def test_a_class_may_draw_googles_levels_instead_of_the_truncated_exponential(tmp_path):
    """``priorities``: an empirical law over Google's levels, drawn exactly (one level per task at
    its weight) and mapped to (p + 1) / 12; a model file gives it or ``lambda``, not both."""
    data = google_mapping()
    levels = {"law": "empirical", "values": [0, 9, 11], "weights": [0.5, 0.4, 0.1]}
    del data["classes"][1]["lambda"]
    data["classes"][1]["priorities"] = levels
    model = model_from_mapping(data)
    assert model.classes[1].priority_rate is None and model.classes[1].priorities.values == (0, 9, 11)
    assert model_from_mapping(model.to_mapping()) == model
    index = np.repeat([0, 1], 100_000)
    drawn = model.draw_priorities(index, np.random.default_rng(1))
    counts = np.bincount(google_priority(drawn[index == 1]).astype(int), minlength=12)
    assert counts[[0, 9, 11]] / 100_000 == pytest.approx([0.5, 0.4, 0.1], abs=0.005)
    assert counts[[0, 9, 11]].sum() == 100_000  # no other level
    # the other class still draws its truncated exponential: its mean is the law's
    assert drawn[index == 0].mean() == pytest.approx(priority_law(model.classes[0].priority_rate).mean(), rel=0.01)
    both = google_mapping()
    both["classes"][1]["priorities"] = levels
    with pytest.raises(ParameterError, match=r"classes\[1\]: give lambda .* or priorities, not both"):
        model_from_mapping(both)
    bad = google_mapping()
    del bad["classes"][1]["lambda"]
    bad["classes"][1]["priorities"] = {**levels, "values": [0, 9, 12]}
    with pytest.raises(ParameterError, match=r"classes\[1\]\.priorities\.values\[2\]"):
        model_from_mapping(bad)
    neither = google_mapping()
    del neither["classes"][1]["lambda"]
    with pytest.raises(ParameterError, match=r"classes\[1\]\.lambda is missing"):
        model_from_mapping(neither)


def test_a_model_without_levels_draws_its_priorities_as_before():
    model = preset("google")
    index = np.random.default_rng(0).integers(0, 2, 1000)
    rates = np.array([c.priority_rate for c in model.classes])
    expected = draw_priorities(rates[index], np.random.default_rng(5))
    assert np.array_equal(model.draw_priorities(index, np.random.default_rng(5)), expected)


def test_a_class_may_draw_its_own_requests(tmp_path):
    """``requests``: a class's own (cpu, memory) pairs with their counts, drawn by its tasks and its
    warm tasks at their weights instead of the request law's; a model file round-trips it and a bad
    pair is refused by name."""
    from batsim_google.generation.generator import generate
    from batsim_google.generation.warm_start import warm_start
    from batsim_google.model.request_law import load_request_law
    from batsim_google.model.workload_model import save_model

    data = google_mapping()
    data["classes"][1]["requests"] = {"cpu": [0.25, 0.5], "memory": [0.125, 0.75], "count": [3.0, 1.0]}
    model = model_from_mapping(data)
    save_model(model, tmp_path / "m.toml")
    assert load_model(tmp_path / "m.toml") == model
    law = load_request_law()
    tasks = next(generate(model, law, np.random.default_rng(2), tasks=20_000))
    own = tasks.class_index == 1
    assert set(zip(tasks.cpu[own], tasks.memory[own])) == {(0.25, 0.125), (0.5, 0.75)}
    assert np.mean(tasks.cpu[own] == 0.5) == pytest.approx(0.25, abs=0.02)
    shipped = law.for_kind("task")
    assert set(tasks.cpu[~own]) <= set(shipped.cpu)  # the other class draws the request law's
    warm = warm_start(model, law, np.random.default_rng(3))
    assert set(warm.memory[warm.class_index == 1]) == {0.125, 0.75}
    for key, values, message in [
        ("count", [3.0, 0.0], r"classes\[1\]\.requests\.count\[1\] must be a finite number > 0"),
        ("memory", [0.125], r"classes\[1\]\.requests\.memory must be one number per cpu request"),
        ("cpu", [0.25, 1.5], r"classes\[1\]\.requests\.cpu\[1\] must be in \[0, 1\]"),
    ]:
        bad = google_mapping()
        bad["classes"][1]["requests"] = {**data["classes"][1]["requests"], key: values}
        with pytest.raises(ParameterError, match=message):
            model_from_mapping(bad)
