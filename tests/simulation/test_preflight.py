"""What ``run`` says before Batsim starts: energy only with an energy model, and the jobs the
chosen scheduler will reject, with what can run them (no Batsim needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.errors import InputFileError, ParameterError
from batsim_google.platform.simgrid_xml import read_hosts
from batsim_google.simulation.preflight import (
    batsched_algorithm,
    energy_choice,
    preflight,
    scheduler_limits,
    workload_shape,
)
from batsim_google.simulation.schedulers import COMMAND, Scheduler, built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "batsim_shapes"
PLATFORMS, WORKLOADS = SHAPES / "platforms", SHAPES / "workloads"
EASY_BF = ("batsched", "-v", "easy_bf", "-s", "{socket}")


def test_the_shape_counts_widths_walltimes_and_profile_types():
    shape = workload_shape([WORKLOADS / "compute_profiles.json", WORKLOADS / "no_walltime.json"])
    assert shape.jobs == 40 and shape.without_walltime == 30 and shape.without_cpu == 33
    assert shape.widths == {1: 33, 2: 2, 4: 5} and shape.widest == 4 and shape.wider_than(1) == 7
    assert shape.profile_types == {
        "delay": 31,
        "parallel": 2,
        "parallel_homogeneous": 3,
        "parallel_homogeneous_total": 2,
        "composed": 2,
    }


@pytest.mark.parametrize(
    ("command", "algorithm"),
    [
        (EASY_BF, "easy_bf"),
        (("/opt/bin/batsched", "--variant=energy_bf", "-s", "{socket}"), "energy_bf"),
        (("batsched", "-s", "{socket}"), "filler"),
        (("my-scheduler", "-v", "easy_bf"), None),
    ],
)
def test_batsched_algorithm(command, algorithm):
    assert batsched_algorithm(command) == algorithm


def test_the_google_cell_scheduler_is_said_to_reject_jobs_on_several_machines():
    shape = workload_shape([WORKLOADS / "multi_resource.json"])
    wide = shape.wider_than(1)
    lines = scheduler_limits("policy", None, shape, machines=8)
    assert lines[0].startswith(f"{wide} of 60 jobs ask for more than one machine (up to 8): the Google-cell scheduler")
    assert "--scheduler command='batsched -v easy_bf -s {socket}'" in lines[0]
    assert lines[1].startswith(f"{shape.widths[1]} of 60 jobs on one machine have no cpu request")
    # on 4 machines, the 8-machine jobs can run nowhere
    eights = shape.widths[8]
    assert scheduler_limits("command", EASY_BF, shape, machines=4) == [
        f"{eights} of 60 jobs ask for more machines than the platform's 4 (up to 8): every scheduler rejects them; "
        "give a platform of 8 machines or more"
    ]


def test_batsched_planners_are_said_to_reject_jobs_without_walltimes():
    shape = workload_shape([WORKLOADS / "no_walltime.json"])
    (line,) = scheduler_limits("command", EASY_BF, shape, machines=4)
    assert line.startswith("30 of 30 jobs have no walltime: batsched's easy_bf rejects them; the built-in scheduler")
    assert scheduler_limits("command", ("batsched", "-v", "filler", "-s", "{socket}"), shape, machines=4) == []
    assert scheduler_limits("command", EASY_BF, workload_shape([WORKLOADS / "delay_jobs.json"]), machines=4) == []


def _preflight(scheduler: Scheduler, platform: str, workload: str):
    inputs = RunInputs(PLATFORMS / platform, [WORKLOADS / workload])
    return preflight(scheduler, inputs, SimulationSettings(energy_outputs=False))


def test_what_batsim_cannot_run_is_refused():
    with pytest.raises(InputFileError, match=r"1 job\(s\) use profiles of type 'gpu_kernel', which Batsim 4.2.1"):
        _preflight(built_in(), "cluster_energy.xml", "unknown_profile_type.json")
    with pytest.raises(InputFileError, match=r"2 of 3 jobs have I/O profiles \(1 parallel_homogeneous_pfs"):
        _preflight(built_in(), "storage.xml", "storage_profiles.json")
    # another scheduler may map storage: not refused
    easy_bf = Scheduler(COMMAND, EASY_BF)
    assert _preflight(easy_bf, "storage.xml", "storage_profiles.json").machines == len(
        [host for host in read_hosts(PLATFORMS / "storage.xml") if host.computes]
    )
    with pytest.raises(InputFileError, match="no master host"):
        _preflight(built_in(), "cabinets_no_master.xml", "delay_jobs.json")


def test_energy_is_measured_only_where_the_platform_has_an_energy_model():
    energy, without = PLATFORMS / "cluster_energy.xml", PLATFORMS / "hosts_full_routing.xml"
    assert energy_choice(read_hosts(energy), None, energy)[0] is True
    on, line = energy_choice(read_hosts(without), None, without)
    assert (
        not on
        and line
        == f"energy: not measured ({without}: 4 of 4 compute hosts (Alpha, Beta, Gamma, ...) have no wattage_per_state)"
    )
    assert energy_choice(read_hosts(energy), False, energy) == (False, "energy: not measured (--no-energy-outputs)")
    with pytest.raises(ParameterError, match=r"^--energy-outputs: .* has no energy model \(4 of 4"):
        energy_choice(read_hosts(without), True, without)


def _run(tmp_path, platform, workload, *options):
    arguments = ["run", "--platform", str(platform), "--workload", str(workload), "-o", str(tmp_path / "out")]
    return CliRunner().invoke(main, [*arguments, "--batsim", "/nonexistent", "--timeout", "5", *options])


def test_run_refuses_explicit_energy_outputs_without_an_energy_model_in_one_line(tmp_path):
    result = _run(tmp_path, PLATFORMS / "hosts_full_routing.xml", WORKLOADS / "delay_jobs.json", "--energy-outputs")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and result.output.startswith("Error: --energy-outputs: ")
    assert not (tmp_path / "out").exists()


def test_run_says_what_it_will_do_before_batsim_starts(tmp_path):
    # Batsim is missing here: what run said before launching it is what is tested.
    result = _run(tmp_path, PLATFORMS / "cluster_energy.xml", WORKLOADS / "multi_resource.json")
    lines = result.output.splitlines()
    assert lines[0].startswith("energy: measured by Batsim's energy plugin")
    assert any(line.startswith("warning: ") and "the Google-cell scheduler rejects them" in line for line in lines)
    assert "Traceback" not in result.output


def test_an_empty_workload_is_said_to_hold_no_job(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": 4, "jobs": [], "profiles": {}}))
    shape = workload_shape([path])
    assert scheduler_limits("policy", None, shape, 4)[0].startswith("the workloads hold no job")


def test_io_parts_of_composed_profiles_need_a_storage_host(tmp_path):
    path = tmp_path / "w.json"
    profiles = {
        "io": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e6, "bytes_to_write": 0},
        "step": {"type": "composed", "seq": ["io"]},
        "app": {"type": "composed", "repeat": 2, "seq": ["step"]},
    }
    path.write_text(
        json.dumps({"nb_res": 1, "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "app"}], "profiles": profiles})
    )
    assert workload_shape([path]).profile_types == {"parallel_homogeneous_pfs": 1}
    inputs = RunInputs(PLATFORMS / "hosts_full_routing.xml", [path])
    with pytest.raises(InputFileError, match=r"and the platform has no storage host \(role storage\)"):
        preflight(Scheduler(COMMAND, EASY_BF), inputs, SimulationSettings())
