"""The google-2011-cell preset warm-started against the real cell at the trace's start."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import stats

from batsim_google.cli import main
from batsim_google.fitting.cell_preset import stretched
from batsim_google.fitting.trace_input import trace_task_table
from batsim_google.generation.generator import generate
from batsim_google.generation.warm_start import warm_counts, warm_start
from batsim_google.model.laws import Exponential, Gamma, HyperExponential, HyperGamma, LogNormal, Lomax
from batsim_google.model.presets import preset
from batsim_google.model.priority import google_priority
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.trace.reader import read_batches
from batsim_google.trace.row_accounting import RowAccount

#: The shared parts' span (s): their last submission.
SPAN = 15_032.0


@pytest.fixture(scope="module")
def real_start(google_2011) -> tuple[int, float, float]:
    """Tasks SCHEDULEd at time 0 in part 00000 and their CPU and memory requests."""
    part = google_2011 / "task_events" / "part-00000-of-00500.csv.gz"
    start = pl.concat(
        pl.from_arrow(batch).filter((pl.col("time") == 0) & (pl.col("event_type") == 1))
        for _, batch in read_batches([part], "task_events", account=RowAccount())
    )
    return start.height, float(start["cpu_request"].sum()), float(start["memory_request"].sum())


def test_the_real_start(real_start):
    tasks, cpu, memory = real_start
    assert tasks == 132_982 and cpu == pytest.approx(7492.65, abs=0.01) and memory == pytest.approx(5468.16, abs=0.01)


def test_the_preset_warm_starts_like_the_real_cell(real_start):
    tasks, cpu, memory = real_start
    batch = warm_start(
        preset("google-2011-cell"), load_request_law(), np.random.default_rng(1), 1.0, GOOGLE_2011_MACHINES
    )
    assert len(batch.makespan) == pytest.approx(tasks, rel=0.1)
    assert batch.cpu.sum() == pytest.approx(cpu, rel=0.1)
    # 1.003x (seed 1): each band draws the requests of the start's tasks in it; drawn from the
    # submitted tasks' law in their box, as the preset did before, it held 0.86x (the production
    # tasks the 4.2 hours submit request half the memory of those the cell holds)
    assert batch.memory.sum() == pytest.approx(memory, rel=0.1)
    # the paper's preset is far from it: 71,684 tasks, 4,033 CPU
    paper = warm_start(preset("google"), load_request_law(), np.random.default_rng(1), 1.0, GOOGLE_2011_MACHINES)
    assert len(paper.makespan) < 0.6 * tasks and paper.cpu.sum() < 0.6 * cpu


def test_the_warm_start_scales_with_the_cell():
    model = preset("google-2011-cell")
    whole = warm_counts(model, 1.0, GOOGLE_2011_MACHINES).sum()
    for machines in (64, 1000):
        scaled = warm_counts(model, GOOGLE_2011_MACHINES / machines, machines).sum()
        assert scaled == pytest.approx(whole * machines / GOOGLE_2011_MACHINES, rel=1e-9)


def test_generate_marks_the_warm_tasks_initial(tmp_path):
    output = tmp_path / "w.json"
    outcome = CliRunner().invoke(
        main,
        ["generate", "--preset", "google-2011-cell", "--warm-start", "--nb-res", "640", "--arrival-scale",
         str(GOOGLE_2011_MACHINES / 640), "--tasks", "100", "--seed", "1", "-o", str(output)],
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    jobs = json.loads(output.read_text())["jobs"]
    initial = [job for job in jobs if job.get("initial")]
    expected = warm_counts(preset("google-2011-cell"), GOOGLE_2011_MACHINES / 640, 640).sum()
    assert len(initial) == pytest.approx(expected, rel=0.1) and len(jobs) == len(initial) + 100
    assert {job["subtime"] for job in initial} == {0.0}


@pytest.mark.parametrize(
    "law",
    [
        LogNormal(2.0, 1.5),
        Gamma(0.7, 3.0),
        Exponential(0.5),
        Lomax(3.0, 4.0),
        HyperGamma((0.3, 0.7), (2.0, 0.5), (1.0, 10.0)),
        HyperExponential((0.4, 0.6), (2.0, 0.1)),
    ],
)
def test_a_stretched_law_is_the_law_of_the_stretched_variates(law):
    draws = law.sample(20_000, np.random.default_rng(2))
    longer = stretched(law, 3.5)
    assert longer.mean() == pytest.approx(3.5 * law.mean(), rel=1e-9)
    assert stats.kstest(3.5 * draws, lambda x: longer.cdf(x)).statistic < 0.015
    assert stats.kstest(draws, lambda x: longer.cdf(x)).statistic > 0.1


#: Google priorities of the groups the scheduler and validate-replay judge (production with monitoring).
GROUPS = {"free": (0, 1), "normal": (2, 8), "production": (9, 11)}


@pytest.fixture(scope="module")
def real_groups(google_2011) -> tuple[dict[str, int], dict[str, int]]:
    """Per priority group: the tasks running at the trace's start and those the parts submit."""
    frame, _ = trace_task_table([google_2011], RowAccount(), censored=True)
    priority = frame["google_priority"].to_numpy()
    resident = frame["resident"].to_numpy()
    count = {g: (priority >= low) & (priority <= high) for g, (low, high) in GROUPS.items()}
    return (
        {g: int((m & resident).sum()) for g, m in count.items()},
        {g: int((m & ~resident).sum()) for g, m in count.items()},
    )


def _groups(priority: np.ndarray) -> dict[str, int]:
    levels = google_priority(priority)
    return {g: int(((levels >= low) & (levels <= high)).sum()) for g, (low, high) in GROUPS.items()}


def test_the_preset_draws_the_cells_priority_groups(real_groups):
    """The preset's classes, split by priority group, each draw their Google priorities: the warm
    start holds each group's tasks of the real start within 15 % and, over the parts' span, the
    arrivals submit each group's tasks within 25 % (three seeds; the free group's parts carry one
    job of 9,000 tasks). The truncated exponential it replaced held 17 % of the start's production
    tasks and submitted 2.6 times the free ones, 5.2 times the production ones."""
    start, submitted = real_groups
    assert start == {"free": 54_611, "normal": 22_318, "production": 56_053}
    model, law = preset("google-2011-cell"), load_request_law()
    warm = warm_start(model, law, np.random.default_rng(1), 1.0, GOOGLE_2011_MACHINES)
    for group, tasks in _groups(warm.priority).items():
        assert tasks == pytest.approx(start[group], rel=0.15), group
    drawn = {g: 0 for g in GROUPS}
    for seed in (1, 2, 3):
        batches = generate(model, law, np.random.default_rng(seed), duration=SPAN)
        for group, tasks in _groups(np.concatenate([b.priority for b in batches])).items():
            drawn[group] += tasks / 3
    for group, tasks in drawn.items():
        assert tasks == pytest.approx(submitted[group], rel=0.25), group
