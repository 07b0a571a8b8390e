"""Every command's outputs: never over an input, never half-written, a clear error for a bad folder.

The reproductions of issue #18 (items 1, 2, 3 and 7), run as a user would, with click's runner
(and a real process for SIGTERM).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.output_files import TEMPORARY_PREFIX

KEEP = '{"keep":1}\n'


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(TEMPORARY_PREFIX))


def invoke(arguments: list) -> object:
    return CliRunner().invoke(main, [str(a) for a in arguments])


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output.strip().splitlines()[-1]


@pytest.fixture
def files(tmp_path):
    """One file of each kind the commands read, each holding ``KEEP``: refused before any reading."""
    names = ["p.csv", "k.swf", "m.toml", "r.json", "w.json", "e.toml", "platform.xml"]
    for name in names:
        (tmp_path / name).write_text(KEEP)
    return tmp_path


@pytest.mark.parametrize(
    "command, same",
    [
        (["trace", "convert", "{}", "-o", "{}"], "p.csv"),
        (["trace", "stats", "{}", "--json", "{}"], "p.csv"),
        (["trace", "stats", "{}", "--csv", "{}"], "p.csv"),
        (["swf", "convert", "{}", "-o", "{}"], "k.swf"),
        (["generate", "--tasks", "10", "--model", "{}", "-o", "{}"], "m.toml"),
        (["generate", "--tasks", "10", "--requests", "{}", "-o", "{}"], "r.json"),
        (["requests", "{}", "-o", "{}"], "p.csv"),
        (["fit", "{}", "-o", "{}"], "w.json"),
        (["fit", "{}", "-o", "model.toml", "--report", "{}"], "w.json"),
        (["platform", "--energy", "{}", "-o", "{}"], "e.toml"),
        (["platform", "--machine-events", "{}", "-o", "{}"], "p.csv"),
        (["failures", "{}", "-o", "{}"], "platform.xml"),
    ],
)
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(files, command, same):
    path = files / same
    message = one_line_error(invoke([a.format(path) for a in command]))
    assert f"{path}: the output would replace the input {path}" in message
    assert path.read_text() == KEEP


def test_an_output_through_another_name_of_the_input_is_refused(files):
    os.link(files / "p.csv", files / "same.csv")
    assert "would replace the input" in one_line_error(
        invoke(["trace", "convert", files / "p.csv", "-o", files / "same.csv"])
    )
    assert (files / "p.csv").read_text() == KEEP


@pytest.mark.parametrize(
    "command",
    [
        ["generate", "--tasks", "10", "-o", "{out}"],
        ["platform", "--machines", "4", "-o", "{out}"],
        ["failures", "{dir}/platform.xml", "-o", "{out}"],
        ["trace", "convert", "{dir}/p.csv", "-o", "{out}"],
        ["trace", "stats", "{dir}/p.csv", "--json", "{out}"],
        ["trace", "stats", "{dir}/p.csv", "--csv", "{out}"],
        ["swf", "convert", "{dir}/k.swf", "-o", "{out}"],
        ["requests", "{dir}/p.csv", "-o", "{out}"],
        ["fit", "{dir}/w.json", "-o", "{out}"],
        ["fit", "{dir}/w.json", "-o", "{dir}/model.toml", "--report", "{out}"],
    ],
)
def test_an_output_into_a_missing_folder_is_one_clear_error(files, command):
    out = files / "nodir" / "w.json"
    if command[0] == "fit" and "--report" not in command:
        out = out.with_suffix(".toml")
    message = one_line_error(invoke([a.format(dir=files, out=out) for a in command]))
    assert message == f"Error: {out}: no such folder {files / 'nodir'}"


@pytest.mark.parametrize(
    "command",
    [
        ["demo", "-o", "{out}"],
        ["trace", "stats", "{dir}/p.csv", "--plots", "{out}"],
        ["fit", "{dir}/w.json", "-o", "{dir}/model.toml", "--plots", "{out}"],
        ["compare", "{dir}/m.toml", "-o", "{out}"],
    ],
)
def test_an_output_folder_under_a_file_is_one_clear_error(files, command):
    out = files / "w.json" / "sub"
    message = one_line_error(invoke([a.format(dir=files, out=out) for a in command]))
    assert message == f"Error: {out}: {files / 'w.json'} is a file, not a folder"


def test_a_failed_generation_keeps_the_earlier_workload(tmp_path):
    workload = tmp_path / "w.json"
    workload.write_text(KEEP)
    result = invoke(["generate", "--tasks", "10", "--grain", "1e-300", "-o", workload])
    assert result.exit_code == 2 and "grains" in result.output
    assert workload.read_text() == KEEP
    assert leftovers(tmp_path) == []


def test_a_failed_strict_conversion_keeps_the_earlier_workload(tmp_path):
    part = write_part(tmp_path / "trace", [event(seconds_us(1), 1, 0, 0), "abc,,1,0"], compress=False)
    workload = tmp_path / "existing.json"
    workload.write_text(KEEP)
    result = invoke(["trace", "convert", "--strict", part, "-o", workload])
    assert result.exit_code == 2, result.output
    assert workload.read_text() == KEEP
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("earlier", [True, False])
def test_sigterm_ends_a_long_generation_without_a_trace(tmp_path, earlier):
    """Killed while writing (``timeout`` sends SIGTERM): the earlier file stays, or none is left;
    no temporary file either."""
    workload = tmp_path / "big.json"
    if earlier:
        workload.write_text(KEEP)
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from batsim_google.cli import main; main()",
            "generate",
            "--tasks",
            "100000000",
            "-o",
            workload.name,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 300  # a bound against a hang, not a timing under test
        sizes = []
        while len(sizes) < 2 or sizes[-1] <= sizes[0]:
            assert process.poll() is None and time.monotonic() < deadline, process.stdout.read().decode()
            assert (workload.read_text() == KEEP) if earlier else not workload.exists()  # never written in place
            temporary = next((tmp_path / name for name in leftovers(tmp_path)), None)
            if temporary is not None:
                sizes.append(temporary.stat().st_size)
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=120)[0].decode()
    finally:
        process.kill()
    assert "Traceback" not in output
    assert workload.read_text() == KEEP if earlier else not workload.exists()
    assert leftovers(tmp_path) == []
