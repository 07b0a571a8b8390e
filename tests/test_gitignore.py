"""The outputs of the README's and docs' example commands, run from the repository root, are ignored by git."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import REPO

OUTPUT = re.compile(r"(?:^|\s)(?:-o|--output|--json|--csv|--plots|--report) ([a-z0-9][\w./-]*)")


def _example_outputs() -> set[str]:
    texts = [(REPO / "README.md").read_text()] + [path.read_text() for path in (REPO / "docs").glob("*.md")]
    return {match.split("/")[0] + ("/" if "/" in match else "") for text in texts for match in OUTPUT.findall(text)}


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs git and a checkout")
def test_example_outputs_are_ignored():
    outputs = sorted(_example_outputs())
    assert "results/" in outputs and "model.toml" in outputs
    # A folder given without its slash ("-o experiment") counts as ignored when the folder is.
    candidates = outputs + [output + "/" for output in outputs if not output.endswith("/")]
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", *candidates], cwd=REPO, capture_output=True, text=True
    )
    ignored = {path.rstrip("/") for path in checked.stdout.split()}
    assert ignored >= {output.rstrip("/") for output in outputs}
