"""One error handler at the command group: the package's errors, a full disk, a name too long, a
MemoryError and a scheduler's exception end a command with one line on stderr and a non-zero
exit, never a traceback; an output that could not be written leaves no temporary file and keeps
the earlier one."""

from __future__ import annotations

import errno
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.errors import SimulationError
from batsim_google.output_files import TEMPORARY_PREFIX, AtomicFile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEEP = "earlier content\n"
SWF = "; MaxProcs: 8\n1 0 1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n2 10 1 50 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n"


def invoke(arguments: list) -> object:
    return CliRunner().invoke(main, [str(a) for a in arguments])


def one_line(result, status: int) -> str:
    """The one line a failed command printed (CliRunner mixes stderr into the output)."""
    assert result.exit_code == status, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("Error: ")
    return lines[-1]


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.rglob(f"{TEMPORARY_PREFIX}*"))


@pytest.fixture
def full_disk(monkeypatch):
    """Every output file goes to /dev/full: the kernel's own ENOSPC, whichever library writes."""
    original = AtomicFile._create_temporary

    def on_full_disk(self):
        temporary = original(self)
        temporary.unlink()
        temporary.symlink_to("/dev/full")
        return temporary

    monkeypatch.setattr(AtomicFile, "_create_temporary", on_full_disk)


@pytest.fixture
def inputs(tmp_path) -> Path:
    (tmp_path / "log.swf").write_text(SWF)
    write_part(tmp_path / "trace", [event(seconds_us(1), 1, 0, 0), event(seconds_us(2), 1, 0, 1)], compress=False)
    shutil.copytree(FIXTURES / "run4", tmp_path / "run4")
    shutil.copy(FIXTURES / "cell4_energy.xml", tmp_path / "cell4.xml")
    return tmp_path


#: Commands that write one file, {out}, from the inputs above; swf convert writes through polars.
WRITERS = [
    ["generate", "--tasks", "50", "-o", "{out}"],
    ["swf", "convert", "{dir}/log.swf", "-o", "{out}"],
    ["trace", "convert", "{dir}/trace/task_events/part-00000-of-00003.csv", "-o", "{out}"],
    ["platform", "--machines", "4", "-o", "{out}"],
    ["failures", "{dir}/cell4.xml", "-o", "{out}"],
    ["metrics", "{dir}/run4", "--json", "{out}"],
    ["per-core-jobs", "{dir}/run4", "--platform", "{dir}/cell4.xml", "-o", "{out}"],
    ["trace", "stats", "{dir}/trace/task_events/part-00000-of-00003.csv", "--json", "{out}"],
]


@pytest.mark.parametrize("command", WRITERS, ids=lambda command: " ".join(command[:2]))
def test_a_full_disk_is_one_line_and_keeps_the_earlier_file(inputs, full_disk, command):
    out = inputs / "out.file"
    out.write_text(KEEP)
    message = one_line(invoke([part.format(dir=inputs, out=out) for part in command]), 1)
    assert message.startswith(f"Error: {out}: not written (No space left on device")
    assert out.read_text() == KEEP
    assert leftovers(inputs) == []


def test_a_full_disk_in_the_demo_folder_leaves_no_temporary_file(tmp_path, full_disk):
    message = one_line(invoke(["demo", "--tasks", "20", "-o", tmp_path / "demo"]), 1)
    assert "No space left on device" in message
    assert leftovers(tmp_path) == []


def test_an_oserror_without_a_file_name_from_a_library_is_one_line(inputs, monkeypatch):
    """polars raises a bare OSError with only a message: it still ends in one line."""
    import batsim_google.trace.swf as swf

    def full(*args, **kwargs):
        raise OSError("No space left on device (os error 28)")

    monkeypatch.setattr(swf, "read_swf", full)
    message = one_line(invoke(["swf", "convert", inputs / "log.swf", "-o", inputs / "w.json"]), 1)
    assert message == "Error: No space left on device (os error 28)"
    assert leftovers(inputs) == []


def test_a_name_too_long_for_the_file_system_is_one_line(tmp_path):
    out = tmp_path / ("w" * 300 + ".json")
    message = one_line(invoke(["generate", "--tasks", "5", "-o", out]), 1)
    assert str(out) in message and "File name too long" in message


def test_a_folder_name_too_long_is_one_line(tmp_path):
    out = tmp_path / ("d" * 300)
    message = one_line(invoke(["platform", "--machines", "4", "-o", out / "p.xml"]), 1)
    assert str(out) in message and "File name too long" in message


def test_an_unwritable_folder_is_one_line(tmp_path, monkeypatch):
    def refused(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(Path, "mkdir", refused)
    message = one_line(invoke(["demo", "--tasks", "20", "-o", tmp_path / "demo"]), 1)
    assert message == f"Error: {tmp_path / 'demo'}: Permission denied"


def test_memory_error_is_one_line(inputs, monkeypatch):
    import batsim_google.simulation.cost_model as cost_model

    def exhausted(*paths, horizon=None):
        raise MemoryError

    monkeypatch.setattr(cost_model, "read_workload_cost", exhausted)
    workload = inputs / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": [], "profiles": {}}')
    message = one_line(invoke(["estimate", inputs / "cell4.xml", workload]), 1)
    assert message.startswith("Error: out of memory")


def test_a_schedulers_exception_is_one_line_naming_it(inputs, monkeypatch):
    """A policy raising inside the scheduler's process: its traceback's last line, and the log."""
    import batsim_google.simulation.run as run_module

    log = inputs / "scheduler.log"
    trace = "Traceback (most recent call last):\n  File 'policy.py', line 3\nZeroDivisionError: division by zero"

    def crashes(*args, **kwargs):
        raise SimulationError(f"scheduler exited with status 1; see {log}:\n{trace}")

    monkeypatch.setattr(run_module, "run_scheduler", crashes)
    workload = inputs / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": [], "profiles": {}}')
    result = invoke(["run", "--platform", inputs / "cell4.xml", "--workload", workload, "-o", inputs / "out"])
    message = one_line(result, 1)
    assert message == f"Error: scheduler exited with status 1; see {log}: ZeroDivisionError: division by zero"


def test_a_policy_module_that_raises_as_it_loads_is_one_line(inputs):
    policy = inputs / "broken.py"
    policy.write_text("1 / 0\n")
    workload = inputs / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": [], "profiles": {}}')
    result = invoke(
        ["run", "--platform", inputs / "cell4.xml", "--workload", workload, "-o", inputs / "out"]
        + ["--scheduler", f"python={policy}:Policy", "--no-energy-outputs"]
    )
    message = one_line(result, 2)
    assert "loading it raised ZeroDivisionError: division by zero" in message


def test_the_package_errors_keep_their_message_and_status(inputs):
    bad = inputs / "bad.json"
    bad.write_text(json.dumps({"nb_res": 4, "jobs": [{"id": 1}], "profiles": {}}))
    message = one_line(invoke(["estimate", inputs / "cell4.xml", bad]), 2)
    assert str(bad) in message


def test_a_request_law_without_a_kind_the_model_needs_names_its_file(tmp_path):
    law = tmp_path / "law.json"
    law.write_text(json.dumps({"kinds": {"task": {"cpu": [0.1], "memory": [0.1], "count": [1]}}}))
    message = one_line(invoke(["generate", "--tasks", "10", "--requests", law, "-o", tmp_path / "w.json"]), 2)
    assert message == f"Error: {law}: the request law has no 'service' entry"


@pytest.mark.parametrize("jobs", [1, 12])
def test_a_fit_refused_for_its_data_names_the_source(tmp_path, jobs):
    workload = tmp_path / "tiny.json"
    profiles = {f"p{i}": {"type": "delay", "delay": 10.0 + i} for i in range(jobs)}
    rows = [{"id": i, "subtime": float(i), "res": 1, "profile": f"p{i}", "kind": "task"} for i in range(jobs)]
    workload.write_text(json.dumps({"nb_res": 4, "jobs": rows, "profiles": profiles}))
    message = one_line(invoke(["fit", workload, "-o", tmp_path / "m.toml"]), 2)
    assert message.startswith(f"Error: {workload}: ")
    assert not (tmp_path / "m.toml").exists()


def test_a_real_schedulers_traceback_ends_in_one_line(inputs):
    """A scheduler process that raises as it starts (Batsim, a stand-in, waits): its exception, not
    its traceback, and where its log is."""
    batsim = inputs / "waiting-batsim"
    batsim.write_text(
        f"#!{sys.executable}\nimport sys, time\nprint('4.2.1') if '--version' in sys.argv else time.sleep(120)\n"
    )
    batsim.chmod(0o755)
    scheduler = f"command={sys.executable} -c 'import sys; 1 / 0' {{socket}}"
    workload = inputs / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": [], "profiles": {}}')
    result = invoke(
        ["run", "--platform", inputs / "cell4.xml", "--workload", workload, "-o", inputs / "out"]
        + ["--no-energy-outputs", "--batsim", batsim, "--timeout", "60", "--scheduler", scheduler]
    )
    message = one_line(result, 1)
    log = inputs / "out" / "scheduler.log"
    assert message == f"Error: scheduler exited with status 1; see {log}: ZeroDivisionError: division by zero"
    assert "Traceback" in log.read_text()
