"""``validate-model``: a generated cell judged by the scheduling outcomes it produces.

A model (or a ready workload) gives a warm-started window of the window's length, on the whole cell
or a sampled cell of N machines (the model's whole-cell arrivals stretched by 12,583 / N, its
resident tasks drawn for N machines); it is run in Batsim with the Google-cell scheduler, stopped
at the window's end, and compared with the trace's same hours by validate-replay's definitions
(:mod:`.replay_fidelity`): the trace's side is the replay's (:func:`.replay_attempts.real_attempts`),
the run's the replay's (:func:`.replay_attempts.simulated_attempts`, which gives a generated job
the priority group of its model priority). A generated cell draws its jobs from laws: it cannot
replay a given burst of the trace, so its distributions over the whole window are judged (no
bursts, no largest-job target) and, per hour, the tasks submitted and the CPU in use. Outputs in
the folder: the workload and platform, the run (``run/``), ``model_validation.json`` and the figures.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.experiments.replay_attempts import real_attempts
from batsim_google.experiments.replay_fidelity import BANDS, compare, cpu_per_minute, eviction_p_values, targets
from batsim_google.experiments.replay_figures import draw_figures
from batsim_google.experiments.replay_validation import (
    ATTEMPTS,
    PLATFORM,
    RUN,
    WORKLOAD,
    report_lines,
    sampled_policy,
    simulate,
    window_policy,
)
from batsim_google.model.workload_model import WorkloadModel
from batsim_google.output_files import output_folder, write_text
from batsim_google.platform.cell import google_2011_cell
from batsim_google.platform.energy import load_energy_model
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.platform.simgrid_xml import write_platform
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.settings import SimulationSettings
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample

REPORT = "model_validation.json"
HOUR_S = 3600.0
#: What the report says it judges, and why not the bursts.
JUDGED = (
    "a generated cell cannot replay a given burst of the trace: distributions over the whole window "
    "are judged (no bursts, no largest-job target)"
)


@dataclass(frozen=True)
class ModelWindow:
    """What is generated and compared: a window of ``end - start`` s drawn with ``seed``, warm at
    0, against the trace's ``[start, end)``; on the whole cell or a sampled cell of ``machines``
    (its real side: the machines sampled with ``seed``)."""

    start: float
    end: float
    seed: int = 0
    machines: int | None = None

    @property
    def sample(self) -> MachineSample | None:
        return None if self.machines is None else MachineSample(self.machines, self.seed)

    @property
    def nb_res(self) -> int:
        return GOOGLE_2011_MACHINES if self.machines is None else self.machines


def write_window_workload(path: Path, model: WorkloadModel, window: ModelWindow) -> int:
    """The window's generated workload (warm-started, the window's length, the cell's load per
    machine on ``window.nb_res`` machines: on a sampled cell, the whole cell's jobs with each task
    kept at the sample's share, as a sampled real cell sees parts of many jobs) in ``path``;
    returns its job count."""
    from batsim_google.generation.workload import Generation, cell_load_scale, write_generated_workload
    from batsim_google.model.request_law import load_request_law

    generation = Generation(
        duration=window.end - window.start,
        nb_res=window.nb_res,
        task_share=1.0 / cell_load_scale(window.nb_res),
        warm=True,
    )
    return write_generated_workload(path, model, load_request_law(), window.seed, generation)


def hourly(real: pl.DataFrame, simulated: pl.DataFrame, duration: float) -> dict:
    """Per hour of the window (the last one may be shorter): tasks submitted per priority group
    and CPU in use (the mean of its minutes), real and simulated."""
    edges = np.append(np.arange(0.0, duration, HOUR_S), duration)

    def submitted(table: pl.DataFrame) -> list[int]:
        times = table.filter((pl.col("submit") >= 0) & (pl.col("submit") < duration))["submit"].to_numpy()
        return np.histogram(times, edges)[0].tolist()

    def cpu(table: pl.DataFrame) -> list[float | None]:
        minutes = cpu_per_minute(table, duration)
        hour = (np.arange(minutes.size) * 60.0 // HOUR_S).astype(int)
        return [float(minutes[hour == h].mean()) if (hour == h).any() else None for h in range(edges.size - 1)]

    sides = {"real": real, "simulated": simulated}
    groups = {
        band: {side: submitted(t if band == "all" else t.filter(pl.col("group") == band)) for side, t in sides.items()}
        for band in BANDS
    }
    return {
        "hour_starts_s": edges[:-1].tolist(),
        "tasks_submitted": groups,
        "cpu_in_use": {side: cpu(table) for side, table in sides.items()},
    }


def validate_model(
    trace: Path,
    window: ModelWindow,
    output: Path,
    source: WorkloadModel | Path,
    policy: PolicyConfig = PolicyConfig(),
    *,
    settings: SimulationSettings = SimulationSettings(),
    workers: int = 1,
    say: Callable[[str], None] = lambda line: None,
    run: Callable = simulate,
) -> dict:
    """Generate the window from ``source`` (a model; a path: a ready workload, used as it is), run
    it (``run``: :func:`simulate`), compare with the trace's window; returns the report (also
    written as ``model_validation.json``)."""
    # checked before anything runs; a sampled cell's jobs keep the sample's share of their tasks, so
    # its passes too, as a sampled replay's
    policy = sampled_policy(window_policy(policy, window.start, window.end), window.sample)
    output = output_folder(output)
    duration = window.end - window.start
    platform = output / PLATFORM
    if isinstance(source, Path):
        workload = source
        say(f"simulating {workload}")
    else:
        workload = output / WORKLOAD
        jobs = write_window_workload(workload, source, window)
        say(f"wrote {jobs} generated jobs to {workload} (seed {window.seed}, warm start, {duration:g} s)")
    write_platform(platform, google_2011_cell(window.machines), load_energy_model())
    simulated, summary = run(policy, platform, workload, output / RUN, settings)
    say(f"simulated {summary['submitted']} tasks ({'balanced' if summary['balanced'] else 'NOT balanced'})")
    real = real_attempts([trace], window.start, window.end, RowAccount(), sample=window.sample, workers=workers)
    for name, table in (("real", real), ("simulated", simulated)):
        table.write_parquet(output / ATTEMPTS[name])
    report = {
        **compare(real, simulated, duration),
        "window": {"start": window.start, "end": window.end},
        "cell": {"machines": window.nb_res, "sampled": window.machines is not None, "seed": window.seed},
        "workload": {"file": str(workload), "generated_with_seed": None if isinstance(source, Path) else window.seed},
        "policy": dataclasses.asdict(policy),
        "judged": JUDGED,
        "hourly": hourly(real, simulated, duration),
    }
    report["eviction_p_values"] = eviction_p_values(report)
    report["targets"] = targets(report)
    write_text(output / REPORT, json.dumps(report, indent=1) + "\n")
    for path in draw_figures(real, simulated, duration, output):
        say(f"wrote {path}")
    return report


def model_report_lines(report: dict) -> Iterable[str]:
    """What is judged, the replay's table (:func:`.replay_validation.report_lines`), then per
    hour the tasks submitted and the CPU in use, real / simulated."""
    yield "judged: " + report["judged"]
    yield from report_lines(report)
    per_hour = report["hourly"]
    yield "per hour: tasks submitted per group, real/simulated; CPU in use, real / simulated"
    yield "hour" + "".join(f"{band:>16}" for band in BANDS) + "   CPU in use"
    for index, start in enumerate(per_hour["hour_starts_s"]):
        counts = per_hour["tasks_submitted"]
        tasks = "".join(f" {counts[band]['real'][index]:>7}/{counts[band]['simulated'][index]:<7}" for band in BANDS)
        cpu = [per_hour["cpu_in_use"][side][index] for side in ("real", "simulated")]
        yield f"{start / HOUR_S:>4g} {tasks}   {' / '.join('-' if c is None else f'{c:,.1f}' for c in cpu)}"
