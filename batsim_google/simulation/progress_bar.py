"""``run``'s progress bar: simulated time against the workload's horizon, with the estimator's ETA.

The total is the workload's last submission, or the scheduler's horizon when it is earlier
(:func:`progress_horizon`): after it only the jobs still running end, which the scheduler does
not report as progress. The time left is the cost
model's predicted wall time (:mod:`batsim_google.simulation.cost_model`) less the time spent so
far, since the pace of simulated time is far from steady (it slows as jobs pile up).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from batsim_google.errors import SimulationError
from batsim_google.simulation.batsim_binary import batsim_binary
from batsim_google.simulation.cost_model import WorkloadCost, estimate, read_workload_cost


def progress_horizon(cost: WorkloadCost, horizon: float = 0.0) -> float:
    """The simulated time the bar counts to: the workloads' last submission, or the scheduler's
    ``horizon`` (0: none) when earlier."""
    return min(cost.horizon, horizon) if horizon > 0 else cost.horizon


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(max(seconds, 0)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


class ProgressBar:
    """A bar over simulated seconds, updated from the scheduler's progress file (:meth:`follow`)."""

    def __init__(
        self,
        progress_file: Path,
        machines: int,
        workloads: Sequence[Path],
        enabled: bool,
        horizon: float = 0.0,
        batsim: str = "batsim",
    ) -> None:
        self.progress_file = progress_file
        self._started = time.monotonic()
        total = predicted = None
        if enabled:  # reading the workloads costs time: only for a bar that is shown
            cost = read_workload_cost(*workloads, horizon=horizon or None)
            try:
                kind = batsim_binary(batsim).kind
            except SimulationError:  # the run itself says what is wrong with it
                kind = "stock"
            total, predicted = progress_horizon(cost, horizon), estimate(cost, machines, kind).wall_seconds
        self._predicted = predicted
        self.bar = tqdm(
            disable=not enabled,
            total=total,
            desc="simulated time",
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s [{elapsed}{postfix}]",
            postfix=self._left(),
        )

    def _left(self) -> str:
        """The predicted wall time left (tqdm puts ", " before it)."""
        if self._predicted is None:
            return ""
        return f"left ~{_duration(self._predicted - (time.monotonic() - self._started))}"

    def follow(self) -> None:
        """Show the simulated time the scheduler last reported."""
        if self.progress_file.exists():
            text = self.progress_file.read_text().strip()
            if text:
                self.bar.n = min(float(text), self.bar.total or float(text))
                self.bar.postfix = self._left()
                self.bar.refresh()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.follow()  # the time reached at the end, which the last poll may have missed
        self.bar.close()
