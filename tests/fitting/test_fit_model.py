"""From a table or a Batsim workload to a model and back: input checks, a-priori and k-means
classes, the fit command, fidelity on synthetic data and on the real trace sample."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import stats

from batsim_google.cli import main
from batsim_google.errors import InputFileError, ParameterError
from batsim_google.fitting.batsim_input import read_batsim_workload
from batsim_google.fitting.fidelity import fidelity_report
from batsim_google.fitting.law_fitters import FITTERS
from batsim_google.fitting.model_fit import (
    MIN_CLASS_TASKS,
    SMALL_CLASS,
    FitSettings,
    fit_model,
)
from batsim_google.fitting.table import task_table
from batsim_google.fitting.trace_input import trace_task_table
from batsim_google.generation.generator import generate
from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.laws import Gamma, HyperExponential, LogNormal, law_from_mapping
from batsim_google.model.presets import preset
from batsim_google.model.priority import rate_for_centroid
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import TaskClass, WorkloadModel, load_model
from batsim_google.trace.row_accounting import RowAccount, TraceError

FAST = ["lognormal-ml", "lognormal-mean-median", "gamma-ml", "hyperexp2-ml", "lomax-ml"]


@pytest.fixture(scope="module")
def google_workload(tmp_path_factory):
    path = tmp_path_factory.mktemp("fit") / "google.json"
    write_generated_workload(path, preset("google"), load_request_law(), 21, Generation(tasks=60_000))
    return path


def test_task_table_counts_what_it_skips_and_strict_mode_names_the_row():
    frame = pl.DataFrame(
        {
            "subtime": [0.0, 1.0, 2.0, None, 4.0, 5.0],
            "makespan": [10.0, -1.0, 3.0, 4.0, 5.0, 6.0],
            "end_event": ["FINISH", "KILL", "FAIL", "4", "5", "KILL"],
            "google_priority": [0, 11, 3, 3, 4.5, 9],
            "scheduling_class": [0, 1, 2, 3, 3, 7],
        },
        strict=False,
    )
    table = task_table(frame, RowAccount())
    assert (table.rows.read, table.rows.used, table.frame.height) == (6, 1, 1) and table.rows.balanced
    assert table.rows.skipped == {
        "end event is not FINISH or KILL": 1,
        "google_priority is not an integer in 0..11": 1,
        "makespan is missing, not finite, <= 0 or past 2^42 s": 1,
        "scheduling_class is not an integer in 0..3": 1,
        "subtime is missing, not finite or past 2^42 s": 1,
    }
    assert table.frame.row(0, named=True) == {
        "subtime": 0.0,
        "makespan": 10.0,
        "kind": "task",
        "priority": 1 / 12,
        "google_priority": 0,
        "scheduling_class": 0,
    }
    # Strict: the first bad row, numbered from 1, whatever its reason.
    with pytest.raises(TraceError, match=r"^tasks.csv:2: makespan is missing, not finite, <= 0 or past 2\^42 s$"):
        task_table(frame, RowAccount(strict=True), "tasks.csv")
    with pytest.raises(InputFileError, match=r"lacks column\(s\): makespan, kind or end_event"):
        task_table(pl.DataFrame({"subtime": [1.0], "priority": [0.5]}), RowAccount())


def test_batsim_reader_gives_delays_for_tasks_and_walltimes_for_services(tmp_path):
    path = tmp_path / "w.json"
    write_generated_workload(path, preset("google"), load_request_law(), 4, Generation(tasks=3000, grain=5))
    data = json.loads(path.read_text())
    table = read_batsim_workload(path)
    assert table.height == 3000 and "scheduling_class" not in table.columns
    for job, row in zip(data["jobs"], table.iter_rows(named=True)):
        expected = job["walltime"] if job["kind"] == "service" else data["profiles"][job["profile"]]["delay"]
        assert (row["subtime"], row["makespan"], row["kind"], row["priority"], row["class"]) == (
            job["subtime"],
            expected,
            job["kind"],
            job["priority"],
            job["class"],
        )


def test_apriori_fit_recovers_the_generating_model(google_workload):
    truth = preset("google")
    result = fit_model(read_batsim_workload(google_workload), FitSettings(methods=FAST))
    assert result.table.rows.read == result.table.rows.used == 60_000 and result.table.rows.skipped == {}
    model = result.model
    for fitted, true, fit in zip(model.classes, truth.classes, result.classes):
        assert (fitted.name, fitted.kind) == (true.name, true.kind)
        assert abs(fitted.frequency - true.frequency) < 4 * np.sqrt(true.frequency * (1 - true.frequency) / 60_000)
        assert fit.priority.rate == pytest.approx(true.priority_rate, rel=0.05)
        assert fit.disparity == pytest.approx(true.disparity, rel=0.15)  # empirical mean / median
        assert fit.best.ks < 0.01
        assert isinstance(fit.best.law, LogNormal)  # a log-normal is written as mass and disparity
        assert fitted.makespan is None and fitted.mass == pytest.approx(true.mass, rel=0.1)
    # Inter-arrivals: the paper's Lomax(4) of mean 0.05 s.
    assert result.arrivals.best.method == "lomax-ml"
    assert model.interarrival.shape == pytest.approx(4.0, rel=0.1)
    assert model.interarrival.mean() == pytest.approx(truth.dynamism, rel=0.02)
    assert model.arrival_profile is None  # 50 minutes of arrivals: no day to fit a profile on


def test_small_classes_are_skipped_and_counted_or_refused_in_strict_mode():
    rng = np.random.default_rng(0)
    count = 500
    frame = pl.DataFrame(
        {
            "subtime": np.cumsum(rng.exponential(1.0, count)),
            "makespan": rng.lognormal(5, 1, count),
            "kind": ["service" if i < MIN_CLASS_TASKS - 1 else "task" for i in range(count)],
            "priority": rng.uniform(0.01, 0.5, count),
        }
    )
    result = fit_model(frame, FitSettings(methods=FAST))
    assert [c.name for c in result.model.classes] == ["task"]
    rows = result.table.rows
    assert rows.skipped == {SMALL_CLASS: MIN_CLASS_TASKS - 1} and rows.balanced
    assert result.table.frame.height == rows.used == count - (MIN_CLASS_TASKS - 1) and rows.read == count
    with pytest.raises(InputFileError, match="fewer than 20 tasks"):
        fit_model(frame, FitSettings(methods=FAST, strict=True))


def _three_clusters(seed: int = 5) -> pl.DataFrame:
    """Tasks in three well-separated groups of (makespan, Google priority, scheduling class)."""
    rng = np.random.default_rng(seed)
    sizes, frames = (6000, 3000, 1000), []
    for size, (mass, priority, klass, kind) in zip(
        sizes, [(300, 0, 0, "FINISH"), (2000, 9, 2, "KILL"), (60_000, 4, 3, "FINISH")]
    ):
        frames.append(
            pl.DataFrame(
                {
                    "makespan": rng.gamma(30.0, mass / 30.0, size),
                    "google_priority": rng.choice([priority, min(priority + 1, 11)], size, p=[0.8, 0.2]),
                    "scheduling_class": np.full(size, klass),
                    "end_event": [kind] * size,
                }
            )
        )
    frame = pl.concat(frames).sample(fraction=1.0, shuffle=True, seed=seed)
    return frame.with_columns(pl.Series("subtime", np.cumsum(rng.exponential(0.5, frame.height))))


def test_kmeans_finds_the_clusters_and_writes_one_class_each():
    frame = _three_clusters()
    result = fit_model(frame, FitSettings(classes="kmeans", methods=FAST, seed=1))
    assert [s.k for s in result.elbow] == list(range(2, 11))
    inertia = [s.inertia for s in result.elbow]
    assert all(a > b for a, b in zip(inertia, inertia[1:]))
    assert result.clustering.k == 3 and result.clustering.silhouette > 0.8  # the best silhouette
    clusters = result.clustering.clusters
    assert clusters["tasks"].to_list() == [6000, 3000, 1000]  # ordered by centroid makespan
    assert clusters["frequency"].to_list() == pytest.approx([0.6, 0.3, 0.1])
    assert clusters["scheduling_class"].to_list() == pytest.approx([0, 2, 3])
    assert clusters["service_share"].to_list() == [0.0, 1.0, 0.0]
    model = result.model
    assert [(c.name, c.kind) for c in model.classes] == [
        ("cluster0", "task"),
        ("cluster1", "service"),
        ("cluster2", "task"),
    ]
    # ML rate = the rate whose mean is the centroid's priority, as for the paper's tables.
    for task_class, centroid in zip(model.classes, clusters["priority"].to_list()):
        if centroid < 5:
            assert task_class.priority_rate == pytest.approx(rate_for_centroid(centroid), rel=1e-6)
    assert model.classes[1].priority_rate == 1e-3  # centroid ~9.2: beyond a decreasing law, noted
    assert "out of reach" in result.classes[1].priority.note
    four = fit_model(frame, FitSettings(classes="kmeans", k=4, methods=FAST, seed=1))
    assert len(four.model.classes) == 4 and four.clustering.silhouette < result.clustering.silhouette


def _table_of(model: WorkloadModel, tasks: int, seed: int) -> pl.DataFrame:
    from batsim_google.generation.generator import generate

    batches = list(generate(model, load_request_law(), np.random.default_rng(seed), tasks=tasks))
    index = np.concatenate([b.class_index for b in batches])
    kinds = np.array([c.kind for c in model.classes])
    names = np.array([c.name for c in model.classes])
    return pl.DataFrame(
        {
            "subtime": np.concatenate([b.subtime for b in batches]),
            "makespan": np.concatenate([b.makespan for b in batches]),
            "kind": kinds[index],
            "priority": np.concatenate([b.priority for b in batches]),
            "class": names[index],
        }
    )


def test_fidelity_of_a_fitted_model_and_of_a_wrong_one():
    truth = WorkloadModel(
        dynamism=None,
        interarrival=HyperExponential((0.8, 0.2), (40.0, 2.0)),
        classes=(
            TaskClass("task", "task", 0.75, None, None, 5.0, makespan=Gamma(0.7, 1500.0)),
            TaskClass(
                "service", "service", 0.25, None, None, 2.0, makespan=HyperExponential((0.6, 0.4), (0.01, 0.0001))
            ),
        ),
    )
    original = _table_of(truth, 50_000, seed=1)
    result = fit_model(original.drop("class"), FitSettings(methods=FAST + ["hyperexp3-ml"]))
    assert isinstance(result.model.classes[0].makespan, Gamma)
    assert isinstance(result.model.classes[1].makespan, HyperExponential)
    report = fidelity_report(result.table.frame, result.model, seed=9)
    assert [c.name for c in report.classes] == ["task", "service"]
    assert report.worst_makespan_ks < 0.03 and report.interarrival_ks < 0.03
    for c in report.classes:
        assert c.generated_frequency == pytest.approx(c.original_frequency, abs=0.01)
        assert c.generated_mean_priority == pytest.approx(c.original_mean_priority, rel=0.05)
    wrong = fidelity_report(result.table.frame, preset("google"), seed=9)
    assert wrong.worst_makespan_ks > 0.1 and wrong.interarrival_ks > 0.1


def load_model_law(mapping):
    return law_from_mapping(mapping, "report")


def test_fit_command_writes_a_model_that_generates_a_report_and_plots(google_workload, tmp_path):
    model_path, report_path, plots = tmp_path / "fitted.toml", tmp_path / "report.json", tmp_path / "plots"
    outcome = CliRunner().invoke(
        main,
        [
            "fit",
            str(google_workload),
            "-o",
            str(model_path),
            "--report",
            str(report_path),
            "--plots",
            str(plots),
        ],
    )
    assert outcome.exit_code == 0, outcome.output
    assert "fit table: rows read 60000 = used 60000 + skipped 0\n" in outcome.output and "fidelity" in outcome.output
    assert "; inter-arrivals " in outcome.output  # no job ids: the stream's gaps are compared
    model = load_model(model_path)
    assert [c.name for c in model.classes] == ["task", "service"]
    report = json.loads(report_path.read_text())
    for section in [c["fits"] for c in report["classes"]] + [report["arrivals"]["fits"]]:
        assert [f["method"] for f in section] == list(FITTERS)
        for fit in section:
            law = load_model_law(fit["law"])
            assert 0 <= fit["ks"] <= 1 and fit["seconds"] >= 0
            assert fit["aic"] == pytest.approx(2 * law.n_parameters - 2 * fit["loglik"])
    assert report["fidelity"]["worst_makespan_ks"] < 0.03
    assert sorted(p.name for p in plots.iterdir()) == ["interarrival.png", "makespan_service.png", "makespan_task.png"]
    assert all(p.stat().st_size > 20_000 for p in plots.iterdir())
    generated = tmp_path / "again.json"
    again = CliRunner().invoke(main, ["generate", "--model", str(model_path), "--tasks", "1000", "-o", str(generated)])
    assert again.exit_code == 0, again.output
    markdown = tmp_path / "report.md"
    kmeans = CliRunner().invoke(
        main,
        [
            "fit",
            str(google_workload),
            "-o",
            str(tmp_path / "k.json"),
            "--k",
            "3",
            "--laws",
            ",".join(FAST),
            "--report",
            str(markdown),
            "--plots",
            str(plots),
            "--no-fidelity",
        ],
    )
    assert kmeans.exit_code == 0, kmeans.output
    # Three clusters, unless one is a handful of extreme makespans, skipped and counted.
    assert len(load_model(tmp_path / "k.json").classes) == 3 or SMALL_CLASS in kmeans.output
    assert (
        "## k-means" in markdown.read_text() and (plots / "silhouette.png").exists() and (plots / "elbow.png").exists()
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--classes", "apriori", "--k", "3"], "--k needs --classes kmeans"),
        (["--laws", "weibull"], "unknown fitting method"),
        (["-o", "model.yaml"], "must end in .toml or .json"),
    ],
)
def test_fit_command_errors(google_workload, tmp_path, arguments, message):
    output = ["-o", str(tmp_path / "m.toml")] if "-o" not in arguments else []
    outcome = CliRunner().invoke(main, ["fit", str(google_workload), *output, *arguments])
    assert outcome.exit_code == 2 and message in outcome.output


def test_real_trace_sample_is_reproduced_within_the_papers_ks(google_2011):
    """Fit the paper's tasks of the real parts (from their lifecycles), generate as many, compare
    per class."""
    account = RowAccount()
    original, left_out = trace_task_table([google_2011], account)
    assert account.balanced and original.height > 50_000
    assert set(left_out) <= {"makespan unknown (a time outside the trace window)"}
    result = fit_model(original)
    assert result.table.rows.skipped == {}
    report = fidelity_report(result.table.frame, result.model, seed=0)
    assert {c.name for c in report.classes} == {"task", "service"}
    for c in report.classes:
        assert c.makespan_ks <= 0.06, c  # the model paper's log-normal fits reach 0.057 / 0.064
        assert c.generated_frequency == pytest.approx(c.original_frequency, abs=0.01)


def test_fit_command_reads_a_trace_part(google_2011, tmp_path):
    part = google_2011 / "task_events" / "part-00001-of-00500.csv.gz"
    model = tmp_path / "model.toml"
    outcome = CliRunner().invoke(
        main, ["fit", str(part), "-o", str(model), "--no-fidelity", "--laws", "lognormal-ml,gamma-ml"]
    )
    assert outcome.exit_code == 0, outcome.output
    read = int(re.search(r"task_events: rows read (\d+) = used (\d+) \+ skipped (\d+)", outcome.output).group(1))
    assert read == 77_776  # every row of the part, used or skipped with a reason
    fitted = load_model(model)
    assert [c.kind for c in fitted.classes] == ["task", "service"]
    assert sum(c.frequency for c in fitted.classes) == pytest.approx(1.0)


def test_the_inter_arrival_law_keeps_the_observed_arrival_rate():
    """Gaps mostly of microseconds with a heavy tail: a law chosen on shape alone misses the mean;
    the selected law keeps it (or falls back to the paper's Lomax of that mean)."""
    rng = np.random.default_rng(3)
    n = 20_000
    gaps = np.where(rng.random(n) < 0.9, rng.exponential(1e-5, n), rng.exponential(1.0, n))
    subtimes = np.cumsum(gaps)
    table = pl.DataFrame(
        {"subtime": subtimes, "makespan": rng.lognormal(5, 1, n), "kind": ["task"] * n, "priority": [0.1] * n}
    )
    mean_gap = np.diff(subtimes).mean()
    result = fit_model(table, FitSettings(profile="none", methods=["lognormal-ml", "exponential", "gamma-ml"], seed=0))
    scores = {fit.method: fit for fit in result.arrivals.fits}
    # The log-normal has the best KS but a mean 6 times too small: it is not selectable.
    assert scores["lognormal-ml"].ks < scores["gamma-ml"].ks < scores["exponential"].ks
    assert scores["lognormal-ml"].law.mean() < 0.2 * mean_gap
    assert result.arrivals.best.method == "gamma-ml"
    assert result.arrivals.best.law.mean() == pytest.approx(mean_gap, rel=0.1)
    only_lognormal = fit_model(table, FitSettings(profile="none", methods=["lognormal-ml"], seed=0)).arrivals.best
    assert only_lognormal.method == "lomax-dynamism" and "mean positive gap" in only_lognormal.note
    assert only_lognormal.law.mean() == pytest.approx(mean_gap, rel=1e-9)


def test_simultaneous_submissions_are_a_share_of_zero_gaps_in_the_model():
    """Half the gaps are zero (tasks submitted together): the laws are fitted to the positive gaps,
    the model draws zeros at their share, and its workloads keep the observed rate and shape."""
    rng = np.random.default_rng(5)
    n = 20_000
    gaps = np.where(rng.random(n) < 0.5, 0.0, rng.gamma(0.5, 4.0, n))
    subtimes = np.cumsum(gaps)
    table = pl.DataFrame(
        {"subtime": subtimes, "makespan": rng.lognormal(5, 1, n), "kind": ["task"] * n, "priority": [0.1] * n}
    )
    result = fit_model(table, FitSettings(profile="none", methods=["exponential", "gamma-ml"], seed=0))
    arrivals, model = result.arrivals, result.model
    observed = np.diff(subtimes)
    assert arrivals.best.method == "gamma-ml"  # fitted to the positive gaps, not replaced by a fallback
    assert arrivals.best.law.shape == pytest.approx(0.5, rel=0.05)
    assert arrivals.best.law.mean() == pytest.approx(observed[observed > 0].mean(), rel=0.03)
    assert model.simultaneous == arrivals.simultaneous == pytest.approx(np.mean(observed == 0))
    batches = generate(model, load_request_law(), np.random.default_rng(1), tasks=n)
    generated = np.diff(np.concatenate([batch.subtime for batch in batches]))
    assert np.mean(generated == 0) == pytest.approx(model.simultaneous, abs=0.015)
    assert generated.mean() == pytest.approx(observed.mean(), rel=0.05)
    assert stats.ks_2samp(generated, observed).statistic < 0.02  # zeros and shape alike


@pytest.mark.parametrize("strict", [False, True])
def test_a_field_that_is_not_a_number_is_a_counted_skip_or_a_one_line_error(tmp_path, strict):
    table = tmp_path / "t.csv"
    rows = [f"{t},{10 + t},task,0.5" for t in range(40)]
    rows[3] = "abc,13,task,0.5"
    table.write_text("subtime,makespan,kind,priority\n" + "\n".join(rows) + "\n")
    result = CliRunner().invoke(
        main, ["fit", str(table), "-o", str(tmp_path / "m.toml"), "--no-fidelity", *(["--strict"] if strict else [])]
    )
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    if strict:
        assert result.exit_code == 2 and f"{table}:4: subtime is missing, not finite or past 2^42 s" in result.output
    else:
        assert (
            result.exit_code == 0
            and "rows read 40 = used 39 + skipped 1 (subtime is missing, not finite or past 2^42 s: 1)" in result.output
        )


@pytest.mark.parametrize("distinct", [7, 1000])
def test_too_large_a_k_is_a_short_message(tmp_path, distinct):
    table = tmp_path / "t.csv"
    rows = [f"{t},{10 + 1.37 * (t % distinct)},task,{(t % 12 + 1) / 12}" for t in range(1000)]
    table.write_text("subtime,makespan,kind,priority\n" + "\n".join(rows) + "\n")
    result = CliRunner().invoke(
        main, ["fit", str(table), "--k", "300", "-o", str(tmp_path / "m.toml"), "--no-fidelity"]
    )
    error = result.output.strip().splitlines()[-1]
    assert result.exit_code == 2 and len(error) < 200 and "cluster" not in error, error


def test_fit_of_jobs_reports_the_job_fidelity_instead_of_the_raw_gaps(google_2011, tmp_path):
    outcome = CliRunner().invoke(
        main, ["fit", str(google_2011), "-o", str(tmp_path / "m.toml"), "--laws", ",".join(FAST)]
    )
    assert outcome.exit_code == 0, outcome.output
    fidelity = next(line for line in outcome.output.splitlines() if line.startswith("fidelity"))
    assert "inter-arrivals" not in fidelity  # raw gaps: the trace's 1-2 us stamps against exact zeros
    job_line = next(line for line in outcome.output.splitlines() if line.startswith("job fidelity"))
    assert "task gaps" in job_line and "(worst hour, generated: mean of 20 draws; one draw" in job_line


def test_fit_settings_refuse_an_unknown_classification_and_keep_their_methods_frozen():
    with pytest.raises(ParameterError, match="classes must be one of apriori, kmeans"):
        FitSettings(classes="hierarchical")
    methods = ["gamma-ml", "exponential"]
    settings = FitSettings(methods=methods)
    methods.append("lognormal-ml")
    assert settings.methods == ("gamma-ml", "exponential") and hash(settings)
