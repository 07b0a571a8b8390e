"""Converted workloads run through the real Batsim 4.2.1 with pybatsim's fillerSched."""

from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED_DATA

from batsim_google.cli import main

PLATFORM = Path(__file__).resolve().parents[1] / "fixtures" / "platform_16.xml"
PLATFORM_HOSTS = 16
KTH = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_batsim(batsim: str, workload: Path, folder: Path, timeout: float = 300) -> list[dict]:
    """Simulate ``workload`` on the 16-host fixture; return the rows of Batsim's jobs.csv."""
    port = _free_port()
    log = (folder / "scheduler.log").open("w")
    scheduler = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "pybatsim"),
            "fillerSched",
            "-v",
            "warning",
            "-s",
            f"tcp://*:{port}",
            "-t",
            "30000",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        result = subprocess.run(
            [
                batsim,
                "-q",
                "-p",
                str(PLATFORM),
                "-w",
                str(workload),
                "-e",
                str(folder / "out"),
                "-s",
                f"tcp://localhost:{port}",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        scheduler.wait(timeout=60)
    finally:
        if scheduler.poll() is None:
            scheduler.kill()
            scheduler.wait()
        log.close()
    with (folder / "out_jobs.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def _check_all_ran(workload: Path, rows: list[dict]) -> None:
    data = json.loads(workload.read_text())
    jobs = {str(job["id"]): job for job in data["jobs"]}
    assert len(rows) == len(jobs) > 20
    for row in rows:
        job = jobs[row["job_id"]]
        assert float(row["submission_time"]) == pytest.approx(job["subtime"], abs=1e-5)
        if job.get("kind") == "service":  # Batsim stops it at the end of its lifetime
            assert row["final_state"] == "COMPLETED_WALLTIME_REACHED"
            assert float(row["execution_time"]) == pytest.approx(job["walltime"], abs=1e-3)
        else:
            assert row["final_state"] == "COMPLETED_SUCCESSFULLY" and row["success"] == "1"
            assert float(row["execution_time"]) == pytest.approx(data["profiles"][job["profile"]]["delay"], abs=1e-3)
        assert int(row["requested_number_of_resources"]) == job["res"] <= PLATFORM_HOSTS


@pytest.mark.batsim
def test_trace_window_runs_in_batsim(batsim_binary, google_2011, tmp_path):
    workload = tmp_path / "trace.json"
    result = CliRunner().invoke(
        main,
        [
            "trace",
            "convert",
            str(google_2011),
            "-o",
            str(workload),
            "--start",
            "600",
            "--end",
            "640",
            "--nb-res",
            str(PLATFORM_HOSTS),
            "--no-initial-state",  # the window's jobs alone: 16 machines hold no cell's running tasks
        ],
    )
    assert result.exit_code == 0, result.output
    rows = run_batsim(batsim_binary, workload, tmp_path)
    _check_all_ran(workload, rows)
    kinds = {job["kind"] for job in json.loads(workload.read_text())["jobs"]}
    assert kinds == {"task", "service"}


@pytest.mark.batsim
def test_swf_window_runs_in_batsim(batsim_binary, tmp_path):
    if not KTH.exists():
        pytest.skip(f"the SWF log is not at {KTH}")
    workload = tmp_path / "kth.json"
    result = CliRunner().invoke(
        main,
        [
            "swf",
            "convert",
            str(KTH),
            "-o",
            str(workload),
            "--start",
            "599850",
            "--end",
            "700000",
            "--nb-res",
            str(PLATFORM_HOSTS),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "needs more resources than nb_res" in result.output
    _check_all_ran(workload, run_batsim(batsim_binary, workload, tmp_path))
