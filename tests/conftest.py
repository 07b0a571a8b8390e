"""Shared fixtures: the real trace sample beside the repository and the Batsim gate."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
GOOGLE_2011 = SHARED_DATA / "google-2011"
KTH = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.fixture(scope="session")
def google_2011() -> Path:
    if not GOOGLE_2011.is_dir():
        pytest.skip(f"the real trace sample is not at {GOOGLE_2011}")
    return GOOGLE_2011


@pytest.fixture(scope="session")
def kth() -> Path:
    """The KTH SP2 log (Parallel Workloads Archive, SWF)."""
    if not KTH.exists():
        pytest.skip(f"the SWF log is not at {KTH}")
    return KTH


def plain_swf_jobs(path: Path) -> list[list[float]]:
    """The job lines of an SWF log, parsed the plain way: 18 numbers each."""
    with gzip.open(path, "rt") as handle:
        return [[float(x) for x in line.split()] for line in handle if line.strip() and not line.startswith(";")]


@pytest.fixture(scope="session")
def batsim_binary() -> str:
    """The stock Batsim 4.2.1: ``$BATSIM_STOCK``, else ``batsim`` on PATH (docs/batsim.md)."""
    from batsim_google.simulation.batsim_binary import binary_name

    name = binary_name("stock")
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"integration test needs Batsim 4.2.1: no '{name}' on PATH")
    return path


@pytest.fixture(scope="session")
def trace_reference(google_2011):
    """The real parts' lifecycles by the plain row-by-row reference (tests/trace_files.py)."""
    from trace_files import reference_lifecycles

    return reference_lifecycles(google_2011)
