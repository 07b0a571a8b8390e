"""``batsim-google compare``: a campaign from its file to its tables and figures."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from batsim_google.experiments.campaign import Campaign
from batsim_google.experiments.execution import RunRecord, execute_runs
from batsim_google.experiments.figures import write_plots
from batsim_google.experiments.plan import plan_campaign
from batsim_google.experiments.report import runs_table, summary_table, write_tables
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
) -> Comparison:
    """Write the inputs, run what is not complete yet, then the tables and figures, in ``output``."""
    refuse_while_loading("a campaign")  # a script's calls, run again as its policy is loaded
    output = Path(output)
    runs = plan_campaign(campaign, output)
    with workers_without_the_main_script():
        records = execute_runs(runs, batsim=batsim, workers=workers, dask_address=dask_address, progress=progress)
    table = runs_table(records)
    summary = summary_table(table)
    files = write_tables(output, table, summary)
    if summary.height:
        files += write_plots(output / PLOTS, table, summary, {run.platform: run.platform_file for run in runs})
    return Comparison(records, table, summary, files)
