"""run's inputs checked against each other before Batsim starts (no Batsim needed)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import REPO

from batsim_google.cli import main
from batsim_google.errors import InputFileError
from batsim_google.generation.batsim_json import WorkloadWriter
from batsim_google.simulation.run import run_scheduler
from batsim_google.simulation.schedulers import built_in
from batsim_google.simulation.settings import RunInputs, SimulationSettings

PLATFORM = REPO / "tests" / "fixtures" / "cluster8.xml"  # 8 machines


def _workload(tmp_path, nb_res=8, name="w.json"):
    path = tmp_path / name
    with WorkloadWriter(path, nb_res) as writer:
        writer.write(pl.DataFrame({"id": [1, 2, 3], "subtime": [0.0, 1.0, 2.0], "delay": [10.0, 10.0, 10.0]}))
    return path


def _events(tmp_path, *events):
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def _run(tmp_path, workloads, events=(), warn=lambda message: None):
    settings = SimulationSettings(batsim="/nonexistent", warn=warn)
    return run_scheduler(built_in(), RunInputs(PLATFORM, workloads, events), tmp_path / "out", settings)


def test_an_event_of_an_unknown_machine_is_refused_naming_the_file_and_line(tmp_path):
    events = _events(
        tmp_path,
        {"timestamp": 5, "type": "machine_unavailable", "resources": "0-3"},
        {"timestamp": 9, "type": "machine_available", "resources": "2 6-8"},
    )
    with pytest.raises(
        InputFileError, match=rf"^{events}:2: machine_available of resource 8, but {PLATFORM} has 8 machines \(0-7\)$"
    ):
        _run(tmp_path, [_workload(tmp_path)], [events])
    assert not (tmp_path / "out").exists()  # refused before anything started


def test_a_kill_of_an_unknown_job_is_refused_naming_the_file_and_line(tmp_path):
    first, second = _workload(tmp_path), _workload(tmp_path, name="v.json")
    events = _events(
        tmp_path,
        {"timestamp": 1, "type": "user_kill", "job_id": "w0!2"},
        {"timestamp": 2, "type": "user_kill", "job_id": "w1!3"},
        {"timestamp": 3, "type": "user_kill", "job_id": "w1!4"},
    )
    with pytest.raises(InputFileError, match=rf"^{events}:3: user_kill of job 'w1!4', which no workload has"):
        _run(tmp_path, [first, second], [events])
    with pytest.raises(InputFileError, match=rf"^{events}:2: user_kill of job 'w1!3'"):
        _run(tmp_path, [first], [events])  # no second workload


def test_known_machines_and_jobs_pass_the_check(tmp_path):
    events = _events(
        tmp_path,
        {"timestamp": 1, "type": "machine_unavailable", "resources": "0-7"},
        {"timestamp": 2, "type": "user_kill", "job_id": "w0!3"},
    )
    warnings = []
    with pytest.raises(Exception, match="no '/nonexistent' executable"):  # past the check: Batsim is wanted
        _run(tmp_path, [_workload(tmp_path)], [events], warn=warnings.append)
    assert [warning for warning in warnings if "was made for" in warning] == []


def test_a_workload_for_another_machine_count_is_run_with_a_warning(tmp_path):
    workload = _workload(tmp_path, nb_res=12_583)
    warnings = []
    with pytest.raises(Exception, match="no '/nonexistent' executable"):
        _run(tmp_path, [workload], warn=warnings.append)
    assert [warning for warning in warnings if "was made for" in warning] == [
        f"{workload} was made for nb_res = 12583 machines, {PLATFORM} has 8"
    ]
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--platform",
            str(PLATFORM),
            "--workload",
            str(workload),
            "-o",
            str(tmp_path / "o"),
            "--batsim",
            "/nonexistent",
        ],
    )
    assert f"warning: {workload} was made for nb_res = 12583 machines, {PLATFORM} has 8" in result.output


def test_the_command_refuses_an_unknown_machine_as_a_data_error(tmp_path):
    events = _events(tmp_path, {"timestamp": 5, "type": "machine_unavailable", "resources": "9"})
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--platform",
            str(PLATFORM),
            "--workload",
            str(_workload(tmp_path)),
            "--events",
            str(events),
            "-o",
            str(tmp_path / "o"),
            "--batsim",
            "/nonexistent",
        ],
    )
    # the energy line comes first (cluster8.xml has no energy model), then the one-line refusal
    assert result.exit_code == 2 and result.output.splitlines()[-1].startswith(
        f"Error: {events}:1: machine_unavailable of resource 9"
    )


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"timestamp": 5, "timestamp": 6, "type": "machine_unavailable", "resources": "0"}', "given twice"),
        ('{"timestamp": -1, "type": "machine_unavailable", "resources": "0"}', "timestamp -1 is not in"),
        ('{"timestamp": 1e300, "type": "machine_unavailable", "resources": "0"}', r"timestamp 1e\+300 is not in"),
        ('{"timestamp": "5", "type": "machine_unavailable", "resources": "0"}', "timestamp '5' is not a number"),
        ('{"type": "machine_unavailable", "resources": "0"}', "timestamp None is not a number"),
        ("[" * 100 + "]" * 100, "not a JSON event"),
    ],
)
def test_an_event_batsim_cannot_take_is_refused_naming_the_file_and_line(tmp_path, line, words):
    events = tmp_path / "events.jsonl"
    events.write_text('{"timestamp": 1, "type": "machine_available", "resources": "0"}\n' + line + "\n")
    with pytest.raises(InputFileError, match=rf"events.jsonl:2: .*{words}"):
        _run(tmp_path, [_workload(tmp_path)], [events])
