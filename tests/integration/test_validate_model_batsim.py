"""`validate-model` in real Batsim: the google-2011-cell preset on a small sampled cell."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.experiments.replay_attempts import real_attempts
from batsim_google.experiments.replay_fidelity import BANDS, FIGURES, bands
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample

pytestmark = pytest.mark.batsim

START, END, MACHINES, SEED = 0.0, 600.0, 64, 1


@pytest.fixture(scope="module")
def validation(google_2011, batsim_binary, tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    arguments = ["validate-model", str(google_2011), "--start", str(START), "--end", str(END)]
    arguments += ["--sample-cell", str(MACHINES), "--seed", str(SEED), "-o", str(folder / "out")]
    arguments += ["--json", str(folder / "report.json"), "--batsim", batsim_binary, "--timeout", "300"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    return folder, json.loads((folder / "report.json").read_text()), result.output


def test_the_generated_cell_runs_and_is_judged_against_the_traces_sample(validation, google_2011):
    folder, report, output = validation
    assert "a generated cell cannot replay a given burst" in output and "simulated" in output
    assert "(balanced)" in output
    for band in BANDS:
        for side in ("real", "simulated"):
            assert set(report["bands"][band][side]) == set(FIGURES)
    real = real_attempts([google_2011], START, END, RowAccount(), sample=MachineSample(MACHINES, SEED))
    assert report["bands"]["all"]["real"] == pytest.approx(bands(real, END - START)["all"])
    assert report["cell"] == {"machines": MACHINES, "sampled": True, "seed": SEED}
    assert set(report["eviction_p_values"]) == set(report["targets"]) - {"cpu_in_use"}
    for name in ("wait_cdf.png", "cpu_in_use.png", "model_validation.json"):
        assert (folder / "out" / name).stat().st_size > 0


def test_the_warm_start_holds_the_sampled_cells_load_in_batsim(validation):
    folder, report, output = validation
    simulated = pl.read_parquet(folder / "out" / "simulated_attempts.parquet")
    # every generated job is a task of a priority group
    assert simulated["group"].null_count() == 0
    # the warm start runs from 0, past the capacity by the free tier's over-commit (within capacity,
    # 70 % of its tasks and 73 % of its CPU here; the rest waited)
    jobs = json.loads((folder / "out" / "workload.json").read_text())["jobs"]
    warm_cpu = sum(job["cpu"] for job in jobs if job.get("initial") == "running")
    initial = simulated.filter(pl.col("submit") == float("-inf"))
    started = initial["start"] < 1.0
    assert initial.height > 300 and started.fill_null(False).mean() > 0.9
    assert initial.filter(started)["cpu"].sum() > 0.95 * warm_cpu
