"""The tasks a generated cell holds over time, without contention: its level, and whether it drifts.

Each task counts from its submission for its makespan (a service for its lifetime), as on a cell
that runs everything at once: what the model itself puts in the cell, before any scheduler. A
model whose warm start is its arrivals' stationary state (rate x mean lifetime, Little's law, per
class) holds its level; one whose warm start its arrivals do not keep drifts away from it. Drawn
batch by batch as :func:`~.generator.generate` yields them (a whole cell's day is millions of
tasks), from the same streams as ``generate --warm-start`` with that seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from batsim_google.generation.generator import TaskBatch, generate
from batsim_google.generation.warm_start import warm_start
from batsim_google.model.request_law import RequestLaw
from batsim_google.model.workload_model import WorkloadModel


@dataclass(frozen=True)
class Population:
    """At each of ``times`` (s): the tasks running, the CPU and memory they request; and the tasks
    submitted in each interval between consecutive times."""

    times: np.ndarray
    tasks: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray
    submitted: np.ndarray

    def drift(self) -> dict[str, float]:
        """The last time's tasks and CPU over the first's."""
        return {"tasks": float(self.tasks[-1] / self.tasks[0]), "cpu": float(self.cpu[-1] / self.cpu[0])}


def _add(batch: TaskBatch, times: np.ndarray, totals: np.ndarray) -> None:
    running = (batch.subtime[None, :] <= times[:, None]) & (batch.subtime + batch.makespan > times[:, None])
    totals += np.stack([running.sum(axis=1), running @ batch.cpu, running @ batch.memory])


def generated_population(
    model: WorkloadModel,
    requests: RequestLaw,
    seed: int,
    times: np.ndarray,
    nb_res: int,
    arrival_scale: float = 1.0,
    task_share: float = 1.0,
) -> Population:
    """The warm-started cell of ``model`` on ``nb_res`` resources at each of ``times`` (from 0,
    increasing), generated with ``seed`` as ``generate --warm-start`` draws it (``task_share``: a
    sampled cell's, as ``--task-share``)."""
    times = np.asarray(times, dtype=float)
    rng = np.random.default_rng(seed)
    warm_rng = rng.spawn(1)[0]  # as write_generated_workload: the arrivals are the seed's own stream
    totals = np.zeros((3, len(times)))
    _add(warm_start(model, requests, warm_rng, arrival_scale / task_share, nb_res), times, totals)
    submitted = np.zeros(len(times) - 1, dtype=np.int64)
    batches = generate(
        model, requests, rng, duration=float(times[-1]), arrival_scale=arrival_scale, task_share=task_share
    )
    for batch in batches:
        _add(batch, times, totals)
        submitted += np.histogram(batch.subtime, times)[0]
    return Population(times, totals[0], totals[1], totals[2], submitted)
