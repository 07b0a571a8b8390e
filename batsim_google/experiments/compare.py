"""``batsim-google compare``: a campaign from its file to its tables and figures."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from batsim_google.experiments.campaign import Campaign
from batsim_google.experiments.execution import RunRecord, execute_runs
from batsim_google.experiments.figures import write_plots
from batsim_google.experiments.plan import plan_campaign
from batsim_google.experiments.report import runs_table, summary_table, write_tables
from batsim_google.output_files import locked_folder

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
    with locked_folder(output):  # a second campaign into this folder fails at once
        runs = plan_campaign(campaign, output)
        records = execute_runs(runs, batsim=batsim, workers=workers, dask_address=dask_address, progress=progress)
        table = runs_table(records)
        summary = summary_table(table)
        files = write_tables(output, table, summary)
        if summary.height:
            files += write_plots(output / PLOTS, table, summary, {run.platform: run.platform_file for run in runs})
    return Comparison(records, table, summary, files)
