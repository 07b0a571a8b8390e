"""The campaign's and the fit's figures are written, with energy in a readable unit and curves told apart."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from batsim_google.experiments.figures import write_plots
from batsim_google.experiments.report import summary_table
from batsim_google.figure_style import curve_style
from batsim_google.fitting.fit_figures import _cdf_figure
from batsim_google.fitting.select import LawFit
from batsim_google.model.laws import Exponential

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _saved(monkeypatch) -> list[Figure]:
    """Collect the figures as they are saved."""
    saved, save = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, path, **kw: (saved.append(self), save(self, path, **kw)))
    return saved


def test_campaign_figures_are_written_with_energy_in_a_readable_unit(tmp_path, monkeypatch):
    runs = []
    for policy, seed in (("always-on", 1), ("always-on", 2), ("idle-sleep", 1)):
        directory = tmp_path / f"{policy}-{seed}"
        shutil.copytree(FIXTURES / "run4", directory)
        from batsim_google.experiments.metrics import run_metrics
        from batsim_google.experiments.outputs import RunOutputs

        metrics = run_metrics(RunOutputs(directory), FIXTURES / "cell4_energy.xml")
        runs.append(
            {
                "platform": "cell4",
                "workload": "w",
                "workload_seed": seed,
                "failures": "none",
                "failure_seed": None,
                "policy": policy,
                "status": "done",
                "wall_seconds": 1.0,
                **metrics,
                "directory": str(directory),
            }
        )
    table = pl.DataFrame(runs, schema_overrides={"failure_seed": pl.Int64}, infer_schema_length=None)
    saved = _saved(monkeypatch)
    written = write_plots(tmp_path / "plots", table, summary_table(table), {"cell4": FIXTURES / "cell4_energy.xml"})
    names = {path.name for path in written}
    assert names == {
        "energy_vs_waiting.png",
        "timeline-cell4-w-none.png",
        "suspension-cell4-w-none.png",
        "waiting-cell4-w-none.png",
    }
    assert all(path.stat().st_size > 0 for path in written)
    energy = saved[0].axes[0]
    assert energy.get_ylabel() == "energy (kJ)"  # run4's 45 kJ
    assert "over 1-2 runs" in energy.get_title()
    waiting = saved[-1].axes
    assert [ax.get_xlabel() for ax in waiting] == [
        "waiting time per task (s)",
        "bounded slowdown per task (bound 10 s)",
    ]
    assert len(waiting[0].get_lines()) == 2  # one CDF per policy


def test_a_fits_thirteen_curves_have_distinct_styles(tmp_path, monkeypatch):
    assert len({(curve_style(i)["color"], curve_style(i)["linestyle"]) for i in range(20)}) == 20
    fits = [LawFit(f"method {i}", Exponential(1.0 + i / 10), 0.1, 0.0, 0.0, 0.0) for i in range(13)]
    saved = _saved(monkeypatch)
    _cdf_figure(tmp_path / "cdf.png", np.random.default_rng(0).exponential(1.0, 200), fits, fits[0], "t", "s")
    assert (tmp_path / "cdf.png").stat().st_size > 0
    curves = [line for line in saved[0].axes[0].get_lines() if line.get_label().startswith("method")]
    assert len({(line.get_color(), line.get_linestyle()) for line in curves}) == 13


def test_a_fits_cdf_rises_from_0_names_its_best_law_and_keeps_its_legend_beside(tmp_path, monkeypatch):
    fits = [LawFit(f"method {i}", Exponential(1.0 + i), 0.1 * (i + 1), 0.0, 0.0, 0.0) for i in range(3)]
    saved = _saved(monkeypatch)
    _cdf_figure(tmp_path / "cdf.png", np.array([2.0, 2.0, 5.0]), fits, fits[1], "t", "s")
    axes = saved[0].axes[0]
    empirical = axes.get_lines()[0]
    assert empirical.get_ydata()[0] == 0.0 and axes.get_ylim()[1] > 1.0  # the top step inside the frame
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels[2] == "method 1 (KS 0.200, best)" and "best" not in labels[1]
    assert axes.get_legend().get_bbox_to_anchor().x0 > axes.get_window_extent().x1  # beside the curves
