"""Campaign files, their plan (inputs written once, the cross product of runs) and what makes a run
complete; none of it starts Batsim (tests/integration/test_compare_batsim.py does)."""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import polars as pl
import pytest
from conftest import GOOGLE_2011

from batsim_google.errors import ParameterError
from batsim_google.experiments.campaign import load_campaign
from batsim_google.experiments.execution import MARKER, completed
from batsim_google.experiments.plan import plan_campaign
from batsim_google.platform.google_2011 import TRACE_DAYS
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.units import DAY

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def campaign_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(textwrap.dedent(text))
    return path


SMALL = """
    timeout = 60
    [platforms]
    small = {cell = 12}
    [workloads]
    google = {preset = "google", tasks = 30, seeds = [1, 2]}
    [failures]
    none = {}
    drawn = {mtbf = 20000, mttr = 600, horizon = 7200, seeds = [5]}
    [policies.on]
    energy = "always-on"
    [policies.sleep]
    energy = "idle-sleep"
    idle_timeout = 60
"""


def test_examples_are_valid_campaigns():
    for path in sorted(EXAMPLES.glob("*.toml")):
        if "shared/data" in path.read_text() and not GOOGLE_2011.is_dir():
            continue  # it replays the trace sample, absent here (test_the_baselines_campaign_needs_the_trace)
        campaign = load_campaign(path)
        assert campaign.platforms and campaign.workloads and campaign.policies, path


def test_the_baselines_campaign_needs_the_trace(google_2011):
    campaign = load_campaign(EXAMPLES / "baselines-campaign.toml")
    assert campaign.platforms and campaign.workloads


def test_parsed_campaign(tmp_path):
    campaign = load_campaign(campaign_file(tmp_path, SMALL))
    assert campaign.timeout == 60 and campaign.energy_outputs
    assert [p.cell for p in campaign.platforms] == [12]
    workload = campaign.workloads[0]
    assert (workload.preset, workload.tasks, workload.seeds) == ("google", 30, (1, 2))
    none, drawn = campaign.failures
    assert none.law is None and none.file is None and none.seeds == (None,)
    assert drawn.law.mean_time_between_failures == 20000 and drawn.law.mean_repair_time == 600
    assert drawn.law.time_between_failures_shape == 1.0 and drawn.horizon == 7200 and drawn.seeds == (5,)
    assert dict(campaign.policies) == {
        "on": PolicyConfig(),
        "sleep": PolicyConfig(energy="idle-sleep", idle_timeout=60),
    }


def test_defaults(tmp_path):
    path = campaign_file(
        tmp_path,
        """
        [platforms]
        c = {cell = 10}
        [workloads]
        w = {preset = "google", duration = 5}
        [failures]
        f = {seeds = [3]}
        [policies.default]
    """,
    )
    campaign = load_campaign(path)
    assert campaign.timeout == 3600 and campaign.workloads[0].seeds == (0,)
    assert campaign.failures[0].horizon == TRACE_DAYS * DAY and campaign.failures[0].law is not None
    del_failures = path.read_text().replace("[failures]\nf = {seeds = [3]}\n", "")
    path.write_text(del_failures)
    assert [f.name for f in load_campaign(path).failures] == ["none"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[workloads]\nw = {preset = 'google', tasks = 5}\n[policies.p]\n", r"\[platforms\] is missing"),
        ("[platforms]\nc = {cell = 0}\n", r"platforms.c.cell must be a positive integer, at most 1e\+06 \(got 0\)"),
        ("[platforms]\nc = {cell = 4, file = 'x.xml'}\n", "platforms.c needs exactly one of cell, file"),
        ("[platforms]\nc = {file = 'missing.xml'}\n", "platforms.c.file: no such file"),
        ("[platforms]\n'bad name' = {cell = 4}\n", "platforms.bad name: names are letters"),
        ("[platforms]\nc = {cell = 4, machines = 3}\n", r"unknown key\(s\) in platforms.c: machines"),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'nope', tasks = 5}\n",
            "workloads.w.preset must be one of",
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google'}\n",
            "workloads.w needs exactly one of tasks, duration",
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5, seeds = [1, 1]}\n",
            "workloads.w.seeds repeats",
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5}\n[failures]\nf = {mttr = -1}\n",
            "failures.f.mttr must be a positive number",
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5}\n[failures]\nf = {mttr_shape = 1e-9}\n",
            r"failures.f.mttr_shape must be large enough for the Weibull mean to be finite \(got 1e-09\)",
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5}\n[policies.p]\nrestart = 'sometimes'\n",
            "policies.p: restart must be one of",
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5}\n[policies.p]\nrestarts = 1\n",
            r"unknown key\(s\) in policies.p: restarts",
        ),
        ("timeout = -3\n", r"timeout must be a positive number, at most 2.592e\+06 \(got -3\)"),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5, arrival_scale = 0}\n",
            r'workloads.w.arrival_scale must be a positive number at most 1e\+06 or "cell" \(got 0\)',
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5, warm_start = 1}\n",
            r"workloads.w.warm_start must be true or false \(got 1\)",
        ),
        (
            "[platforms]\nc = {cell = 4}\n[workloads]\nw = {preset = 'google', tasks = 5, arrival_scale = 'machine'}\n",
            r'workloads.w.arrival_scale must be a positive number at most 1e\+06 or "cell" \(got \'machine\'\)',
        ),
    ],
)
def test_errors_name_the_file_and_entry(tmp_path, text, message):
    path = campaign_file(tmp_path, text)
    with pytest.raises(ParameterError, match=message) as error:
        load_campaign(path)
    assert str(error.value).startswith(str(path))


def test_plan_writes_each_input_once_and_crosses_the_runs(tmp_path):
    campaign = load_campaign(campaign_file(tmp_path, SMALL))
    output = tmp_path / "out"
    runs = plan_campaign(campaign, output)
    # 1 platform x 2 workload seeds x (none + 1 failure seed) x 2 policies.
    assert len(runs) == 8
    assert len({run.directory for run in runs}) == 8 and len({run.fingerprint for run in runs}) == 8
    inputs = sorted(p.relative_to(output / "inputs").as_posix() for p in (output / "inputs").rglob("*") if p.is_file())
    assert len(inputs) == 1 + 2 + 1, inputs  # the platform, two workloads, one failure file
    run = next(r for r in runs if r.workload_seed == 2 and r.failures == "drawn" and r.policy == "sleep")
    assert run.directory == (output / "runs/small/google-s2/drawn-s5/sleep").resolve()
    assert run.config == PolicyConfig(energy="idle-sleep", idle_timeout=60)
    assert json.loads(run.workload_file.read_text())["nb_res"] == 12
    assert run.events_file.read_text().count("machine_unavailable") > 0
    assert all(r.events_file is None for r in runs if r.failures == "none")
    # Planning again reuses every input (same names, files untouched).
    stamps = {p: p.stat().st_mtime_ns for p in (output / "inputs").rglob("*") if p.is_file()}
    again = plan_campaign(campaign, output)
    assert [r.fingerprint for r in again] == [r.fingerprint for r in runs]
    assert {p: p.stat().st_mtime_ns for p in (output / "inputs").rglob("*") if p.is_file()} == stamps


def test_arrival_scale_cell_gives_each_platform_the_cells_load_per_machine(tmp_path):
    campaign = load_campaign(
        campaign_file(
            tmp_path,
            """
        [platforms]
        c12 = {cell = 12}
        c24 = {cell = 24}
        [workloads]
        plain = {preset = "google", tasks = 30, seeds = [1]}
        cell = {preset = "google", tasks = 30, seeds = [1], arrival_scale = "cell"}
        twice = {preset = "google", tasks = 30, seeds = [1], arrival_scale = 2}
        [policies.p]
    """,
        )
    )
    assert [w.arrival_scale for w in campaign.workloads] == [1.0, "cell", 2.0]
    runs = plan_campaign(campaign, tmp_path / "out")
    jobs = {(r.platform, r.workload): json.loads(r.workload_file.read_text()) for r in runs}
    for platform, machines in (("c12", 12), ("c24", 24)):
        plain = [job["subtime"] for job in jobs[platform, "plain"]["jobs"]]
        for workload, scale in (("cell", 12583 / machines), ("twice", 2.0)):
            scaled = jobs[platform, workload]
            assert scaled["meta"]["arrival_scale"] == pytest.approx(scale)
            rounding = (scale + 1) * 1e-6  # subtimes are written to the microsecond
            assert [job["subtime"] for job in scaled["jobs"]] == pytest.approx(
                [t * scale for t in plain], rel=0, abs=rounding
            )
    assert "arrival_scale" not in jobs["c12", "plain"]["meta"]


def test_a_warm_started_workload_starts_with_the_cells_steady_state_running(tmp_path):
    campaign = load_campaign(
        campaign_file(
            tmp_path,
            """
        [platforms]
        c64 = {cell = 64}
        [workloads]
        cold = {preset = "google-2011-cell", duration = 600, seeds = [1], arrival_scale = "cell"}
        warm = {preset = "google-2011-cell", duration = 600, seeds = [1], arrival_scale = "cell", warm_start = true}
        [policies.p]
    """,
        )
    )
    runs = {
        r.workload: json.loads(r.workload_file.read_text())["jobs"] for r in plan_campaign(campaign, tmp_path / "o")
    }
    assert not any(job.get("initial") for job in runs["cold"])
    initial = [job for job in runs["warm"] if job.get("initial")]
    # the real cell at t = 0 runs 132,982 tasks on 12,583 machines: about 676 on 64
    assert 600 <= len(initial) <= 760 and all(job["subtime"] == 0 for job in initial)
    assert len(runs["warm"]) - len(initial) == pytest.approx(len(runs["cold"]), rel=0.2)


def test_a_changed_spec_writes_a_new_input_and_changes_the_fingerprint(tmp_path):
    path = campaign_file(tmp_path, SMALL)
    first = plan_campaign(load_campaign(path), tmp_path / "out")
    path.write_text(path.read_text().replace("tasks = 30", "tasks = 31"))
    second = plan_campaign(load_campaign(path), tmp_path / "out")
    assert all(a.workload_file != b.workload_file and a.fingerprint != b.fingerprint for a, b in zip(first, second))
    assert all(a.platform_file == b.platform_file for a, b in zip(first, second))


def test_workload_and_platform_files_are_used_in_place(tmp_path):
    plan = plan_campaign(load_campaign(campaign_file(tmp_path, SMALL)), tmp_path / "first")
    platform, workload = plan[0].platform_file, plan[0].workload_file
    path = campaign_file(
        tmp_path,
        f"""
        [platforms]
        mine = {{file = "{platform}"}}
        [workloads]
        trace = {{file = "{workload}"}}
        [policies.default]
    """,
    )
    runs = plan_campaign(load_campaign(path), tmp_path / "out")
    assert len(runs) == 1
    assert (runs[0].platform_file, runs[0].workload_file, runs[0].workload_seed) == (platform, workload, None)
    assert runs[0].directory.name == "default" and runs[0].directory.parent.parent.name == "trace"
    assert not (tmp_path / "out" / "inputs").exists()


def test_completion_needs_the_marker_with_the_same_fingerprint(tmp_path):
    run = plan_campaign(load_campaign(campaign_file(tmp_path, SMALL)), tmp_path / "out")[0]
    assert completed(run) is None
    run.directory.mkdir(parents=True)
    (run.directory / "out_jobs.csv").write_text("job_id\n")
    assert completed(run) is None  # half-finished: outputs, no marker
    (run.directory / MARKER).write_text(json.dumps({"fingerprint": "other", "metrics": {}}))
    assert completed(run) is None  # another spec's results
    (run.directory / MARKER).write_text(json.dumps({"fingerprint": run.fingerprint, "metrics": {"x": 1}}))
    assert completed(run)["metrics"] == {"x": 1}
    os.remove(run.directory / "out_jobs.csv")
    assert completed(run) is None  # the marker alone is not enough


def test_failed_runs_are_reported_and_not_marked(tmp_path):
    from click.testing import CliRunner

    from batsim_google.cli import main

    path = campaign_file(
        tmp_path,
        """
        [platforms]
        small = {cell = 12}
        [workloads]
        google = {preset = "google", tasks = 30}
        [policies.on]
        [policies.sleep]
        energy = "idle-sleep"
    """,
    )
    output = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["compare", str(path), "-o", str(output), "--batsim", "no-such-batsim", "--jobs", "1", "--no-progress"]
    )
    assert result.exit_code == 1, result.output
    assert "2 runs: 0 simulated, 0 reused, 2 failed" in result.output
    assert "no 'no-such-batsim' executable" in result.output
    runs = pl.read_csv(output / "runs.csv")
    assert runs["status"].to_list() == ["failed", "failed"] and not list(output.glob(f"runs/**/{MARKER}"))
    assert pl.read_csv(output / "summary.csv").height == 0 and not (output / "plots").exists()


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ('{restart = "sometimes"}', "--policy: restart must be one of"),
        ("{restarts = 1}", r"unknown key\(s\) in --policy: restarts"),
        ("restart", "--policy must be a TOML inline table"),
        ("{horizon = 600}", r"the horizon \(600 s\) must come after the warm-up \(900 s\)"),
    ],
)
def test_validate_refuses_a_bad_policy_before_running(tmp_path, policy, message):
    from click.testing import CliRunner

    from batsim_google.cli import main

    original = tmp_path / "w.json"
    original.write_text('{"nb_res": 1, "jobs": [], "profiles": {}}')
    result = CliRunner().invoke(
        main,
        ["validate", str(original), "--platform", str(original), "-o", str(tmp_path / "v"), "--policy", policy]
        + ["--warmup", "900"],
    )
    assert result.exit_code == 2 and not (tmp_path / "v").exists()
    assert re.search(message, result.output), result.output


def test_a_campaigns_window_reaches_every_policy_and_run(tmp_path):
    text = SMALL.replace("timeout = 60", "timeout = 60\nwarmup = 600\nhorizon = 7200", 1)
    text = text.replace("idle_timeout = 60", "idle_timeout = 60\nhorizon = 3600")
    campaign = load_campaign(campaign_file(tmp_path, text))
    assert campaign.warmup == 600.0
    assert {name: config.horizon for name, config in campaign.policies} == {"on": 7200.0, "sleep": 3600.0}
    runs = plan_campaign(campaign, tmp_path / "out")
    assert {run.warmup for run in runs} == {600.0}
    later = plan_campaign(
        load_campaign(campaign_file(tmp_path, text.replace("warmup = 600", "warmup = 900"))), tmp_path / "out"
    )
    assert {run.fingerprint for run in runs}.isdisjoint(run.fingerprint for run in later)  # metrics change
    backwards = text.replace("warmup = 600", "warmup = 5000")
    with pytest.raises(ParameterError, match=r"policies.sleep: the horizon \(3600 s\) must come after the warm-up"):
        load_campaign(campaign_file(tmp_path, backwards))


def test_a_metric_no_run_knows_is_a_number_in_both_tables(tmp_path):
    """Jobs of tasks are null for workloads without google_job: the column stays numeric, and the
    CSV table reads back as the Parquet one."""
    from batsim_google.experiments.execution import RunRecord
    from batsim_google.experiments.report import runs_table, summary_table, write_tables

    runs = plan_campaign(load_campaign(campaign_file(tmp_path, SMALL)), tmp_path / "out")[:2]
    records = [RunRecord(run, "done", {"mean_waiting_s": 1.5, "mean_job_response_s": None}) for run in runs]
    table = runs_table(records)
    assert table.schema["mean_job_response_s"] == pl.Float64
    write_tables(tmp_path, table, summary_table(table))
    parquet = pl.read_parquet(tmp_path / "runs.parquet")
    assert parquet.equals(pl.read_csv(tmp_path / "runs.csv", schema=parquet.schema))
    summary = pl.read_csv(tmp_path / "summary.csv")
    assert summary.filter(pl.col("metric") == "mean_job_response_s")["mean"].is_null().all()


def test_a_scheduler_that_rejected_jobs_is_flagged_not_ranked(tmp_path):
    """The summary's warning names the policy that rejected jobs, on its rows only; the rejections
    by reason are a JSON text in the runs table, which still reads back from CSV."""
    from batsim_google.experiments.execution import RunRecord
    from batsim_google.experiments.report import runs_table, summary_table, write_tables

    runs = plan_campaign(load_campaign(campaign_file(tmp_path, SMALL)), tmp_path / "out")
    policies = sorted({run.policy for run in runs})
    rejecting = policies[0]
    records = [
        RunRecord(
            run,
            "done",
            {
                "jobs_rejected": 7 if run.policy == rejecting else 3,
                "jobs_refused": 7 if run.policy == rejecting else 0,  # the others': censored at the horizon
                "rejected_by_reason": {"no walltime (planning schedulers need one)": 7}
                if run.policy == rejecting
                else {},
                "mean_waiting_s": 1.0,
            },
        )
        for run in runs
    ]
    table = runs_table(records)
    assert json.loads(table.filter(pl.col("policy") == rejecting)["rejected_by_reason"][0]) == {
        "no walltime (planning schedulers need one)": 7
    }
    summary = summary_table(table)
    flagged = summary.filter(pl.col("warning").str.contains("refused 7 jobs per run", literal=True).fill_null(False))
    assert set(flagged["policy"]) == {rejecting}
    assert flagged.height == summary.filter(pl.col("policy") == rejecting).height
    write_tables(tmp_path, table, summary)
    assert pl.read_csv(tmp_path / "runs.csv").height == len(runs)


def test_a_missing_executable_fails_its_run_not_the_campaign(tmp_path):
    from batsim_google.experiments.execution import execute_run

    text = "skip_refused = true\n" + SMALL + '\n[schedulers.absent]\ncommand = ["no-such-scheduler-xyz", "{socket}"]\n'
    runs = [run for run in plan_campaign(load_campaign(campaign_file(tmp_path, text)), tmp_path / "out")]
    absent = next(run for run in runs if run.policy == "absent" and run.failures == "none")
    marker = execute_run(absent, batsim=shutil.which("true"))  # a "Batsim" that exits at once
    assert "No such file or directory" in marker["error"] and "no-such-scheduler-xyz" in marker["error"]
