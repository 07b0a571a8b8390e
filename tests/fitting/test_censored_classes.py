"""fit_model on a window that cuts tasks: censored classes, the start held by Little's law, the warm start."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import stats

from batsim_google.cli import main
from batsim_google.fitting.model_fit import (
    FitSettings,
    fit_model,
)
from batsim_google.fitting.table import task_table
from batsim_google.generation.warm_start import class_rates, warm_counts, warm_start
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import load_model, save_model
from batsim_google.trace.row_accounting import RowAccount

WINDOW = 6 * 3600.0
MACHINES = 500
#: (rate per s, lognormal mu, sigma) of Finish-ended tasks and of Kill-ended services.
TASKS, SERVICES = (2.0, np.log(300.0), 1.0), (0.5, np.log(3000.0), 1.5)


def _window(kind: str, rate: float, mu: float, sigma: float, rng: np.random.Generator) -> pl.DataFrame:
    """What a window [0, WINDOW] sees of a stationary stream of one kind (see test_censored_fit)."""
    law = stats.lognorm(sigma, scale=np.exp(mu))
    history = 100 * law.mean()
    starts = rng.uniform(-history, WINDOW, rng.poisson(rate * (history + WINDOW)))
    ends = starts + law.rvs(size=len(starts), random_state=rng)
    alive = ends > 0
    starts, ends = starts[alive], ends[alive]
    resident = starts < 0
    origin = np.where(resident, 0.0, starts)
    ended = ends <= WINDOW
    return pl.DataFrame(
        {
            "subtime": origin,
            "makespan": np.minimum(ends, WINDOW) - origin,
            "end_event": np.where(ended, "FINISH" if kind == "task" else "KILL", None),
            "google_priority": rng.integers(0, 12, len(starts)),
            "censored": ~ended,
            "resident": resident,
        }
    )


#: Residents no arrival in the window explains (e.g. services started weeks before, rarely replaced).
ANCIENT = 3000


def _ancient(rng: np.random.Generator) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "subtime": np.zeros(ANCIENT),
            "makespan": np.full(ANCIENT, WINDOW),
            "end_event": [None] * ANCIENT,
            "google_priority": rng.integers(0, 12, ANCIENT),
            "censored": np.ones(ANCIENT, bool),
            "resident": np.ones(ANCIENT, bool),
        },
        schema_overrides={"end_event": pl.String},
    )


@pytest.fixture(scope="module")
def streams() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    return pl.concat([_window("task", *TASKS, rng), _window("service", *SERVICES, rng)]).sort("subtime")


@pytest.fixture(scope="module")
def window(streams) -> pl.DataFrame:
    return pl.concat([streams, _ancient(np.random.default_rng(12))], how="vertical_relaxed")


@pytest.fixture(scope="module")
def fitted(window):
    return fit_model(window, FitSettings(profile="none", methods=["lognormal-ml"], jobs=False, machines=MACHINES))


def test_cut_rows_are_services_with_their_flags(window):
    table = task_table(window, RowAccount())
    frame = table.frame
    assert frame.height == window.height and table.rows.skipped == {}
    cut = frame.filter(pl.col("censored") | pl.col("resident"))
    assert set(cut["kind"].unique()) == {"service"}


def test_the_service_law_has_its_tail_back(fitted):
    service = next(c for c in fitted.classes if c.name == "service")
    free = min((f for f in service.fits if f.method.endswith("-censored")), key=lambda f: f.aic)
    assert service.censored > 0
    true_mean = np.exp(SERVICES[1] + SERVICES[2] ** 2 / 2)
    # in-window task-kind rows that outlived the window are services too: the law mixes a little
    assert free.law.mean() == pytest.approx(true_mean, rel=0.25)
    ended = fitted.table.frame.filter((pl.col("kind") == "service") & ~pl.col("censored"))["makespan"]
    assert ended.mean() < 0.6 * true_mean  # what a fit of the ended services alone would see


def _little(fit) -> None:
    """Every class holding the start: rate x mean lifetime is the tasks it holds."""
    rates = class_rates(fit.model)
    held = [(i, c) for i, c in enumerate(fit.classes) if c.population is not None]
    assert held
    for index, class_fit in held:
        mean = fit.model.classes[index].makespan_law().mean()
        assert rates[index] * mean == pytest.approx(class_fit.population, rel=1e-6)


def test_stationary_streams_explain_their_own_residents(streams):
    """Little's law with the censored laws: the window's arrivals explain the tasks at its start,
    so holding the start moves the services' mean lifetime little."""
    fit = fit_model(streams, FitSettings(profile="none", methods=["lognormal-ml"], jobs=False, machines=MACHINES))
    residents = int(streams["resident"].sum())
    assert warm_counts(fit.model, 1.0, MACHINES).sum() == pytest.approx(residents, rel=1e-6)
    _little(fit)
    service = next(c for c in fit.classes if c.name == "service")
    free = min((f for f in service.fits if f.method.endswith("-censored")), key=lambda f: f.aic)
    assert service.best.law.mean() == pytest.approx(free.law.mean(), rel=0.15)
    assert [c.name for c in fit.model.classes] == ["task", "service"]  # no class that is never resubmitted


def test_the_warm_start_holds_the_windows_start(fitted, window):
    """Residents no arrival explains (ANCIENT): the services' mean lifetime grows until their
    arrivals keep them, instead of a class of residents that would leave and never come back."""
    residents = int(window["resident"].sum())
    model = fitted.model
    assert all(c.frequency > 0 and not c.per_machine for c in model.classes)
    counts = warm_counts(model, 1.0, MACHINES)
    assert counts.sum() == pytest.approx(residents, rel=1e-9)
    _little(fitted)
    batch = warm_start(model, load_request_law(), np.random.default_rng(0), 1.0, MACHINES)
    assert len(batch.makespan) == pytest.approx(residents, abs=4 * residents**0.5)  # a Poisson draw
    # half the machines, half the arrivals: half the cell
    assert warm_counts(model, 2.0, MACHINES // 2).sum() == pytest.approx(residents / 2, rel=1e-9)


def test_a_held_model_round_trips_through_a_model_file(fitted, tmp_path):
    save_model(fitted.model, tmp_path / "m.toml")
    assert load_model(tmp_path / "m.toml").classes == fitted.model.classes


def test_warm_requests_are_those_of_running_tasks(fitted):
    law = load_request_law()
    batch = warm_start(fitted.model, law, np.random.default_rng(0), 1.0, MACHINES)
    running = law.kinds["resident"]
    mean_cpu = float(np.dot(running.cpu, running.count) / running.count.sum())
    assert batch.cpu.mean() == pytest.approx(mean_cpu, rel=0.03)


def test_fit_censored_reads_the_start_of_the_trace(google_2011, tmp_path):
    """The first part: its residents are the tasks SCHEDULEd at time 0 (132,982, 7,492.65 CPU); the
    report says each class's share of the requested CPU and the warm start beside the start."""
    part = google_2011 / "task_events" / "part-00000-of-00500.csv.gz"
    model, report = tmp_path / "m.toml", tmp_path / "fit.json"
    outcome = CliRunner().invoke(
        main,
        ["fit", str(part), "--censored", "-o", str(model), "--report", str(report), "--no-fidelity", "--no-jobs",
         "--laws", "lognormal-ml"],
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert "tasks submitted without a lifetime" in outcome.output
    mapping = json.loads(report.read_text())
    left_out = mapping["without_lifetime"]["tasks"]
    assert set(left_out) == {"never scheduled", "ended by EVICT, FAIL or LOST, or with more than three events"}
    start = mapping["load"]["start"]["input"]
    assert start["tasks"] == 132_982 and start["cpu"] == pytest.approx(7492.65, abs=0.01)
    shares = {c["name"]: c["cpu_share"] for c in mapping["classes"]}
    # the part's hour sees too few production services end to split the classes by priority group
    assert "task" in shares and all(n == "task" or n.startswith("service-") for n in shares)
    # every row is in a class: the tasks without a lifetime are drawn into the task and service classes
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-9)
    assert sum(c.get("without_lifetime", 0) for c in mapping["classes"]) == sum(left_out.values())
    warm = mapping["load"]["start"]["generated"]
    assert warm["tasks"] == pytest.approx(start["tasks"], rel=0.1)
    classes = load_model(model).classes
    assert [c.name for c in classes] == list(shares) and len(classes) > 3
    # the services, in bands of CPU request and of memory within each, covering every request
    cpu = sorted({c.cpu_range for c in classes if c.cpu_range is not None})
    assert cpu[0][0] == 0.0 and all(a[1] == b[0] for a, b in zip(cpu, cpu[1:])) and cpu[-1][1] > 1
    for band in cpu:
        memory = sorted(c.memory_range for c in classes if c.cpu_range == band)
        assert memory[0][0] == 0.0 and all(a[1] == b[0] for a, b in zip(memory, memory[1:])) and memory[-1][1] > 1
    assert warm["cpu"] == pytest.approx(start["cpu"], rel=0.1)


def test_the_start_bounds_the_stationary_tasks(streams):
    """A start holding fewer tasks than the window's arrivals and laws imply (a third of the
    residents gone): the longest-held class's mean gives way, so that the warm start holds the
    start; the other class's law and the rates are kept."""
    free = fit_model(streams, FitSettings(profile="none", methods=["lognormal-ml"], jobs=False, machines=MACHINES))
    gone = streams.with_row_index().filter(~pl.col("resident") | (pl.col("index") % 3 != 0)).drop("index")
    residents = int(gone["resident"].sum())
    assert warm_counts(free.model, 1.0, MACHINES).sum() > 1.3 * residents
    fit = fit_model(gone, FitSettings(profile="none", methods=["lognormal-ml"], jobs=False, machines=MACHINES))
    assert warm_counts(fit.model, 1.0, MACHINES).sum() == pytest.approx(residents, rel=1e-6)
    by_name = {c.name: c for c in fit.classes}
    free_service = next(c for c in free.classes if c.name == "service")
    service = by_name["service"]
    assert service.best.method == "lognormal-censored-of-mean" and "Little's law" in service.best.note
    assert service.best.law.mean() < 0.8 * free_service.best.law.mean()
    assert by_name["task"].best.law.mean() == pytest.approx(free.classes[0].best.law.mean(), rel=1e-9)


def test_bands_hold_the_starts_memory_and_keep_it():
    """Long-lived services requesting more memory than short-lived ones at the same CPU (as the
    trace's production services do): the start's tasks request 0.077 memory on average, the
    services submitted 0.018, and no CPU band can tell them apart (the request law's services: 0.021). Each band draws the requests of
    the start's tasks in it: the warm start holds the start's memory, and so does the cell a day
    later (the arrivals request what the tasks they keep request)."""
    from batsim_google.fitting.load_fidelity import running_load
    from batsim_google.generation.generator import generate

    rng = np.random.default_rng(21)
    frames = []
    for rate, mu, memory in [(0.5, np.log(1000.0), 0.01), (0.05, np.log(30000.0), 0.1)]:
        frame = _window("service", rate, mu, 1.0, rng)
        cpu = rng.choice([0.0125, 0.025, 0.05, 0.1], frame.height)
        ended = pl.Series("end_event", frame["end_event"].to_list(), dtype=pl.String)  # its first rows all None
        frames.append(frame.with_columns(ended, pl.Series("cpu_request", cpu), pl.lit(memory).alias("memory_request")))
    window = pl.concat(frames).sort("subtime")
    start = window.filter("resident")
    fit = fit_model(window, FitSettings(profile="none", methods=["lognormal-ml"], jobs=False, machines=MACHINES))
    law = load_request_law()
    warm = warm_start(fit.model, law, np.random.default_rng(1), 1.0, MACHINES)
    assert len(warm.cpu) == pytest.approx(start.height, rel=0.05)
    assert warm.memory.sum() == pytest.approx(start["memory_request"].sum(), rel=0.05)
    assert warm.cpu.sum() == pytest.approx(start["cpu_request"].sum(), rel=0.05)
    assert sum(c.requests is not None for c in fit.model.classes) >= 4  # bands of CPU (per group)
    day = 86_400.0
    batches = [warm, *generate(fit.model, law, np.random.default_rng(2), duration=day)]
    load = running_load(
        [0.0, day],
        np.concatenate([b.subtime for b in batches]),
        np.concatenate([b.subtime + b.makespan for b in batches]),
        np.concatenate([b.cpu for b in batches]),
        np.concatenate([b.memory for b in batches]),
    )
    assert load.memory[1] == pytest.approx(load.memory[0], rel=0.1)
