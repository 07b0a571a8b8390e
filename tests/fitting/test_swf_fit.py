"""Fitting the real KTH SP2 log (SWF): accounting of its lines and jobs, the width law against the
log's histogram, the groups of widths and their sizes, and generation from the fitted model.

Expectations are computed from a plain parse of the log (:func:`conftest.plain_swf_jobs`), not
from the package's reader.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import plain_swf_jobs
from width_groups import expected_pow2_name

from batsim_google.cli import main
from batsim_google.fitting.model_fit import (
    MIN_GROUP_TASKS,
    FitSettings,
    fit_model,
)
from batsim_google.fitting.swf_input import swf_task_table
from batsim_google.model.workload_model import load_model
from batsim_google.trace.row_accounting import RowAccount

FAST = "lognormal-ml,gamma-ml,exponential,lomax-ml"


@pytest.fixture(scope="module")
def kth_jobs(kth) -> dict:
    """Per job of the log: its width (allocated processors, else requested; -1 unknown) and run
    time, and the widths of the jobs a fit can use (run time > 0, width >= 1)."""
    plain = plain_swf_jobs(kth)
    width = [line[4] if line[4] != -1 else line[7] for line in plain]
    run = [line[3] for line in plain]
    bad_run = sum(r <= 0 for r in run)  # -1 (unknown) or 0
    bad_width = sum(r > 0 and w < 1 for r, w in zip(run, width))
    usable = [int(w) for r, w in zip(run, width) if r > 0 and w >= 1]
    return {"lines": len(plain), "bad_run": bad_run, "bad_width": bad_width, "widths": Counter(usable)}


@pytest.fixture(scope="module")
def kth_fit(kth, tmp_path_factory):
    folder = tmp_path_factory.mktemp("kth")
    model, report = folder / "kth.toml", folder / "kth.json"
    outcome = CliRunner().invoke(
        main,
        [
            "fit",
            str(kth),
            "-o",
            str(model),
            "--groups",
            "pow2",
            "--laws",
            FAST,
            "--report",
            str(report),
            "--seed",
            "3",
        ],
    )
    assert outcome.exit_code == 0, outcome.output
    return outcome.output, model, json.loads(report.read_text())


def test_every_line_and_job_of_the_log_is_accounted_for(kth_fit, kth_jobs):
    output, _, report = kth_fit
    lines, bad_run, bad_width = kth_jobs["lines"], kth_jobs["bad_run"], kth_jobs["bad_width"]
    assert (bad_run, bad_width) == (8, 1)  # the cleaned KTH log: 8 jobs of run time 0, 1 of unknown width
    assert f"swf lines: rows read {lines} = used {lines} + skipped 0\n" in output
    used = lines - bad_run - bad_width
    assert (
        f"fit table: rows read {lines} = used {used} + skipped {bad_run + bad_width} "
        f"(makespan is missing, not finite, <= 0 or past 2^42 s: {bad_run}, width is not an integer in 1..1000000: {bad_width})"
    ) in output
    assert report["rows"] == {
        "read": lines,
        "used": used,
        "incidents": [],
        "skipped": {
            "makespan is missing, not finite, <= 0 or past 2^42 s": bad_run,
            "width is not an integer in 1..1000000": bad_width,
        },
    }
    assert "SWF has no priorities: every job gets priority 0.5" in output


def test_width_law_is_the_logs_histogram_and_groups_have_their_sizes(kth_fit, kth_jobs):
    _, model_file, report = kth_fit
    model = load_model(model_file)
    histogram = kth_jobs["widths"]
    total = sum(histogram.values())
    [job_class] = model.classes  # every SWF job is a finite task: one a-priori class
    assert (job_class.name, job_class.kind, job_class.groups) == ("task", "task", "pow2")
    assert job_class.width.values == tuple(float(w) for w in sorted(histogram))
    assert job_class.width.weights == pytest.approx([histogram[w] / total for w in sorted(histogram)], rel=1e-12)
    assert model.max_width == 100  # the machine's 100 processors (MaxProcs)
    groups = Counter()
    for width, count in histogram.items():
        groups[expected_pow2_name(width)] += count
    assert min(groups.values()) >= MIN_GROUP_TASKS  # every power-of-two group of KTH is large enough
    [fitted] = report["classes"]
    assert {g["group"]: g["tasks"] for g in fitted["widths"]["group_fits"]} == groups
    assert [g["group"] for g in fitted["widths"]["group_fits"]] == [
        "1",
        "2",
        "3",
        "4",
        "5-7",
        "8",
        "9-15",
        "16",
        "17-31",
        "32",
        "33-63",
        "64",
        "65-127",
    ]
    assert (fitted["widths"]["small_groups"], fitted["widths"]["small_group_tasks"]) == (0, 0)
    assert set(job_class.makespan_by_group) == set(groups)
    # The generated jobs take the log's widths in its proportions (two-sample KS on widths).
    assert report["fidelity"]["classes"][0]["width_ks"] < 0.02


def test_per_width_groups_leave_small_widths_to_the_class_law(kth, kth_jobs):
    account = RowAccount()
    result = fit_model(
        swf_task_table(kth, account), FitSettings(methods=FAST.split(","), groups="width", profile="none")
    )
    widths = result.classes[0].widths
    histogram = kth_jobs["widths"]
    small = {w: n for w, n in histogram.items() if n < MIN_GROUP_TASKS}
    assert (widths.small_groups, widths.small_group_tasks) == (len(small), sum(small.values()))
    assert {g.name: g.tasks for g in widths.groups} == {str(w): n for w, n in histogram.items() if n >= MIN_GROUP_TASKS}
    task_class = result.model.classes[0]
    law_index = task_class.makespan_law_index(np.array(sorted(histogram)))
    assert [bool(i) for i in law_index] == [histogram[w] >= MIN_GROUP_TASKS for w in sorted(histogram)]


def test_the_fitted_model_generates_jobs_of_the_logs_widths(kth_fit, tmp_path):
    _, model_file, _ = kth_fit
    model = load_model(model_file)
    out = tmp_path / "w.json"
    refused = CliRunner().invoke(
        main, ["generate", "--model", str(model_file), "--tasks", "100", "--nb-res", "64", "-o", str(out)]
    )
    assert refused.exit_code == 2 and "take up to 100 resources, more than nb_res = 64" in refused.output
    outcome = CliRunner().invoke(
        main, ["generate", "--model", str(model_file), "--tasks", "5000", "--nb-res", "100", "-o", str(out)]
    )
    assert outcome.exit_code == 0, outcome.output
    jobs = json.loads(out.read_text())["jobs"]
    assert {job["res"] for job in jobs} <= {int(v) for v in model.classes[0].width.values}
    assert sum(job["res"] == 1 for job in jobs) / len(jobs) == pytest.approx(
        model.classes[0].width.weights[0], abs=0.025
    )
