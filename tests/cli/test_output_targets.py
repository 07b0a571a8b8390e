"""Outputs never replace what is not a regular file, a run's folder is written by one run at a time,
and a run's metrics are computed on the platform it simulated, not on another one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.output_files import LOCK_FILE
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.simulation.run_platform import record_platform

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN4 = FIXTURES / "run4"
PLATFORM = FIXTURES / "cell4_energy.xml"
OTHER = FIXTURES / "platform_16.xml"


def invoke(arguments: list) -> object:
    return CliRunner().invoke(main, [str(a) for a in arguments])


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def generate_to(target: Path) -> object:
    return invoke(["generate", "--tasks", "20", "--nb-res", "4", "-o", target, "--no-progress"])


def test_a_symlinked_output_is_refused_and_the_link_and_its_target_kept(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("mine\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    line = one_error_line(generate_to(link))
    assert line.startswith(f"Error: {link}: is a symbolic link (to {target})")
    assert link.is_symlink() and target.read_text() == "mine\n"


def test_a_fifo_output_is_refused_and_kept(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert one_error_line(generate_to(fifo)).startswith(f"Error: {fifo}: is a FIFO")
    assert fifo.is_fifo()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_output_is_refused_and_kept(tmp_path):
    device = tmp_path / "null"
    os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))  # a character device: /dev/null's numbers
    assert one_error_line(generate_to(device)).startswith(f"Error: {device}: is a character device")
    assert device.is_char_device()


#: Holds the folder argv[1] locked (as a run does) until killed.
HOLDER = """
import sys, time
from batsim_google.output_files import locked_folder
with locked_folder(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_second_run_into_a_folder_being_written_fails_at_once(tmp_path):
    folder = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        workload = tmp_path / "w.json"
        assert generate_to(workload).exit_code == 0
        started = time.monotonic()
        result = invoke(["run", "--platform", PLATFORM, "--workload", workload, "-o", folder, "--no-energy-outputs"])
        assert time.monotonic() - started < 30
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert result.output.strip().splitlines()[-1] == (
            f"Error: {folder}: another run is writing this folder (process {holder.pid}); "
            "wait for it to end or choose another"
        )
        assert sorted(path.name for path in folder.iterdir()) == [LOCK_FILE]  # nothing cleared, nothing marked
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture
def run_folder(tmp_path) -> Path:
    return shutil.copytree(RUN4, tmp_path / "run")


def test_the_metrics_refuse_another_platform_than_the_recorded_one(run_folder, tmp_path):
    record_platform(run_folder, PLATFORM, compute_hosts(PLATFORM))
    assert invoke(["metrics", run_folder, "--platform", PLATFORM]).exit_code == 0
    line = one_error_line(invoke(["metrics", run_folder, "--platform", OTHER]))
    assert line.startswith(f"Error: {OTHER}: not the platform the run in {run_folder} simulated")
    assert "16 compute hosts, the run's 4" in line
    per_core = ["per-core-jobs", run_folder, "--platform", OTHER, "-o", tmp_path / "cores.csv"]
    assert one_error_line(invoke(per_core)).startswith(f"Error: {OTHER}: not the platform")


def test_a_platform_of_the_same_size_with_other_capacities_is_refused(run_folder, tmp_path):
    record_platform(run_folder, PLATFORM, compute_hosts(PLATFORM))
    changed = tmp_path / "changed.xml"
    changed.write_text(PLATFORM.read_text().replace('value="0.5"', 'value="0.25"'))
    assert compute_hosts(changed) != compute_hosts(PLATFORM)
    line = one_error_line(invoke(["metrics", run_folder, "--platform", changed]))
    assert "of cpu_capacity 0.25, the run's" in line


def test_without_a_record_batsims_machine_count_is_compared(run_folder):
    (run_folder / "out_schedule.csv").write_text("nb_computing_machines,makespan\n4,225\n")
    line = one_error_line(invoke(["metrics", run_folder, "--platform", OTHER]))
    assert line == (
        f"Error: {OTHER}: 16 compute hosts, but the run in {run_folder} simulated 4 machines (out_schedule.csv): "
        "give the platform it simulated"
    )
    assert invoke(["metrics", run_folder, "--platform", PLATFORM]).exit_code == 0
