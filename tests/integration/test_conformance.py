"""Conformance: platforms and workloads in the shapes Batsim's own come in (clusters, cabinets,
zones, power states, every profile type Batsim 4.2.1 documents, multi-resource jobs, dynamic jobs)
through ``run``, ``fit``, ``estimate`` and ``metrics``: each works, or is refused in one line that
says why (never a traceback). The fixtures are this project's own (tests/fixtures/batsim_shapes).

``fit``, ``estimate`` and the refusals ``run`` makes before launching need no Batsim; the runs
themselves need ``batsim`` on PATH, and batsched's for ``batsched``; they skip with the reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "batsim_shapes"
PLATFORMS, WORKLOADS = SHAPES / "platforms", SHAPES / "workloads"
EASY_BF = "command=batsched -v easy_bf -s {socket}"


def invoke(*arguments: str):
    return CliRunner().invoke(main, [str(argument) for argument in arguments])


def works_or_refuses(result, refusal: str | None) -> None:
    """``refusal`` None: the command worked; else it ended with one line ``Error: ...`` holding it."""
    assert "Traceback" not in result.output and not isinstance(result.exception, AssertionError)
    if refusal is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code not in (0, None) and not (
        result.exception and not isinstance(result.exception, SystemExit)
    ), result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and result.output.rstrip().endswith(errors[0]) and refusal in errors[0], result.output


# ---- fit: what it can use, and what it says of the rest -----------------------------------------------

FIT = {
    "delay_jobs": None,
    "multi_resource": None,
    "no_walltime": None,
    "wide_jobs": None,
    "compute_profiles": "no class of 20 tasks or more whose makespans differ",
    "storage_profiles": "no class of 20 tasks or more whose makespans differ",
    "trace_profiles": "no valid task: rows read 2 = used 0 + skipped 2 (smpi profile",
    "dynamic_jobs": "no valid task: rows read 0",
    "unknown_profile_type": "skipped 1 (profile type 'gpu_kernel' is not one of Batsim 4.2.1's: 1)",
}


@pytest.mark.parametrize("workload", sorted(FIT))
def test_fit(workload, tmp_path):
    result = invoke(
        "fit",
        WORKLOADS / f"{workload}.json",
        "-o",
        tmp_path / "model.toml",
        "--laws",
        "lognormal-ml",
        "--no-fidelity",
        "--speed",
        "1Gf",
    )
    works_or_refuses(result, FIT[workload])
    assert (tmp_path / "model.toml").exists() == (FIT[workload] is None)
    if workload == "multi_resource":
        assert "widths: 4 values from 1 to 8" in result.output


# ---- estimate -----------------------------------------------------------------------------------

ESTIMATE_REFUSED = "estimate predicts runs of delay jobs"
ESTIMATE = {
    "delay_jobs": None,
    "multi_resource": None,
    "no_walltime": None,
    "wide_jobs": None,
    "dynamic_jobs": None,
    "compute_profiles": f"{ESTIMATE_REFUSED}; 9 of 10 jobs have other profiles",
    "storage_profiles": f"{ESTIMATE_REFUSED}; 2 of 3 jobs",
    "trace_profiles": f"{ESTIMATE_REFUSED}; 2 of 2 jobs",
    "unknown_profile_type": f"{ESTIMATE_REFUSED}; 1 of 1 jobs have other profiles (gpu_kernel 1)",
}


@pytest.mark.parametrize("workload", sorted(ESTIMATE))
def test_estimate(workload):
    works_or_refuses(
        invoke("estimate", PLATFORMS / "cluster_energy.xml", WORKLOADS / f"{workload}.json"), ESTIMATE[workload]
    )


#: Platforms ``run`` refuses, refused by ``estimate`` too (no run to predict), as ``run`` does.
ESTIMATE_REFUSED_PLATFORMS = {
    "cabinets_no_master": "no master host ('master_host0' is neither)",
    "old_settings": "<config> sets 'network/TCP_gamma' (now 'network/TCP-gamma')",
    "unrouted_master": "zone 'head' has routing=\"None\" and holds host 'master_host'",
}


@pytest.mark.parametrize("platform", sorted(path.stem for path in PLATFORMS.glob("*.xml")))
def test_estimate_reads_every_platform_shape(platform):
    result = invoke("estimate", PLATFORMS / f"{platform}.xml", WORKLOADS / "delay_jobs.json")
    works_or_refuses(result, ESTIMATE_REFUSED_PLATFORMS.get(platform))
    if platform in ESTIMATE_REFUSED_PLATFORMS:
        return
    machines = {
        "cluster_energy": 4,
        "hosts_full_routing": 4,
        "nested_zones": 6,
        "old_dtd_energy": 2,
        "storage": 2,
    }
    assert result.output.startswith(f"{machines[platform]} machines, 48 jobs")


# ---- run: refused before launch, in one line ------------------------------------------------------

REFUSED_BEFORE_LAUNCH = [
    ("cabinets_no_master", "delay_jobs", (), "no master host ('master_host0' is neither)"),
    ("old_settings", "delay_jobs", (), "(no such setting), 'smpi/os' (SMPI's: taken only with a workload of smpi"),
    ("unrouted_master", "delay_jobs", (), "zone 'head' has routing=\"None\" and holds host 'master_host': SimGrid"),
    ("old_settings", "trace_profiles", (), "'network/coordinates' (no such setting): SimGrid 3.32 (Batsim 4.2.1's)"),
    ("cluster_energy", "unknown_profile_type", (), "profiles of type 'gpu_kernel', which Batsim 4.2.1 does not know"),
    ("storage", "storage_profiles", (), "2 of 3 jobs have I/O profiles"),
    ("hosts_full_routing", "delay_jobs", ("--energy-outputs",), "has no energy model (4 of 4 compute hosts"),
    ("hosts_full_routing", "delay_jobs", ("--energy", "idle-sleep"), "needs a sleep_pstates property on every host"),
    (
        "hosts_full_routing",
        "delay_jobs",
        ("--frontend", "batsim-py"),
        "--frontend batsim-py runs Batsim with its energy",
    ),
]


@pytest.mark.parametrize(("platform", "workload", "options", "refusal"), REFUSED_BEFORE_LAUNCH)
def test_run_refuses_before_launch(platform, workload, options, refusal, tmp_path):
    result = invoke(
        "run",
        "--platform",
        PLATFORMS / f"{platform}.xml",
        "--workload",
        WORKLOADS / f"{workload}.json",
        "-o",
        tmp_path / "out",
        "--batsim",
        "/nonexistent",
        *options,
    )
    works_or_refuses(result, refusal)
    assert not (tmp_path / "out").exists()


# ---- run and metrics in real Batsim -------------------------------------------------------------------

#: (platform, workload, scheduler, jobs completed, jobs rejected, energy measured)
RUNS = [
    ("cluster_energy", "delay_jobs", None, 38, 10, True),
    ("hosts_full_routing", "delay_jobs", None, 38, 10, False),
    ("nested_zones", "delay_jobs", None, 38, 10, False),
    ("old_dtd_energy", "delay_jobs", None, 38, 10, True),
    ("storage", "delay_jobs", None, 38, 10, False),
    ("hosts_full_routing", "compute_profiles", None, 3, 7, False),
    ("hosts_full_routing", "trace_profiles", None, 1, 1, False),
    ("cluster_energy", "no_walltime", None, 30, 0, True),
    ("cluster_energy", "dynamic_jobs", None, 0, 0, True),
    ("cluster_energy", "multi_resource", EASY_BF, None, None, True),
    ("hosts_full_routing", "compute_profiles", EASY_BF, 10, 0, False),
    ("cluster_energy", "no_walltime", EASY_BF, 0, 30, True),
    # Batsim's HPC examples: every job on several machines, the first submitted after 0 s
    ("hosts_full_routing", "wide_jobs", None, 0, 24, False),
    ("hosts_full_routing", "wide_jobs", EASY_BF, 24, 0, False),
]


@pytest.mark.batsim
@pytest.mark.parametrize(("platform", "workload", "scheduler", "completed", "rejected", "energy"), RUNS)
def test_run_and_metrics(platform, workload, scheduler, completed, rejected, energy, batsim_binary, tmp_path):
    if scheduler is not None and shutil.which("batsched") is None:
        pytest.skip("needs batsched on PATH")
    output = tmp_path / "out"
    platform_file = PLATFORMS / f"{platform}.xml"
    options = () if scheduler is None else ("--scheduler", scheduler)
    result = invoke(
        "run",
        "--platform",
        platform_file,
        "--workload",
        WORKLOADS / f"{workload}.json",
        "-o",
        output,
        "--timeout",
        "120",
        *options,
    )
    works_or_refuses(result, None)
    assert result.output.splitlines()[0] == (
        f"energy: measured by Batsim's energy plugin ({platform_file} gives its hosts power figures)"
        if energy
        else f"energy: not measured ({platform_file}: " + result.output.splitlines()[0].split(": ", 2)[2]
    )
    assert (output / "out_consumed_energy.csv").exists() == energy
    if completed is None:  # as many as fit: on 4 machines, the 8-machine jobs are rejected
        line = next(
            line for line in result.output.splitlines() if line.startswith("warning: ") and "every scheduler" in line
        )
        rejected = int(line.split()[1])
        completed = 60 - rejected
    assert f"Batsim jobs: {completed} completed, 0 killed, {rejected} rejected" in result.output
    metrics = invoke("metrics", output, "--platform", platform_file)
    works_or_refuses(metrics, None)


@pytest.mark.batsim
@pytest.mark.parametrize("workload", ["delay_jobs", "trace_profiles"])
def test_the_settings_refused_are_those_batsims_simgrid_does_not_know(workload, batsim_binary, tmp_path):
    """Given a setting it does not know, Batsim's SimGrid aborts listing those it knows (more when
    the workload runs SMPI): they are the package's, so it refuses what SimGrid would abort on."""
    import subprocess

    from batsim_google.platform.simgrid_xml import SIMGRID_SETTINGS, SIMGRID_SMPI_SETTINGS

    platform = tmp_path / "platform.xml"
    text = (PLATFORMS / "hosts_full_routing.xml").read_text()
    platform.write_text(text.replace("<zone ", '<config><prop id="no/such-setting" value="1"/></config>\n<zone ', 1))
    (tmp_path / "out").mkdir()
    command = [batsim_binary, "-p", platform, "-w", WORKLOADS / f"{workload}.json", "-e", tmp_path / "out" / "out"]
    log = subprocess.run(
        [*map(str, command), "-s", f"ipc://{tmp_path}/socket"], capture_output=True, text=True, timeout=120
    ).stderr
    assert "Bad config key: no/such-setting" in log, log[-2000:]
    listed = log.split("Existing config keys:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    expected = SIMGRID_SETTINGS | (SIMGRID_SMPI_SETTINGS if workload == "trace_profiles" else frozenset())
    assert {line.split(":", 1)[0].strip() for line in listed} == expected


@pytest.mark.batsim
def test_what_simgrid_refuses_past_the_checks_ends_in_one_line_quoting_it(batsim_binary, tmp_path):
    """A setting's value SimGrid refuses (the package does not check values): Batsim aborts, and the
    run ends with SimGrid's reason from Batsim's log, not its exit status and backtrace."""
    platform = tmp_path / "platform.xml"
    text = (PLATFORMS / "hosts_full_routing.xml").read_text()
    platform.write_text(text.replace("<zone ", '<config><prop id="network/model" value="NoSuch"/></config>\n<zone ', 1))
    result = invoke(
        "run",
        "--platform",
        platform,
        "--workload",
        WORKLOADS / "delay_jobs.json",
        "-o",
        tmp_path / "out",
        "--timeout",
        "120",
    )
    works_or_refuses(result, "CRITICAL Model 'NoSuch' is invalid! Valid models are: LV08")
    assert (
        result.exit_code == 1
        and f"batsim exited with status 250; see {tmp_path / 'out' / 'batsim.log'}: " in result.output
    )


@pytest.mark.batsim
def test_a_host_in_a_zone_without_routing_aborts_batsim_and_a_routed_zone_runs(batsim_binary, tmp_path):
    """Why the refusal: Batsim, given the platform anyway, aborts at the first job; what it says to
    do (a routing for the zone) makes the run work."""
    from batsim_google.errors import SimulationError
    from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation

    platform, workload = PLATFORMS / "unrouted_master.xml", WORKLOADS / "delay_jobs.json"
    (tmp_path / "raw").mkdir()
    scheduler = pybatsim_scheduler("fillerSched", timeout_ms=120_000)
    with pytest.raises(SimulationError, match="CRITICAL There can't be route in an Empty zone"):
        run_simulation(Simulation(platform, [workload], tmp_path / "raw", scheduler, timeout=120, batsim=batsim_binary))
    routed = tmp_path / "routed.xml"
    routed.write_text(
        platform.read_text().replace('<zone id="head" routing="None">', '<zone id="head" routing="Full">')
    )
    result = invoke("run", "--platform", routed, "--workload", workload, "-o", tmp_path / "out", "--timeout", "120")
    works_or_refuses(result, None)
    assert "Batsim jobs: 38 completed, 0 killed, 10 rejected" in result.output


@pytest.mark.batsim
def test_fit_durations_are_those_batsim_simulates(batsim_binary, tmp_path):
    """Each job alone on idle 1 Gflop/s machines (batsched's easy_bf gives whole machines): the
    durations the fit reads from the profiles are Batsim's execution times."""
    import csv
    import json

    from batsim_google.fitting.batsim_input import read_batsim_table

    if shutil.which("batsched") is None:
        pytest.skip("needs batsched on PATH")
    workload = WORKLOADS / "compute_profiles.json"
    result = invoke(
        "run",
        "--platform",
        PLATFORMS / "cluster_energy.xml",
        "--workload",
        workload,
        "-o",
        tmp_path,
        "--scheduler",
        EASY_BF,
    )
    works_or_refuses(result, None)
    with (tmp_path / "out_jobs.csv").open() as handle:
        simulated = {row["job_id"]: float(row["execution_time"]) for row in csv.DictReader(handle)}
    ids = [job["id"] for job in json.loads(workload.read_text())["jobs"]]
    read = read_batsim_table(workload, speed=1e9).frame["makespan"].to_list()
    compared = {job: (duration, simulated[job]) for job, duration in zip(ids, read) if duration is not None}
    assert len(compared) == 7 and all(d == pytest.approx(s, abs=1e-5) for d, s in compared.values()), compared
