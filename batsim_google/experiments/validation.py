"""Validation by simulation (Gaevoy et al.): does a fitted model queue like the workload it models?

The original workload is simulated once (the simulation is deterministic: their "deterministic
simulation of the original workload"), and workloads generated from its fitted model, as many
tasks each, ``replications`` times with seeds ``seed``, ``seed + 1``, ...; same platform, same
scheduler policy. Per queue metric (:mod:`.queue_metrics`): the reference value, the mean over
the replications with its Student-t 95 % interval, the relative error, and the replications a 5 %
error needs (:func:`.statistics.replications_needed`, Gaevoy et al. found "more than 40"). Dev
(their formula 38) compares the replications' means with the reference.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.errors import ParameterError, SimulationError
from batsim_google.experiments.campaign import Campaign, FailureSpec, PlatformSpec, WorkloadSpec
from batsim_google.experiments.compare import workers_without_the_main_script
from batsim_google.experiments.execution import execute_runs
from batsim_google.experiments.plan import plan_campaign
from batsim_google.experiments.queue_metrics import QUEUE_METRICS, deviation
from batsim_google.experiments.statistics import ERROR, half_width, replications_needed
from batsim_google.fitting.batsim_input import read_batsim_workload
from batsim_google.fitting.model_fit import fit_model
from batsim_google.model.workload_model import save_model
from batsim_google.output_files import AtomicFile, output_folder, write_text
from batsim_google.scheduling.policy_config import ALWAYS_ON, PolicyConfig
from batsim_google.simulation.settings import SimulationSettings

MODEL = "model.toml"
REPORT = "validation.json"
TABLE = "validation.csv"


@dataclass(frozen=True)
class MetricComparison:
    metric: str
    reference: float | None
    replications: int
    mean: float | None
    std: float | None
    ci_half_width: float | None
    relative_error: float | None
    replications_needed: int | None


@dataclass(frozen=True)
class Validation:
    original: str
    model: str
    tasks: int
    deviation: float
    left_out: list[str]
    replication_deviations: list[float]
    replications_needed: int | None
    metrics: list[MetricComparison]
    failed_runs: list[str]

    def to_mapping(self) -> dict:
        return asdict(self)


def _number(value) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def compare_metrics(reference: dict, generated: list[dict], error: float = ERROR) -> list[MetricComparison]:
    """Per queue metric: the reference against the replications' mean, spread and interval."""
    comparisons = []
    for name in QUEUE_METRICS:
        values = np.array([run[name] for run in generated if run.get(name) is not None], dtype=float)
        ref = reference.get(name)
        mean = float(values.mean()) if values.size else None
        std = float(values.std(ddof=1)) if values.size > 1 else None
        half = _number(float(half_width(std, values.size))) if std is not None else None
        relative = (mean - ref) / ref if mean is not None and ref else None
        needed = replications_needed(mean, std, error) if std is not None else None
        comparisons.append(MetricComparison(name, ref, int(values.size), mean, std, half, relative, needed))
    return comparisons


@dataclass(frozen=True)
class ModelCheck:
    """What a validation simulates: the ``original`` workload on ``platform``, and ``replications``
    workloads generated from ``model`` (None: fitted to the original as ``fit`` does by default)
    with seeds ``seed``, ``seed + 1``, ...; the queue metrics from ``warmup`` to the ``policy``'s
    horizon (or each run's end)."""

    original: Path
    platform: Path
    model: Path | None = None
    replications: int = 10
    seed: int = 0
    policy: PolicyConfig = PolicyConfig()
    warmup: float = 0.0


def validate(
    check: ModelCheck,
    output: Path,
    *,
    settings: SimulationSettings = SimulationSettings(),
    workers: int | None = None,
    dask_address: str | None = None,
    retry_failed: bool = False,
    on_record=None,
) -> Validation:
    """Simulate, compare and write ``model.toml`` (when fitted here), ``validation.json`` and
    ``validation.csv`` in ``output``; runs go to ``output/runs`` and are resumable (a run that
    failed before is run again only with ``retry_failed``; ``on_record``: see
    :func:`.execution.execute_runs`), ``workers`` at a time here or on the Dask scheduler at
    ``dask_address`` (``settings``: their time limit, Batsim and the progress bar over them)."""
    if check.replications < 1:
        raise ParameterError(f"replications must be >= 1 (got {check.replications})")
    output = output_folder(output)
    table = read_batsim_workload(check.original)
    model = check.model
    if model is None:
        model = output / MODEL
        save_model(fit_model(table, name=f"fitted from {Path(check.original).name}").model, model)
    campaign = Campaign(
        platforms=(PlatformSpec("platform", file=Path(check.platform).resolve()),),
        workloads=(
            WorkloadSpec("original", file=Path(check.original).resolve()),
            WorkloadSpec(
                "generated",
                model=Path(model).resolve(),
                tasks=table.height,
                seeds=tuple(range(check.seed, check.seed + check.replications)),
            ),
        ),
        failures=(FailureSpec("none"),),
        policies=(("policy", check.policy),),
        timeout=settings.timeout,
        energy_outputs=check.policy.energy != ALWAYS_ON,  # the queue metrics need no energy figures
        warmup=check.warmup,
    )
    runs = plan_campaign(campaign, output)
    with workers_without_the_main_script():
        records = execute_runs(
            runs,
            batsim=settings.batsim,
            workers=workers,
            dask_address=dask_address,
            progress=settings.progress,
            retry_failed=retry_failed,
            on_record=on_record,
        )
    failed = [f"{r.run.directory}: {r.error}" for r in records if r.status == "failed"]
    reference = next(r for r in records if r.run.workload == "original")
    if reference.queue is None:
        raise SimulationError(f"the original workload's simulation failed: {reference.error}")
    generated = [r.queue for r in records if r.run.workload == "generated" and r.queue is not None]
    if not generated:
        raise SimulationError("every simulation of a generated workload failed:\n" + "\n".join(failed))
    metrics = compare_metrics(reference.queue, generated)
    dev, left_out = deviation(reference.queue, {c.metric: c.mean for c in metrics})
    needed = [c.replications_needed for c in metrics if c.replications_needed is not None and c.metric not in left_out]
    validation = Validation(
        original=str(check.original),
        model=str(model),
        tasks=table.height,
        deviation=dev,
        left_out=left_out,
        replication_deviations=[deviation(reference.queue, run)[0] for run in generated],
        replications_needed=max(needed) if needed else None,
        metrics=metrics,
        failed_runs=failed,
    )
    write_text(output / REPORT, json.dumps(validation.to_mapping(), indent=1) + "\n")
    with AtomicFile(output / TABLE) as temporary:
        pl.DataFrame([asdict(c) for c in metrics]).write_csv(temporary)
    return validation
