"""Generated tasks -> Batsim workload: the fields every job carries to the scheduler.

Each job asks for its width in resources (one machine, shared with other jobs as its CPU and memory
requests allow, unless the model gives widths: the processors of a parallel job), lasts its makespan (a service's makespan is its lifetime) and has the walltime of the chosen mode (:mod:`.walltime`; none by default). Extra fields:
``class`` (class name), ``kind`` (``task`` or ``service``), ``priority`` in ]0, 1], ``cpu`` and
``memory`` requests normalized to the largest machine; with job-level arrivals, ``google_job``, the
id of the task's job, so that schedulers and metrics can group a job's tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from tqdm import tqdm

from batsim_google.errors import ParameterError
from batsim_google.generation.batsim_json import WorkloadWriter
from batsim_google.generation.generator import TaskBatch, check_extent, generate
from batsim_google.generation.walltime import NO_WALLTIMES, WalltimeMode, walltime_rng
from batsim_google.generation.warm_start import warm_start
from batsim_google.model.request_law import RequestLaw
from batsim_google.model.workload_model import WorkloadModel
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES


def cell_load_scale(machines: int) -> float:
    """The inter-arrival stretch that gives ``machines`` the Google cell's load per machine, for a
    model whose arrival rate is the whole cell's (the presets')."""
    return GOOGLE_2011_MACHINES / machines


@dataclass(frozen=True)
class Generation:
    """What a generated workload holds and how its jobs are written.

    Exactly one bound: ``tasks`` (a count) or ``duration`` (seconds of submissions).
    ``nb_res``: the platform's resources (the file's header; no job wider); ``grain``: times
    rounded to it (None: not rounded); ``arrival_scale`` multiplies the inter-arrival times (see
    :func:`.generator.generate`); ``task_share`` < 1 keeps each task of the whole cell's jobs with
    that probability (a sampled cell: :func:`.generator.generate`); ``warm`` first writes the tasks running at time 0 in the model's
    stationary state (:mod:`.warm_start`); ``walltime``: the jobs' walltimes (:mod:`.walltime`).
    """

    tasks: int | None = None
    duration: float | None = None
    nb_res: int = GOOGLE_2011_MACHINES
    grain: float | None = None
    arrival_scale: float = 1.0
    task_share: float = 1.0
    warm: bool = False
    walltime: WalltimeMode = NO_WALLTIMES

    def __post_init__(self) -> None:
        check_extent(self.tasks, self.duration, self.arrival_scale)
        if not 0 < self.task_share <= 1:
            raise ParameterError(f"task_share must be in ]0, 1] (got {self.task_share})")


def write_generated_workload(
    path: str | Path,
    model: WorkloadModel,
    requests: RequestLaw,
    seed: int,
    generation: Generation,
    *,
    meta: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> int:
    """Generate the workload of ``model`` with ``seed`` into ``path``; return the job count.

    ``generation.arrival_scale`` is recorded in the file's ``meta`` when it is not 1. The warm
    start's tasks are drawn from a generator spawned from the seed's: the tasks after them are
    those of the same seed without it. The walltimes are drawn from a stream of their own, so
    that the jobs of a seed are the same in every walltime mode.
    """
    tasks, duration, nb_res = generation.tasks, generation.duration, generation.nb_res
    arrival_scale, warm, share = generation.arrival_scale, generation.warm, generation.task_share
    if model.max_width > nb_res:
        raise ParameterError(f"the model's jobs take up to {model.max_width} resources, more than nb_res = {nb_res}")
    rng = np.random.default_rng(seed)
    warm_rng = rng.spawn(1)[0] if warm else None  # spawning leaves rng's own stream as it was
    class_names = pl.Series([c.name for c in model.classes])
    class_kinds = pl.Series([c.kind for c in model.classes])
    header = {"generator": "batsim-google", "seed": seed, "model": model.to_mapping(), **(meta or {})}
    if arrival_scale != 1.0:
        header["arrival_scale"] = arrival_scale
    if share != 1.0:
        header["task_share"] = share
    if warm:
        header["warm_start"] = True
    bar = tqdm(
        total=tasks if tasks is not None else duration,
        unit=" tasks" if tasks is not None else " s",
        disable=not progress,
        desc=f"{Path(path).name}",
    )

    def columns(batch: TaskBatch, first_id: int) -> dict[str, Any]:
        return {
            "id": batch.id + first_id,
            "subtime": batch.subtime,
            "delay": batch.makespan,
            "res": batch.width,
            "class": class_names.gather(batch.class_index),
            "kind": class_kinds.gather(batch.class_index),
            "priority": batch.priority,
            "cpu": batch.cpu,
            "memory": batch.memory,
            **({} if batch.job is None else {"google_job": batch.job}),
        }

    with (
        bar,
        WorkloadWriter(
            path, nb_res, generation.grain, meta=header, walltime=generation.walltime, rng=walltime_rng(seed)
        ) as writer,
    ):
        warm_tasks = 0
        if warm_rng is not None:
            initial = warm_start(model, requests, warm_rng, arrival_scale / share, nb_res)
            writer.write(pl.DataFrame(columns(initial, 0)).with_columns(initial=pl.lit("running")))
            warm_tasks = len(initial)
        batches = generate(
            model, requests, rng, tasks=tasks, duration=duration, arrival_scale=arrival_scale, task_share=share
        )
        for batch in batches:
            writer.write(pl.DataFrame(columns(batch, warm_tasks)))
            bar.update(len(batch) if tasks is not None else min(duration, batch.subtime[-1]) - bar.n)
        return writer.jobs
