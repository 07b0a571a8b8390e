"""Parallel jobs: width groups, the model-file syntax for widths and per-group makespan laws, the
generator's draws against the exact laws, and their recovery by the fit.

Exact laws are written here with scipy directly; each statistical check also rejects a slightly
wrong law, with fixed seeds.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats
from width_groups import expected_pow2_name

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.fitting.model_fit import (
    CONSTANT_CLASS,
    MIN_GROUP_TASKS,
    FitSettings,
    fit_model,
)
from batsim_google.generation.generator import generate
from batsim_google.model.laws import Empirical, Exponential, Gamma, LogNormal
from batsim_google.model.request_law import load_request_law
from batsim_google.model.widths import group_names, is_group_name
from batsim_google.model.workload_model import TaskClass, WorkloadModel, load_model, model_from_mapping, save_model

ALPHA = 0.001
FAST = ["lognormal-ml", "gamma-ml", "exponential", "hyperexp2-ml"]

WIDTHS = (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
WEIGHTS = (0.3, 0.2, 0.05, 0.15, 0.1, 0.1, 0.06, 0.04)
# Group "1" and "5-7" have their own laws; widths 2, 3, 4, 8, 9-15 and 16 draw from the class's law.
GROUP_LAWS = {"1": Exponential(0.02), "5-7": Gamma(3.0, 400.0), "9-15": LogNormal(8.0, 0.5)}
CLASS_LAW = LogNormal(5.0, 1.2)


def test_groups_are_the_powers_of_two_and_the_widths_between():
    widths = np.arange(1, 5000)
    assert list(group_names(widths, "pow2")) == [expected_pow2_name(int(w)) for w in widths]
    assert list(group_names(widths, "width")) == [str(w) for w in widths]
    assert list(dict.fromkeys(group_names(np.arange(1, 20), "pow2"))) == [
        "1",
        "2",
        "3",
        "4",
        "5-7",
        "8",
        "9-15",
        "16",
        "17-31",
    ]
    assert all(is_group_name(n, "pow2") for n in ["1", "3", "5-7", "64", "65-127"])
    assert not any(is_group_name(n, "pow2") for n in ["0", "3-3", "5-8", "4-7", "07", "9-15 ", "x"])
    assert is_group_name("37", "width") and not is_group_name("5-7", "width")


def _parallel_model(groups: str | None = "pow2", laws=GROUP_LAWS) -> WorkloadModel:
    grouped = {"groups": groups, "makespan_by_group": dict(laws)} if groups else {}
    return WorkloadModel(
        dynamism=10.0,
        classes=(
            TaskClass(
                "par", "task", 0.8, None, None, 3.0, makespan=CLASS_LAW, width=Empirical(WIDTHS, WEIGHTS), **grouped
            ),
            TaskClass("seq", "task", 0.2, 500.0, 2.0, 5.0),
        ),
    )


def test_model_files_spell_widths_and_group_laws(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        'dynamism = 10\n[[classes]]\nname = "par"\nfrequency = 1\nlambda = 2\nmass = 1000\ndisparity = 3\n'
        'width = {law = "empirical", values = [1, 2, 6, 16], weights = [0.4, 0.3, 0.2, 0.1]}\n'
        'groups = "pow2"\n[classes.makespan_by_group]\n"1" = {law = "exponential", rate = 0.1}\n'
        '"5-7" = {law = "gamma", shape = 2, scale = 500}\n'
    )
    model = load_model(path)
    task_class = model.classes[0]
    assert task_class.width == Empirical((1.0, 2.0, 6.0, 16.0), (0.4, 0.3, 0.2, 0.1))
    assert task_class.groups == "pow2" and task_class.makespan_by_group == {
        "1": Exponential(0.1),
        "5-7": Gamma(2.0, 500.0),
    }
    assert model.max_width == 16
    # Widths 2 and 16 have no group law: the class's log-normal (index 0).
    assert list(task_class.makespan_law_index(np.array([1, 2, 5, 6, 7, 16]))) == [1, 0, 2, 2, 2, 0]
    for name in ("copy.toml", "copy.json"):
        save_model(model, tmp_path / name)
        assert load_model(tmp_path / name) == model
    assert "values = [\n    1,\n" in (tmp_path / "copy.toml").read_text()  # widths written as integers


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"groups": "pow2", "makespan_by_group": {"1": {"law": "exponential", "rate": 1}}, "width": None},
            r"classes\[0\]\.groups needs classes\[0\]\.width and classes\[0\]\.makespan_by_group",
        ),
        (
            {"makespan_by_group": {"1": {"law": "exponential", "rate": 1}}},
            r"classes\[0\]\.makespan_by_group needs classes\[0\]\.groups",
        ),
        ({"groups": "pow2"}, r"classes\[0\]\.groups needs"),
        (
            {"groups": "log", "makespan_by_group": {"1": {"law": "exponential", "rate": 1}}},
            r"classes\[0\]\.groups must be one of width, pow2",
        ),
        (
            {"groups": "pow2", "makespan_by_group": {"5-8": {"law": "exponential", "rate": 1}}},
            r'classes\[0\]\.makespan_by_group\["5-8"\]: not a group of groups = \'pow2\'',
        ),
        (
            {"groups": "pow2", "makespan_by_group": {"9-15": {"law": "exponential", "rate": 1}}},
            r'classes\[0\]\.makespan_by_group\["9-15"\]: no width of classes\[0\]\.width is in this group',
        ),
        (
            {"groups": "width", "makespan_by_group": {"5-7": {"law": "exponential", "rate": 1}}},
            r"not a group of groups = 'width'",
        ),
        (
            {"groups": "width", "makespan_by_group": {"6": {"law": "exponential", "rate": -1}}},
            r'classes\[0\]\.makespan_by_group\["6"\]\.rate must be > 0',
        ),
        (
            {"width": {"law": "empirical", "values": [1, 2.5], "weights": [0.5, 0.5]}},
            r"classes\[0\]\.width\.values\[1\] must be an integer >= 1",
        ),
        (
            {"width": {"law": "empirical", "values": [0, 2], "weights": [0.5, 0.5]}},
            r"classes\[0\]\.width\.values\[0\] must be an integer >= 1",
        ),
        (
            {"width": {"law": "empirical", "values": [1, 2], "weights": [0.5, 0.6]}},
            r"classes\[0\]\.width\.weights must sum to 1",
        ),
        (
            {"width": {"law": "empirical", "values": [1, 1], "weights": [0.5, 0.5]}},
            r"classes\[0\]\.width\.values must be distinct",
        ),
        (
            {"width": {"law": "empirical", "values": [1, 2], "weights": [1.0]}},
            r"classes\[0\]\.width\.weights must be a list of 2 numbers",
        ),
        ({"width": {"law": "gamma", "shape": 1, "scale": 1}}, r"classes\[0\]\.width\.law must be 'empirical'"),
    ],
)
def test_invalid_widths_and_groups_are_named(changes, message):
    raw = {
        "name": "c",
        "frequency": 1.0,
        "lambda": 2.0,
        "mass": 100,
        "disparity": 2,
        "width": {"law": "empirical", "values": [1, 2, 6], "weights": [0.5, 0.3, 0.2]},
    }
    raw.update(changes)
    raw = {key: value for key, value in raw.items() if value is not None}
    with pytest.raises(ParameterError, match=message):
        model_from_mapping({"dynamism": 1.0, "classes": [raw]})


def _draw(model: WorkloadModel, seed: int, tasks: int) -> dict[str, np.ndarray]:
    batches = list(generate(model, load_request_law(), np.random.default_rng(seed), tasks=tasks))
    return {
        name: np.concatenate([getattr(b, name) for b in batches])
        for name in ("subtime", "class_index", "width", "makespan")
    }


def test_generator_draws_widths_from_the_empirical_law_and_makespans_from_their_groups_law():
    drawn = _draw(_parallel_model(), seed=7, tasks=300_000)
    parallel = drawn["class_index"] == 0
    assert np.all(drawn["width"][~parallel] == 1)  # a class without a width law: one resource
    width, makespan = drawn["width"][parallel], drawn["makespan"][parallel]
    counts = np.array([(width == w).sum() for w in WIDTHS])
    assert counts.sum() == parallel.sum()  # no other width is ever drawn
    assert stats.chisquare(counts, np.array(WEIGHTS) * counts.sum()).pvalue > ALPHA
    wrong = np.array(WEIGHTS) + np.array([0.01, -0.01, 0, 0, 0, 0, 0, 0])
    assert stats.chisquare(counts, wrong * counts.sum()).pvalue < 1e-6
    exact = {
        "1": lambda x: 1 - np.exp(-0.02 * x),
        "5-7": stats.gamma(3.0, scale=400.0).cdf,
        "9-15": stats.lognorm(0.5, scale=np.exp(8.0)).cdf,
        "others": stats.lognorm(1.2, scale=np.exp(5.0)).cdf,
    }
    wrong = {
        "1": lambda x: 1 - np.exp(-0.0206 * x),
        "5-7": stats.gamma(3.1, scale=400.0).cdf,
        "9-15": stats.lognorm(0.5, scale=np.exp(8.03)).cdf,
        "others": stats.lognorm(1.2, scale=np.exp(5.05)).cdf,
    }
    names = np.array([expected_pow2_name(int(w)) for w in WIDTHS])[np.searchsorted(WIDTHS, width)]
    for group in exact:
        members = ~np.isin(names, list(GROUP_LAWS)) if group == "others" else names == group
        assert members.sum() > 10_000
        assert stats.kstest(makespan[members], exact[group]).pvalue > ALPHA, group
        assert stats.kstest(makespan[members], wrong[group]).pvalue < 1e-6, group
    sequential = drawn["makespan"][~parallel]
    assert stats.kstest(sequential, stats.lognorm(np.sqrt(2 * np.log(2.0)), scale=250.0).cdf).pvalue > ALPHA


def test_per_width_groups_draw_each_width_from_its_law():
    laws = {"2": Exponential(0.001), "6": Exponential(0.1)}
    drawn = _draw(_parallel_model("width", laws), seed=3, tasks=200_000)
    parallel = drawn["class_index"] == 0
    width, makespan = drawn["width"][parallel], drawn["makespan"][parallel]
    for w, rate in ((2, 0.001), (6, 0.1)):
        assert stats.kstest(makespan[width == w], lambda x, rate=rate: 1 - np.exp(-rate * x)).pvalue > ALPHA
    assert stats.kstest(makespan[width == 3], stats.lognorm(1.2, scale=np.exp(5.0)).cdf).pvalue > ALPHA


def _table(model: WorkloadModel, tasks: int, seed: int) -> pl.DataFrame:
    drawn = _draw(model, seed, tasks)
    return pl.DataFrame(
        {
            "subtime": drawn["subtime"],
            "makespan": drawn["makespan"],
            "kind": "task",
            "priority": 0.2,
            "width": drawn["width"],
        }
    )


def test_fit_recovers_the_width_law_and_the_group_laws():
    truth = WorkloadModel(
        dynamism=10.0,
        classes=(
            TaskClass(
                "par",
                "task",
                1.0,
                None,
                None,
                3.0,
                makespan=CLASS_LAW,
                width=Empirical(WIDTHS, WEIGHTS),
                groups="pow2",
                makespan_by_group={"1": Gamma(0.7, 3000.0), "5-7": Gamma(3.0, 400.0)},
            ),
        ),
    )
    table = _table(truth, 60_000, seed=2)
    rare = pl.DataFrame(
        {
            "subtime": [1e9 + i for i in range(MIN_GROUP_TASKS - 1)],
            "makespan": 50.0,
            "kind": "task",
            "priority": 0.2,
            "width": 40,
        }
    )
    table = pl.concat([table, rare], how="vertical_relaxed")
    result = fit_model(table, FitSettings(methods=FAST, groups="pow2", profile="none"))
    widths = result.classes[0].widths
    # The empirical law is the sample's histogram, exactly.
    histogram = table.group_by("width").len().sort("width")
    assert widths.law.values == tuple(float(w) for w in histogram["width"])
    assert widths.law.weights == pytest.approx((histogram["len"] / table.height).to_list(), rel=1e-12)
    for value, weight in zip(WIDTHS, WEIGHTS):
        assert abs(widths.law.weights[widths.law.values.index(value)] - weight) < 4 * np.sqrt(weight / 60_000)
    # Every group of >= 20 tasks has its law; the 19 jobs of width 40 (group 33-63) fall back.
    groups = {g.name: g for g in widths.groups}
    assert list(groups) == ["1", "2", "3", "4", "5-7", "8", "9-15", "16"]
    assert (widths.small_groups, widths.small_group_tasks) == (1, MIN_GROUP_TASKS - 1)
    assert sum(g.tasks for g in groups.values()) + widths.small_group_tasks == table.height
    for name, shape, scale in (("1", 0.7, 3000.0), ("5-7", 3.0, 400.0)):
        law = groups[name].best.law
        assert (
            isinstance(law, Gamma)
            and law.shape == pytest.approx(shape, rel=0.05)
            and law.scale == pytest.approx(scale, rel=0.08)
        )
    law = groups["2"].best.law  # the class's log-normal, fitted on that group alone
    assert isinstance(law, LogNormal) and (law.mu, law.sigma) == pytest.approx((5.0, 1.2), rel=0.03)
    model = result.model.classes[0]
    assert model.groups == "pow2" and set(model.makespan_by_group) == set(groups) and model.width == widths.law
    assert model.makespan_law_index(np.array([40]))[0] == 0  # the small group draws from the class's law


def test_fit_without_groups_keeps_one_makespan_law_and_groups_need_widths():
    table = _table(_parallel_model(None), 5_000, seed=4)
    result = fit_model(table, FitSettings(methods=FAST, profile="none"))
    assert result.classes[0].widths.grouping is None and result.model.classes[0].groups is None
    assert result.model.classes[0].width is not None
    with pytest.raises(InputFileError, match=r"per group of widths \(pow2\) need a width column"):
        fit_model(table.drop("width"), FitSettings(methods=FAST, groups="pow2"))
    bad = table.with_columns(pl.when(pl.int_range(pl.len()) < 3).then(0).otherwise(pl.col("width")).alias("width"))
    assert fit_model(bad, FitSettings(methods=FAST, profile="none")).table.rows.skipped == {
        "width is not an integer in 1..1000000": 3
    }


def test_a_group_of_equal_makespans_draws_from_the_class_law_and_a_class_of_them_is_set_aside():
    table = _table(_parallel_model(None), 5_000, seed=4)
    repeated = pl.DataFrame(
        {  # one job run 30 times: a group, but no continuous law
            "subtime": [1e9 + i for i in range(30)],
            "makespan": 50.0,
            "kind": "task",
            "priority": 0.2,
            "width": 100,
        }
    )
    result = fit_model(
        pl.concat([table, repeated], how="vertical_relaxed"), FitSettings(methods=FAST, groups="pow2", profile="none")
    )
    widths = result.classes[0].widths
    assert widths.constant_groups == ("65-127",) and "65-127" not in {g.name for g in widths.groups}
    assert result.model.classes[0].makespan_law_index(np.array([100]))[0] == 0  # the class's law
    with pytest.raises(InputFileError, match=r"no class of 20 tasks or more whose makespans differ"):
        fit_model(repeated, FitSettings(methods=FAST, profile="none"))
    services = (
        table.filter(pl.col("kind") == "task").head(400).with_columns(kind=pl.lit("service"), makespan=pl.lit(7.0))
    )
    both = fit_model(pl.concat([table, services]), FitSettings(methods=FAST, profile="none"))
    assert [c.name for c in both.classes] == ["task"]  # the constant class is set aside, counted
    assert both.table.rows.skipped == {CONSTANT_CLASS: 400} and both.table.rows.balanced
    with pytest.raises(InputFileError, match=r"class\(es\) \['service'\]: all makespans equal"):
        fit_model(pl.concat([table, services]), FitSettings(methods=FAST, profile="none", strict=True))
