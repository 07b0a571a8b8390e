"""A streamed run in real Batsim 4.2.1 is the loaded run: the same jobs on the same machines, ending
the same way at the same times, the same energy, accounting and metrics.

Times are compared to Batsim's printed microsecond (a start can land a microsecond apart: Batsim's
messages take simulated time, and a streamed run's registrations are messages too) and energies
to a relative 1e-6. The runs stop at a horizon: the generated services live for years, and past
1e7 s SimGrid's clock has lost the microsecond, so that coincidences of events there (and the
decisions after them) follow rounding noise, which a streamed run's extra messages change."""

from __future__ import annotations

import dataclasses
import json
import math

import polars as pl
import pytest
from cell_scenarios import task
from cell_scenarios import workload as write_workload
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.generation.service_profile import SERVICE_PROFILE
from batsim_google.scheduling.policy import RESUBMIT_WORKLOAD, CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.wake_ups import MIN_LEAD_S
from batsim_google.simulation.frontend import FrontEndOptions
from batsim_google.simulation.run import batsim_options
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation
from batsim_google.simulation.streamed_submissions import write_profile_uses, write_stub_workloads

pytestmark = pytest.mark.batsim
MACHINES = 16
TIME_TOLERANCE_S = 2e-6


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cell")
    platform = folder / "cell.xml"
    _invoke(["platform", "--machines", str(MACHINES), "-o", str(platform)])
    workload = folder / "warm.json"
    _invoke(
        ["generate", "--preset", "google-2011-cell", "--warm-start", "--duration", "3600", "--seed", "3"]
        + ["--nb-res", str(MACHINES), "--arrival-scale", "100", "-o", str(workload), "--no-progress"]
    )
    return platform, workload


def run_both(platform, workload, folder, batsim_binary, *options: str) -> tuple:
    outputs = []
    for mode in ("--load-workload", "--stream-workload"):
        output = folder / mode.strip("-")
        printed = _invoke(
            ["run", "--platform", str(platform), "--workload", str(workload), "-o", str(output), mode]
            + ["--timeout", "300", "--batsim", batsim_binary, "--no-progress", "--no-figures", *options]
        )
        assert "loaded whole" not in printed
        outputs.append(output)
    loaded, streamed = outputs
    assert (streamed / "out_stub_w0.json").exists() and not (loaded / "out_stub_w0.json").exists()
    return loaded, streamed


def _table(path, key: list[str]) -> pl.DataFrame:
    # every column as text, nothing read differently; an empty field as "" (null never joins); a
    # streamed job's copy of a shared profile (``service@1334``, workload_stream.own_profile) under
    # the shared profile's name
    table = pl.read_csv(path, infer_schema_length=0).fill_null("")
    if "profile" in table.columns:
        table = table.with_columns(pl.col("profile").str.replace(r"@[^@]*$", ""))
    return table.sort(key)


def same_table(
    loaded, streamed, name: str, key: list[str], times: list[str], energies: tuple[str, ...] = (), late: int = 0
) -> int:
    """The rows of ``name`` agree: text columns exactly, ``times`` to the microsecond (but for
    ``late`` rows, by at most MIN_LEAD_S: see :func:`same_run`), ``energies`` to a relative 1e-6.
    Returns the row count."""
    a, b = _table(loaded / name, key), _table(streamed / name, key)
    assert a.columns == b.columns and a.height == b.height
    exact = [column for column in a.columns if column not in (*times, *energies)]
    differ = a.select(exact).with_row_index().join(b.select(exact), on=exact, how="anti")
    assert differ.is_empty(), f"{name}: rows differ, e.g. {differ.head(3).to_dicts()}"
    for column in times:
        gaps = (a[column].cast(pl.Float64, strict=False) - b[column].cast(pl.Float64, strict=False)).abs()
        assert (gaps > TIME_TOLERANCE_S).sum() <= late, f"{name}: {column} differs by up to {gaps.max()}"
        assert gaps.max() is None or gaps.max() <= MIN_LEAD_S, f"{name}: {column} differs by {gaps.max()}"
    for column in energies:
        x, y = a[column].cast(pl.Float64, strict=False), b[column].cast(pl.Float64, strict=False)
        gap = ((x - y).abs() / x.abs().clip(lower_bound=1.0)).max()
        assert gap <= 1e-6, f"{name}: {column} differs by a relative {gap}"
    return a.height


def same_run(loaded, streamed, energy: bool = True, late: int = 0) -> int:
    """Batsim's jobs, the scheduler's tasks and attempts and the metrics agree; returns the job
    count. ``late``: how many jobs may reach the policy up to MIN_LEAD_S after their submission
    time (:mod:`batsim_google.simulation.streamed_submissions`: submitted within it of a batch)."""
    times = ["starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time", "stretch"]
    energies = ("consumed_energy",) if energy else ()
    jobs = same_table(loaded, streamed, "out_jobs.csv", ["job_id"], times, energies, late)
    same_table(loaded, streamed, "out_tasks.csv", ["task_id"], ["ended"], late=late)
    same_table(loaded, streamed, "out_attempts.csv", ["job_id"], ["start", "end"], late=late)
    metrics = [json.loads((folder / "metrics.json").read_text()) for folder in (loaded, streamed)]
    assert metrics[0].keys() == metrics[1].keys()
    # energies to a billionth of the run's: a full cell's idle energy is a few mJ of gaps a fraction
    # of a microsecond long between its initial starts, ordered by Batsim's internal messages
    energy_tolerance = max(1e-5, 1e-9 * metrics[0].get("energy_j", 0.0))
    for name, value in metrics[0].items():
        other = metrics[1][name]
        if isinstance(value, float) and isinstance(other, float):
            tolerance = energy_tolerance if name.endswith("energy_j") else 1e-5
            assert math.isclose(value, other, rel_tol=1e-6, abs_tol=tolerance), name
        else:
            assert value == other, name
    if energy:
        energies = [
            float(pl.read_csv(folder / "out_consumed_energy.csv", infer_schema_length=0)["energy"][-1])
            for folder in (loaded, streamed)
        ]
        assert energies[1] == pytest.approx(energies[0], rel=1e-9)
    return jobs


def test_a_warm_started_cell_with_evictions_and_restarts_streams_as_it_loads(tmp_path, cell, batsim_binary):
    platform, workload = cell
    loaded, streamed = run_both(platform, workload, tmp_path, batsim_binary, "--horizon", "3600")
    jobs = same_run(loaded, streamed)
    tasks = pl.read_csv(streamed / "out_tasks.csv")
    assert jobs > 400 and jobs > tasks.height  # a few hundred tasks, and restarts
    assert tasks.filter(pl.col("submit") == 0).height > 50  # the warm start's, in the stub
    assert tasks.filter(pl.col("submit") > 0).height > 50  # streamed
    assert json.loads((streamed / "out_stub_w0.json").read_text())["jobs"]  # time 0's jobs only
    assert all(job["subtime"] == 0 for job in json.loads((streamed / "out_stub_w0.json").read_text())["jobs"])


def test_idle_sleep_delayed_restarts_and_a_horizon_stream_as_they_load(tmp_path, cell, batsim_binary):
    """Machines sleep and wake, evicted tasks wait to restart, and the scheduler finishes at its
    horizon while jobs are still to come: those are submitted and rejected as a loaded run's."""
    jobs = [task(i, 0.0, 100.0, priority=0.1) for i in range(40)]  # fill the cell, some queue
    jobs += [task(100 + i, 10.0 + i, 50.0, priority=0.9) for i in range(4)]  # evict some
    jobs += [task(200 + i, 400.0 + 300.0 * i, 30.0, cpu=0.25, memory=0.25) for i in range(4)]  # idle gaps
    jobs += [task(300 + i, 700.0 + i, 1e7, kind="service", cpu=0.25, memory=0.25) for i in range(3)]
    jobs += [task(400 + i, 2000.0 + 100.0 * i, 10.0) for i in range(6)]  # past the horizon
    workload = write_workload(tmp_path / "scenario.json", sorted(jobs, key=lambda job: job["subtime"]))
    platform = cell[0]
    options = ["--energy", "idle-sleep", "--idle-timeout", "60", "--restart", "delayed", "--restart-delay", "30"]
    loaded, streamed = run_both(platform, workload, tmp_path, batsim_binary, *options, "--horizon", "1800")
    same_run(loaded, streamed)
    tasks = pl.read_csv(streamed / "out_tasks.csv")
    after = tasks.filter(pl.col("submit") > 1800)  # streamed once the scheduler had finished
    assert after.height == 6 and (after["outcome"] == "censored").all()
    restarted = tasks.filter(pl.col("restarts") > 0)
    assert restarted.height > 0 and (restarted["outcome"] == "completed").all()  # evicted, suspended 30 s, restarted
    assert pl.read_csv(streamed / "out_pstate_changes.csv").height > 2  # machines did switch


def test_a_trace_replay_with_its_initial_state_streams_as_it_loads(tmp_path, google_2011, batsim_binary):
    platform = tmp_path / "cell.xml"
    _invoke(["platform", "--machines", "128", "-o", str(platform)])
    workload = tmp_path / "window.json"
    _invoke(
        ["trace", "convert", str(google_2011), "-o", str(workload), "--start", "7000", "--end", "7300"]
        + ["--sample-cell", "128", "--seed", "1"]
    )
    loaded, streamed = run_both(platform, workload, tmp_path, batsim_binary, "--horizon", "600")
    # one job of the window comes 0.15 ms after a batch: it reaches the policy 1 ms later
    assert same_run(loaded, streamed, late=1) > 500
    stub = json.loads((streamed / "out_stub_w0.json").read_text())["jobs"]  # the initial state, at time 0
    jobs = json.loads(workload.read_text())["jobs"]
    assert len(stub) == sum(job["subtime"] == 0 for job in jobs) < len(jobs)


def test_jobs_submitted_between_batsims_microseconds_reach_the_policy_as_loaded(tmp_path, cell, batsim_binary):
    """Submission times a fraction of a microsecond past Batsim's printed grid: the wake-up asked
    for them comes back printed on the grid, not before them (else they wait for a later call: the
    next one comes when a task ends, 20 s later)."""
    jobs = [task(i, 10.0000004 + 100.0 * i, 20.0) for i in range(3)]
    jobs += [task(10 + i, 500.0000003 + i * 1e-7, 20.0) for i in range(2)]  # two within one microsecond
    workload = tmp_path / "off-grid.json"  # written whole: the package's writer keeps six decimals
    profiles = {str(job["id"]): {"type": "delay", "delay": job.pop("delay")} for job in jobs}
    jobs = [{**job, "res": 1, "profile": str(job["id"]), "walltime": -1.0} for job in jobs]
    workload.write_text(json.dumps({"nb_res": MACHINES, "jobs": jobs, "profiles": profiles}))
    loaded, streamed = run_both(cell[0], workload, tmp_path, batsim_binary, "--horizon", "1800")
    # the streamed run's policy hears of a job at the next microsecond, the loaded run's at the one
    # before: every event after it is a microsecond later, and the cell's energy that much more
    assert same_run(loaded, streamed, energy=False) == len(jobs)
    tasks = pl.read_csv(streamed / "out_tasks.csv")
    assert (tasks["outcome"] == "completed").all() and tasks.height == len(jobs)
    energies = [pl.read_csv(folder / "out_consumed_energy.csv")[-1] for folder in (loaded, streamed)]
    gap = energies[1]["energy"].item() - energies[0]["energy"].item()
    assert 0 <= gap <= energies[0]["epower"].item() * TIME_TOLERANCE_S


#: The front-end, writing at the end the profiles pybatsim's tables still hold (pybatsim loads a
#: scheduler file by its name: ``keptProfiles.py`` -> ``KeptProfiles``).
KEPT_PROFILES = """
import json
from batsim_google.simulation.googleCell import GoogleCell

class KeptProfiles(GoogleCell):
    def onSimulationEnds(self):
        super().onSimulationEnds()
        with open(self.front_end.output + "_kept_profiles.json", "w") as kept:
            json.dump({workload: list(table) for workload, table in self.bs.profiles.items()}, kept)
"""


def test_a_streamed_runs_profiles_are_forgotten_once_read(tmp_path, cell, batsim_binary):
    """pybatsim keeps no profile of a streamed job nor of a resubmission once the front-end read it:
    at the end its tables hold at most the stub's (Batsim submitted those jobs) and the services'
    shared resubmission profile, not one per streamed task and per restart."""
    platform, workload = cell
    output = tmp_path / "run"
    output.mkdir()
    stub = output / "stub_w0.json"
    write_stub_workloads([stub], [workload])
    write_profile_uses(output / "uses.json", [workload])
    options = FrontEndOptions(
        policy=dataclasses.asdict(dataclasses.replace(PolicyConfig(), horizon=3600.0)),
        output=str(output / "out"),
        stream=[str(workload)],
        stream_profile_uses=str(output / "uses.json"),
    )
    scheduler = tmp_path / "keptProfiles.py"
    scheduler.write_text(KEPT_PROFILES)
    run_simulation(
        Simulation(
            platform=platform,
            workloads=[stub],
            output=output,
            scheduler=pybatsim_scheduler(str(scheduler), options.to_json(), 300_000),
            batsim_options=batsim_options(CellPolicy.needs, False),
            timeout=300,
            batsim=batsim_binary,
        )
    )
    kept = json.loads((output / "out_kept_profiles.json").read_text())
    tasks = pl.read_csv(output / "out_tasks.csv")
    assert tasks.filter(pl.col("submit") > 0).height > 50 and tasks["restarts"].sum() > 0  # streamed, restarted
    assert set(kept["w0"]) <= set(json.loads(stub.read_text())["profiles"])
    assert set(kept.get(RESUBMIT_WORKLOAD, ())) <= {SERVICE_PROFILE}
