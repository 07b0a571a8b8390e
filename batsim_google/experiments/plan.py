"""A campaign's plan: every distinct input written once into the output folder, and the runs.

Generated inputs are named by a digest of what defines them (``google-s1-n64-3f9a0c1b22.json``),
so an input is reused whatever run needs it and by any later invocation, and a changed spec
writes a new file. Files are written under a temporary name and renamed when complete, so a file
that exists is whole. Each run carries a fingerprint of its inputs' contents and its policy, which
its completion marker keeps (see :mod:`.execution`), and the version of what a run writes and
measures, so that a run of an older version is simulated again rather than mixed with new ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from batsim_google.errors import InputFileError
from batsim_google.experiments.campaign import CELL_LOAD, Campaign, FailureSpec, PlatformSpec, WorkloadSpec
from batsim_google.generation.walltime import parse_walltime_mode
from batsim_google.generation.workload import (
    Generation,
    cell_load_scale,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import load_model
from batsim_google.output_files import AtomicFile, output_folder
from batsim_google.platform.batsim_events import write_availability_events
from batsim_google.platform.cell import google_2011_cell
from batsim_google.platform.energy import load_energy_model
from batsim_google.platform.failures import draw_failures
from batsim_google.platform.simgrid_xml import compute_hosts, write_platform
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.schedulers import BUILT_IN, COMMAND, PYTHON, Scheduler, window_end

INPUTS = "inputs"
RUNS = "runs"
DIGEST_CHARS = 10
#: Version of a run's outputs and metrics: raised when they change meaning (2: the load's energy,
#: tasks' end times; 3: one accounting for every scheduler kind, the campaign's window for all).
RUN_OUTPUTS_VERSION = 3


@dataclass(frozen=True)
class Run:
    """One simulation of a campaign: its labels, input files, scheduler and output folder."""

    platform: str
    workload: str
    workload_seed: int | None
    failures: str
    failure_seed: int | None
    policy: str
    platform_file: Path
    workload_file: Path
    events_file: Path | None
    scheduler: Scheduler
    directory: Path
    timeout: float
    energy_outputs: bool
    fingerprint: str
    #: Start of the metrics' window (its end: the policy's horizon, else the campaign's).
    warmup: float = 0.0
    #: The campaign's horizon: the window's end for a scheduler of another kind than a policy.
    horizon: float | None = None

    @property
    def window_end(self) -> float | None:
        """Where the metrics end: the policy's horizon (which the campaign's fills in), else the campaign's."""
        return window_end(self.scheduler, self.horizon)

    @property
    def config(self) -> PolicyConfig | None:
        """The built-in scheduler's options (None for another kind)."""
        return self.scheduler.config

    def labels(self) -> dict:
        return {
            "platform": self.platform,
            "workload": self.workload,
            "workload_seed": self.workload_seed,
            "failures": self.failures,
            "failure_seed": self.failure_seed,
            "policy": self.policy,
        }


def file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _digest(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:DIGEST_CHARS]


def _write_once(path: Path, write: Callable[[Path], object]) -> Path:
    """Write ``path`` with ``write`` unless it exists, through a temporary file renamed at the end."""
    if not path.exists():
        output_folder(path.parent)
        with AtomicFile(path) as temporary:
            write(temporary)
    return path


def _seed_label(name: str, seed: int | None) -> str:
    return name if seed is None else f"{name}-s{seed}"


class _Inputs:
    """Writes inputs once and remembers file digests within one planning."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._digests: dict[Path, str] = {}

    def digest(self, path: Path | None) -> str | None:
        if path is None:
            return None
        if path not in self._digests:
            self._digests[path] = file_digest(path)
        return self._digests[path]

    def platform(self, spec: PlatformSpec) -> tuple[Path, int]:
        """The platform file and its machine count."""
        if spec.file is not None:
            machines = len(compute_hosts(spec.file))
            if machines == 0:
                raise InputFileError(f"platforms.{spec.name}: {spec.file} has no compute host")
            return spec.file, machines
        key = _digest({"cell": spec.cell, "energy": self.digest(spec.energy)})
        path = self.folder / "platforms" / f"{spec.name}-{key}.xml"
        _write_once(path, lambda p: write_platform(p, google_2011_cell(spec.cell), load_energy_model(spec.energy)))
        return path, spec.cell

    def workload(self, spec: WorkloadSpec, seed: int | None, machines: int) -> Path:
        if spec.file is not None:
            return spec.file
        if spec.trace:
            return self._trace_window(spec, seed, machines)
        scale = cell_load_scale(machines) if spec.arrival_scale == CELL_LOAD else spec.arrival_scale
        key = _digest(
            {
                "preset": spec.preset,
                "model": self.digest(spec.model),
                "tasks": spec.tasks,
                "duration": spec.duration,
                "seed": seed,
                "grain": spec.grain,
                "requests": self.digest(spec.requests),
                "nb_res": machines,
                "arrival_scale": scale,
                **({} if spec.walltime == "none" else {"walltime": spec.walltime}),
                **({"warm_start": True} if spec.warm_start else {}),
            }
        )
        path = self.folder / "workloads" / f"{_seed_label(spec.name, seed)}-n{machines}-{key}.json"

        def write(target: Path) -> None:
            model = load_model(spec.model) if spec.model else preset(spec.preset)
            write_generated_workload(
                target,
                model,
                load_request_law(spec.requests),
                seed,
                Generation(
                    tasks=spec.tasks,
                    duration=spec.duration,
                    nb_res=machines,
                    grain=spec.grain,
                    arrival_scale=scale,
                    warm=spec.warm_start,
                    walltime=parse_walltime_mode(spec.walltime),
                ),
            )

        return _write_once(path, write)

    def _trace_window(self, spec: WorkloadSpec, seed: int | None, machines: int) -> Path:
        """The trace window of ``spec`` replayed on ``machines`` machines, sampled with ``seed``."""
        from batsim_google.trace.convert import Selection, convert_trace
        from batsim_google.trace.row_accounting import RowAccount
        from batsim_google.trace.sampling import MachineSample

        key = _digest(
            {
                "trace": [self.digest(part) for part in spec.trace],
                "window": [spec.start, spec.end],
                "seed": seed,
                "grain": spec.grain,
                "nb_res": machines,
                "walltime": spec.walltime,
            }
        )
        path = self.folder / "workloads" / f"{_seed_label(spec.name, seed)}-n{machines}-{key}.json"
        selection = Selection(
            start=spec.start,
            end=math.inf if spec.end is None else spec.end,
            initial_state=True,
            sample=MachineSample(machines, seed or 0),
            grain=spec.grain,
            walltime=parse_walltime_mode(spec.walltime),
            walltime_seed=seed or 0,
        )
        return _write_once(
            path,
            lambda target: convert_trace(
                spec.trace,
                target,
                selection,
                RowAccount(),
                nb_res=machines,
            ),
        )

    def failures(self, spec: FailureSpec, seed: int | None, machines: int) -> Path | None:
        if spec.file is not None or spec.law is None:
            return spec.file
        key = _digest(
            {"law": dataclasses.asdict(spec.law), "horizon": spec.horizon, "seed": seed, "machines": machines}
        )
        path = self.folder / "failures" / f"{_seed_label(spec.name, seed)}-n{machines}-{key}.jsonl"

        def write(target: Path) -> None:
            write_availability_events(
                target, draw_failures(machines, spec.law, spec.horizon, np.random.default_rng(seed))
            )

        return _write_once(path, write)


def scheduler_fingerprint(scheduler: Scheduler) -> dict:
    """What of a scheduler a run's fingerprint keeps: a policy's fields as before any other kind
    existed (earlier runs stay complete), another kind's description and its files' contents."""
    if scheduler.kind == BUILT_IN:
        return {"policy": dataclasses.asdict(scheduler.config)}
    if scheduler.kind == COMMAND:  # an argument list, not a file (a long one is no valid file name)
        return {"scheduler": scheduler.label(), "source": None}
    target = str(scheduler.target).rpartition(":")[0] if scheduler.kind == PYTHON else str(scheduler.target)
    source = Path(target)
    return {"scheduler": scheduler.label(), "source": file_digest(source) if source.is_file() else None}


def plan_campaign(campaign: Campaign, output: Path) -> list[Run]:
    """Write the campaign's inputs under ``output/inputs`` (once each) and list its runs, whose
    outputs go to ``output/runs/PLATFORM/WORKLOAD[-sSEED]/FAILURES[-sSEED]/POLICY``."""
    output = Path(output).resolve()
    inputs = _Inputs(output / INPUTS)
    runs = []
    for platform in campaign.platforms:
        platform_file, machines = inputs.platform(platform)
        for workload in campaign.workloads:
            for workload_seed in workload.seeds:
                workload_file = inputs.workload(workload, workload_seed, machines)
                for failures in campaign.failures:
                    for failure_seed in failures.seeds:
                        events_file = inputs.failures(failures, failure_seed, machines)
                        folder = (
                            output
                            / RUNS
                            / platform.name
                            / _seed_label(workload.name, workload_seed)
                            / _seed_label(failures.name, failure_seed)
                        )
                        for policy, scheduler in campaign.all_schedulers():
                            if (policy, platform.name, failures.name) in campaign.skipped:
                                continue
                            fingerprint = _digest(
                                {
                                    "platform": inputs.digest(platform_file),
                                    "workload": inputs.digest(workload_file),
                                    "events": inputs.digest(events_file),
                                    **scheduler_fingerprint(scheduler),
                                    "energy_outputs": campaign.energy_outputs,
                                    "outputs": RUN_OUTPUTS_VERSION,
                                    "warmup": campaign.warmup,
                                    "horizon": campaign.horizon,
                                }
                            )
                            runs.append(
                                Run(
                                    platform.name,
                                    workload.name,
                                    workload_seed,
                                    failures.name,
                                    failure_seed,
                                    policy,
                                    platform_file,
                                    workload_file,
                                    events_file,
                                    scheduler,
                                    folder / policy,
                                    campaign.timeout,
                                    campaign.energy_outputs,
                                    fingerprint,
                                    campaign.warmup,
                                    campaign.horizon,
                                )
                            )
    return runs
