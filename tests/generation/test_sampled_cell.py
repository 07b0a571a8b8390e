"""A sampled cell: the whole cell's jobs, each task kept with the sample's share (``task_share``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from batsim_google.errors import ParameterError
from batsim_google.generation.generator import generate
from batsim_google.generation.workload import Generation, write_generated_workload
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES

MACHINES = 1024
SHARE = MACHINES / GOOGLE_2011_MACHINES
SPAN = 4 * 3600.0
SEEDS = range(1, 7)


def _hours(seed: int, **scaling) -> tuple[np.ndarray, int]:
    """Tasks submitted in each hour of the span and the distinct jobs they belong to."""
    batches = list(
        generate(preset("google-2011-cell"), load_request_law(), np.random.default_rng(seed), duration=SPAN, **scaling)
    )
    subtime = np.concatenate([b.subtime for b in batches])
    jobs = np.unique(np.concatenate([b.job for b in batches]))
    return np.histogram(subtime, np.arange(0.0, SPAN + 1.0, 3600.0))[0], len(jobs)


def test_a_sampled_cell_sees_parts_of_many_jobs_and_its_hours_swing_less():
    """On 1,024 machines (a share of 0.081) the task rate is the share of the whole cell's (within
    10 % over six seeds; stretched, the same rate's draws fell 20 % short) and its four hours see parts of 2.6 times as many jobs (641 on average), as a sampled
    real cell does (`trace convert --sample-cell 1024`, seeds 1 and 2: 701 and 638 of the parts'
    2,824 jobs over their 4.2 hours), and its hours vary by a third as much: stretching the gaps instead thins whole jobs, one of 2,000 tasks
    making or breaking an hour."""
    thinned = [_hours(seed, task_share=SHARE) for seed in SEEDS]
    stretched = [_hours(seed, arrival_scale=1.0 / SHARE) for seed in SEEDS]
    thinned_hours = np.array([hours for hours, _ in thinned])
    stretched_hours = np.array([hours for hours, _ in stretched])
    whole = sum(_hours(seed)[0].sum() for seed in SEEDS)
    assert thinned_hours.sum() == pytest.approx(SHARE * whole, rel=0.1)
    assert np.mean([jobs for _, jobs in thinned]) > 2 * np.mean([jobs for _, jobs in stretched])
    spread = {
        name: float(np.std(h) / np.mean(h)) for name, h in (("thinned", thinned_hours), ("stretched", stretched_hours))
    }
    assert spread["thinned"] < 0.3 < 0.45 < spread["stretched"], spread


def test_the_whole_cell_draws_as_before_and_a_share_is_checked(tmp_path):
    model, law = preset("google-2011-cell"), load_request_law()
    plain = next(iter(generate(model, law, np.random.default_rng(3), tasks=1000)))
    whole = next(iter(generate(model, law, np.random.default_rng(3), tasks=1000, task_share=1.0)))
    assert np.array_equal(plain.subtime, whole.subtime) and np.array_equal(plain.job, whole.job)
    with pytest.raises(ParameterError, match="task_share"):
        Generation(tasks=10, task_share=0.0)
    path = tmp_path / "w.json"
    write_generated_workload(
        path, model, law, 1, Generation(duration=600.0, nb_res=MACHINES, task_share=SHARE, warm=True)
    )
    workload = json.loads(path.read_text())
    assert workload["meta"]["task_share"] == SHARE
    initial = sum(1 for job in workload["jobs"] if job.get("initial"))
    assert initial == pytest.approx(132_982 * SHARE, rel=0.1)  # the warm start at the share's
