"""A generated cell's population over a day (no contention): the preset holds its level."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from batsim_google.generation.population import generated_population
from batsim_google.model.job_arrivals import JobClass
from batsim_google.model.laws import Empirical
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import TaskClass
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES

#: Hours 0 and 20-24 of a day: the level at the start and at the day's end.
TIMES = np.array([0.0, *np.arange(20, 25) * 3600.0])
#: How far a stationary cell's tasks and CPU may be, over the day's last hours, from its start.
TOLERANCE = 0.1


def _level_at_the_end(model, seed: int) -> dict[str, float]:
    population = generated_population(model, load_request_law(), seed, TIMES, GOOGLE_2011_MACHINES)
    return {
        "tasks": float(population.tasks[1:].mean() / population.tasks[0]),
        "cpu": float(population.cpu[1:].mean() / population.cpu[0]),
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_the_cell_preset_holds_its_level_over_a_day(seed):
    level = _level_at_the_end(preset("google-2011-cell"), seed)
    assert level["tasks"] == pytest.approx(1.0, abs=TOLERANCE)
    assert level["cpu"] == pytest.approx(1.0, abs=TOLERANCE)


def test_a_cell_whose_warm_start_its_arrivals_do_not_keep_drifts():
    """The preset with a class of residents (a fifth of the cell) that is never submitted again,
    as fits made before the start was held by Little's law had: they leave, and the level falls
    past the tolerance."""
    cell = preset("google-2011-cell")
    residents = TaskClass("resident", "service", 0.0, 20_000.0, 10.0, 1.0, per_machine=3.0)
    single = JobClass(0.0, Empirical((1.0,), (1.0,)), (*(0.0 for _ in cell.classes), 1.0))
    jobs = replace(cell.jobs, classes=(*(replace(c, mix=(*c.mix, 0.0)) for c in cell.jobs.classes), single))
    drifting = replace(cell, classes=(*cell.classes, residents), jobs=jobs)
    assert _level_at_the_end(drifting, 1)["tasks"] < 1.0 - TOLERANCE


def test_the_population_counts_each_task_over_its_lifetime():
    model = preset("google")
    times = np.array([0.0, 600.0, 1200.0])
    population = generated_population(model, load_request_law(), 3, times, 100, 125.83)
    again = generated_population(model, load_request_law(), 3, times, 100, 125.83)
    assert np.array_equal(population.tasks, again.tasks)  # a seed fixes it
    assert population.submitted.sum() > 0 and population.tasks[0] > 0
    assert population.drift()["tasks"] == pytest.approx(population.tasks[-1] / population.tasks[0])
