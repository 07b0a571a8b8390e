"""``batsim-google compare``: a campaign from its file to its tables and figures.

Before the runs, each one still to do whose predicted wall time (:mod:`batsim_google.simulation.cost_model`)
is past its timeout is reported: it would most likely time out, after spending the whole timeout.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from batsim_google.experiments.campaign import Campaign
from batsim_google.experiments.execution import RunRecord, completed, execute_runs, recorded_failure
from batsim_google.experiments.figures import write_plots
from batsim_google.experiments.plan import Run, plan_campaign
from batsim_google.experiments.report import runs_table, summary_table, write_tables
from batsim_google.output_files import locked_folder
from batsim_google.simulation.policy_loader import refuse_while_loading

PLOTS = "plots"


@dataclass(frozen=True)
class Comparison:
    records: list[RunRecord]
    runs: pl.DataFrame
    summary: pl.DataFrame
    files: list[Path]

    @property
    def failed(self) -> list[RunRecord]:
        return [record for record in self.records if record.status == "failed"]


@contextlib.contextmanager
def workers_without_the_main_script() -> Iterator[None]:
    """Start local worker processes that do not run the calling script again.

    A worker process starts a fresh Python (``spawn``) that imports the script which started the
    work, to find what it was given; a script's calls not kept under ``if __name__ ==
    "__main__":`` would then start the whole work again in each worker, which Python refuses (the
    pool breaks). The workers need nothing of the script (a policy of it is named by its file), so
    the script is not named to them while they start."""
    main = sys.modules["__main__"]
    kept = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.update(kept)


def compare(
    campaign: Campaign,
    output: Path,
    *,
    batsim: str = "batsim",
    workers: int | None = None,
    dask_address: str | None = None,
    progress: bool = True,
    retry_failed: bool = False,
    on_record: Callable[[RunRecord, int, int], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> Comparison:
    """Write the inputs, run what is not complete yet (``retry_failed``: and what failed before),
    then the tables and figures, in ``output``; ``warn`` hears of the runs predicted to time out,
    ``on_record`` of each run as it ends (see :func:`.execution.execute_runs`)."""
    refuse_while_loading("a campaign")  # a script's calls, run again as its policy is loaded
    output = Path(output)
    with locked_folder(output):  # a second campaign into this folder fails at once
        runs = plan_campaign(campaign, output)
        if warn is not None:
            todo = [run for run in runs if not completed(run) and (retry_failed or not recorded_failure(run))]
            for warning in timeout_warnings(todo, batsim):
                warn(warning)
        with workers_without_the_main_script():
            records = execute_runs(
                runs,
                batsim=batsim,
                workers=workers,
                dask_address=dask_address,
                progress=progress,
                retry_failed=retry_failed,
                on_record=on_record,
            )
        table = runs_table(records)
        summary = summary_table(table)
        files = write_tables(output, table, summary)
        if summary.height:
            files += write_plots(output / PLOTS, table, summary, {run.platform: run.platform_file for run in runs})
    return Comparison(records, table, summary, files)


#: A run is reported when its predicted wall time is past this share of its timeout.
PAST_TIMEOUT = 1.0


def timeout_warnings(runs: list[Run], batsim: str) -> list[str]:
    """A line per group of runs (same workload and platform) predicted to take longer than their
    timeout with this Batsim; none when the Batsim cannot be asked its kind."""
    from batsim_google.errors import SimulationError
    from batsim_google.platform.simgrid_xml import compute_hosts
    from batsim_google.simulation.batsim_binary import batsim_binary
    from batsim_google.simulation.cost_model import estimate, read_workload_cost

    try:
        kind = batsim_binary(batsim).kind
    except SimulationError:
        return []  # each run says it
    groups: dict[tuple[Path, Path], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.workload_file, run.platform_file), []).append(run)
    lines = []
    for (workload, platform), group in groups.items():
        seconds = estimate(read_workload_cost(workload), len(compute_hosts(platform)), kind).wall_seconds
        timeout = min(run.timeout for run in group)
        if seconds > PAST_TIMEOUT * timeout:
            lines.append(
                f"{len(group)} run(s) of {group[0].workload} on {group[0].platform} are predicted to take about "
                f"{seconds:.0f} s with the {kind} Batsim, past the campaign's timeout ({timeout:g} s): they will "
                "most likely time out (raise timeout, or run a smaller workload)"
            )
    return lines
