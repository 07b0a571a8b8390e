"""One simulation and its metrics: what ``batsim-google run`` does, and the Python API's
:func:`simulate`.

The run is :func:`batsim_google.simulation.run.run_scheduler`'s, with a scheduler of any kind. Its
metrics (:mod:`.metrics`) are taken over a window (:mod:`.window`) that is the same for every kind,
as in a campaign: from ``warmup`` to ``horizon`` (the built-in scheduler also stops there, unless
its options set its own horizon; the other kinds run to their end), or, without a horizon, to the
end of the workload's span (``window="span"``) or of the run (``window="run"``). They are written
beside Batsim's outputs as ``metrics.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batsim_google.errors import ParameterError

if TYPE_CHECKING:  # the modules themselves are imported by the calls (the command line starts at once)
    from batsim_google.experiments.run_tables import RunTables
    from batsim_google.scheduling.policy_api import Policy
    from batsim_google.scheduling.policy_config import PolicyConfig
    from batsim_google.simulation.run import SimulationRun
    from batsim_google.simulation.schedulers import Scheduler
    from batsim_google.simulation.settings import RunInputs, SimulationSettings

#: Where the metrics end without a horizon: the workload's span, or the run's end.
WINDOW_ENDS = ("span", "run")


@dataclass(frozen=True)
class MeasuredRun:
    """A run that ended well: its output folder, its metrics and the file they were written to
    (``metrics.json``), whether they were measured over the workload's span, and the simulation
    (the scheduler's accounting summary, wall time and memory)."""

    output: Path
    metrics: dict
    metrics_file: Path
    spanned: bool
    simulation: SimulationRun


def simulate(
    scheduler: Scheduler | PolicyConfig | type[Policy] | str,
    inputs: RunInputs,
    output: str | Path,
    settings: SimulationSettings | None = None,
    *,
    warmup: float = 0.0,
    horizon: float | None = None,
    window: str = "span",
    tables: RunTables | None = None,
) -> MeasuredRun:
    """Simulate ``inputs`` with ``scheduler`` (any kind: see
    :meth:`~batsim_google.simulation.schedulers.Scheduler.of`) into ``output`` and measure the run
    from ``warmup`` to ``horizon`` (see the module); raise SimulationError when it fails.
    ``tables``: the run's (:class:`~batsim_google.experiments.run_tables.RunTables` of ``output``
    and the workloads), when the caller draws its figures from them too.

    A script that runs a Policy subclass of its own keeps its calls under
    ``if __name__ == "__main__":``: the scheduler's process imports the script to find the class.
    """
    from batsim_google.experiments.metrics import run_metrics, write_metrics
    from batsim_google.experiments.outputs import RunOutputs
    from batsim_google.experiments.window import span_window, window_of
    from batsim_google.simulation.run import run_scheduler
    from batsim_google.simulation.schedulers import Scheduler, window_end, with_horizon
    from batsim_google.simulation.settings import SimulationSettings

    if window not in WINDOW_ENDS:
        raise ParameterError(f"window must be one of {', '.join(WINDOW_ENDS)} (got {window!r})")
    scheduler = Scheduler.of(scheduler)
    end = window_end(scheduler, horizon or None)
    measured = window_of(warmup, end)  # a window that leaves nothing is refused before the run
    run = run_scheduler(
        with_horizon(scheduler, horizon or None), inputs, Path(output), settings or SimulationSettings()
    )
    outputs = RunOutputs(run.output)
    span = None if end or window == "run" else span_window(outputs.submissions(), warmup)
    metrics = run_metrics(outputs, inputs.platform, span or measured, list(inputs.workloads), tables)
    return MeasuredRun(run.output, metrics, write_metrics(Path(output), metrics), span is not None, run)


def not_restarted_line(metrics: Mapping, scheduler: Scheduler) -> str | None:
    """What a run's tasks stopped and never restarted mean, in the terms of its scheduler."""
    count = metrics.get("not_restarted")
    if not count:
        return None
    config = scheduler.config
    why = (
        f"--restart {config.restart}, --max-restarts {config.max_restarts}"
        if config is not None
        else f"the {scheduler.kind} scheduler {scheduler.target} restarted none of them"
    )
    return f"{count} task(s) stopped and not restarted ({why}): their work is lost"
