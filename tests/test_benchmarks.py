"""The benchmarks run end to end at toy sizes and print their figures.

Nothing here times anything (the figures are the benchmarks' business); it keeps ``bench/`` from
breaking unnoticed, since no other test imports it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import GOOGLE_2011, REPO

PART = GOOGLE_2011 / "task_events" / "part-00001-of-00500.csv.gz"


def run_bench(*arguments: str) -> str:
    """Run ``python -m bench.NAME ARGUMENTS`` from the repository's root; its standard output."""
    done = subprocess.run(
        [sys.executable, "-m", *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (
            ("bench.generator", "--tasks", "2000", "--baseline-tasks", "200", "--runs", "2", "--memory-tasks", "2000"),
            ["runs                 : 2, in turn", "ratio", "peak memory, 2000 tasks"],
        ),
        (("bench.fit", "--sizes", "2000"), ["hypergamma3-ml"]),
        (
            ("bench.workload_reader", "--tasks", "2000", "--rounds", "1"),
            ["shape scan", "100,000 nested [ (200 KB) refused"],
        ),
        (("bench.policy", "--tasks", "300", "600"), ["300 tasks: ", " events, ", "growth 300 -> 600 tasks"]),
        (
            ("bench.warm_start", "--machines", "300"),
            ["tasks at time 0 on 300 machines", "one by one: ", "  together: ", "less CPU than one by one"],
        ),
        (
            ("bench.startup", "--runs", "1"),
            [
                "heavy libraries (baseline)",
                "batsim-google --help",
                "batsim-google generate --help",
                "generate --tasks 1",
                "scheduler import (googleCell)",
            ],
        ),
    ],
)
def test_benchmark_without_batsim(arguments, expected):
    output = run_bench(*arguments)
    for text in expected:
        assert text in output


def test_generator_benchmark_with_a_job_model(tmp_path):
    from job_models import job_model

    from batsim_google.model.workload_model import save_model

    save_model(job_model(), tmp_path / "jobs.toml")
    arguments = ("--tasks", "2000", "--baseline-tasks", "200", "--runs", "1", "--memory-tasks", "2000")
    output = run_bench("bench.generator", *arguments, "--model", str(tmp_path / "jobs.toml"))
    for text in ("(job-level arrivals)", "ratio", "peak memory, 2000 tasks"):
        assert text in output


def test_bursts_derivation_prints_the_preemption_figures(google_2011):
    output = run_bench("bench.borg_bursts", "--trace", str(GOOGLE_2011))
    for figure in (
        "evictions at a placement's instant on their machine: 14,466 of 16,135",
        "evicting, bursts of 1-99        : 18.5 / 23.2 / 28.2 / 32.8 / 40.9 (751)",
        "above 0.05 of memory: 0.543 of 5,051 placements",
        "never scheduled in the input (nor killed pending): 1,105, of 6 jobs, 986 of job 6218406404",
        "the lowest went first in 98.4% of 2,169",
        "priority 1    : 57.1% of 564 (899), 3.4% of 178 (7), 0.4% of 2,169 (20), 59.5% of 7,702 (7,091)",
        "above the free tier and 0.05 of memory: 0.521 of 4,093 placements",
        "1,000+    10.8% of 53,678  46.2% of  9,004   3.7% of 44,674",
        "2-8      : under 10 % 131 (63,895), 10-90 % 3 (2,463), over 90 % 3 (478)",
        "1 (free) : under 10 % 1 (2,000), 10-90 % 4 (6,319), over 90 % 2 (1,315)",
        "1 -> 0: 7,989, 2 -> 0: 4,809, 2 -> 1: 46",
        "evicting them, per hour: 60.1% of 539, 3.8% of 156, 0.4% of 2,102, 61.0% of 7,599; pooled 0.479",
        "alone                : 0.062 of 689 (530 jobs)",
        "per machine and instant 0.96 (3,574)",
        "after an eviction: 15,831, median wait per hour 2.6, 1.7, 1.6, 15.4 s",
        "burst, memory > CPU  : 0.818 of 5,576 (9 jobs)",
        "burst, memory <= CPU : 0.090 of 4,131 (19 jobs)",
        "6252521393 at 13,694 s: 1,989, 11.9%, 0.0625 / 0.0318",
        "bursts of 20+: correlation of log size and median wait -0.10 (432 bursts)",
        "3 :   822, 32.4 s (32.5, 29.4, 27.5, 36.9);  108, 27.3 s; max of 3: 34.8 s",
        "victims             : 5.62 / 5.66, 11.95 / 12.20, 8.38 / 8.48, 10.99 / 10.58; better on 3 of 4",
        "span 10th-90th percentile against size, Spearman +0.22 (13 waves)",
        "others_evicting     : 7.84 / 5.89, 8.95 / 12.97, 4.77 / 10.09, 10.52 / 11.42; better on 3 of 4",
        "6252490613: 13,293.2, 122, 9, 3, 41.4, 38.6, 2.3, 0.93",
        "6252490613: 385 (172); 6: 10.3, 42.5, 42.5, 69.4, 77.1, 81.9",
        "by their victims' highest priority: 0: 7,924 (median 35.8 s)",
        "evicting 9.1% of 6,639 (the last 25.2 s before, median); evicting nothing 2.9% of 128,160",
    ):
        assert figure in output


def test_trace_benchmark(google_2011):
    output = run_bench("bench.trace", str(PART), "--rounds", "1")
    for measure in ("gunzip (floor)", "arrow csv", "read", "stats", "convert", "write JSON"):
        assert f"\n{measure} " in output


@pytest.mark.batsim
@pytest.mark.parametrize(
    "arguments, expected",
    [
        (
            ("bench.scheduler", "--tasks", "200", "--growth", "400"),
            ["fillerSched      200 tasks", "ratio google-cell / fillerSched", "growth 200 -> 400 tasks"],
        ),
        (("bench.platform", "--jobs", "20", "--repeat", "1"), ["batsim -E  12583 machines, 20 jobs"]),
        (
            (
                "bench.streaming",
                "--machines",
                "16",
                "--spans",
                "600",
                "1200",
                "--seeds",
                "1",
                "2",
                "--per-job",
                "100",
                "300",
            ),
            [
                "seed 1, 600 s on 16 machines",
                "seed 2, 1200 s on 16 machines",
                "streamed vs loaded: tasks ended the same True",
                "seed 2, ratios 1200 s / 600 s",
                "CPU per message ",
                "streamed / loaded:",
                "over seeds 1, 2: min / median / max",
                "per job that ended (stream)",
            ],
        ),
        (
            ("bench.batsim_cost", "--machines", "64", "--residents", "50", "--tasks", "20", "--google-tasks", "50"),
            [
                "64 machines  burst:     50 jobs",
                "64 machines google:",
                "fitted here: Coefficients(",
                "predictions within 1.5x",
            ],
        ),
    ],
)
def test_benchmark_with_batsim(arguments, expected, batsim_binary):
    output = run_bench(*arguments)
    for text in expected:
        assert text in output


@pytest.mark.batsim
def test_whole_cell_benchmark_at_toy_size(google_2011, tmp_path):
    """Stock against patched on a 32-machine window of five minutes (skipped, with the reason, by
    the benchmark itself without both binaries: then it says so)."""
    output = run_bench("bench.whole_cell", "--machines", "32", "--hour", "300", "--no-full-cell")
    if "skipped" in output:
        pytest.skip(output.strip().splitlines()[-1])
    for text in (
        "32 machines, stock",
        "32 machines, patched",
        "stock / patched wall",
        "same jobs and final states True",
    ):
        assert text in output


def test_overcommit_derivation_prints_borgs_machines_and_the_schedulers_default(google_2011):
    from batsim_google.scheduling.policy_config import PolicyConfig

    output = run_bench("bench.borg_overcommit", "--trace", str(GOOGLE_2011), "--generated", "64")
    for figure in (
        "     12,489  0.908 / 0.217 / 1.125",
        "12,167 (97.4%)",
        "  free   0.000  0.044  0.113  0.206  0.314  0.425  0.638",
        "  total  0.509  0.934  1.031  1.149  1.250  1.336  1.480",
        "correlation of the tiers' CPU -0.52",
        "limit: a machine's requested CPU at most 1.480 times its capacity (99th percentile)",
        "free tier's over-commit 1.48: 733 of 739 tasks started",
        "free tier's over-commit 1: 390 of 739 tasks started",
    ):
        assert figure in output
    assert PolicyConfig().free_tier_overcommit == 1.48  # the scheduler's default is the derived limit


@pytest.mark.batsim
def test_protocol_benchmark_replays_a_recorded_run_with_the_same_answers(tmp_path, batsim_binary):
    """bench.protocol at toy size: a run recorded, then replayed with the baseline's code and this
    tree's, which answer Batsim the same and write the same ledger."""
    from batsim_google.generation.workload import Generation, cell_load_scale, write_generated_workload
    from batsim_google.model.presets import preset
    from batsim_google.model.request_law import load_request_law
    from batsim_google.platform.cell import google_2011_cell
    from batsim_google.platform.energy import load_energy_model
    from batsim_google.platform.simgrid_xml import write_platform
    from bench.protocol import BASELINE

    platform, workload = tmp_path / "cell.xml", tmp_path / "w.json"
    write_platform(platform, google_2011_cell(32), load_energy_model())
    generation = Generation(duration=600.0, nb_res=32, arrival_scale=cell_load_scale(32), warm=True)
    write_generated_workload(workload, preset("google-2011-cell"), load_request_law(), 1, generation)
    arguments = ["--workload", str(workload), "--platform", str(platform), "--horizon", "600"]
    output = run_bench("bench.protocol", *arguments, "--batsim", batsim_binary, "--rounds", "1")
    for text in ("messages, ", f"baseline {BASELINE}: ", "this tree: ", "same answers and attempts: True"):
        assert text in output


def test_cell_fidelity_benchmark_prints_the_spread_of_the_submissions(google_2011):
    output = run_bench("bench.cell_fidelity", "--seeds", "1", "--draws", "2", "--data", str(GOOGLE_2011))
    for text in (
        "free       real  54,611 tasks",
        "CPU",
        "memory",
        "2 draws (seeds 1-2, arrivals only)",
        "standard error",
        "a generated day",
    ):
        assert text in output
