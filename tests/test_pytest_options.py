"""The project's pytest settings: a plain ``pytest`` run says why each test was skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_a_plain_run_prints_each_skip_reason(tmp_path):
    (tmp_path / "test_skipping.py").write_text(
        "import pytest\n\n\ndef test_skipped():\n    pytest.skip('no engine here, for a reason')\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(PYPROJECT),
            "--rootdir",
            str(tmp_path),
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env={name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SKIPPED [1] test_skipping.py:5: no engine here, for a reason" in result.stdout
