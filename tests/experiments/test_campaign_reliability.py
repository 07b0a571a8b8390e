"""A campaign never hangs on a user's policy, ends with its children on SIGTERM or SIGINT, records
why a run failed so that a resume does not run it again unless asked, and says what it does as it
goes. Real processes: ``batsim-google compare`` as a user starts it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

#: A policy whose module never finishes loading.
LOOPING_POLICY = """
while True:
    pass
"""


def batsim_google(*arguments, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "batsim-google"), *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def write_campaign(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_policy_that_loops_at_import_is_refused_within_the_campaigns_timeout(tmp_path):
    (tmp_path / "looping.py").write_text(LOOPING_POLICY)
    campaign = write_campaign(
        tmp_path,
        """
        timeout = 3
        energy_outputs = false
        [platforms]
        small = {cell = 4}
        [workloads]
        google = {preset = "google", tasks = 10}
        [schedulers.mine]
        python = "looping.py:Looping"
        """,
    )
    # before, it never ended (the subprocess's own limit fails the test); the command's imports
    # take most of the time on a loaded machine
    done = batsim_google("compare", campaign, "-o", tmp_path / "out", "--no-progress", timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"Error: {campaign}: schedulers.mine: policy '{tmp_path / 'looping.py'}:Looping': loading it took more "
        "than 3 s (does its module loop or wait as it is imported?)"
    ]


def failing_batsim(folder: Path) -> Path:
    """A Batsim that fails at once (status 3) and leaves a file per launch in ``folder/launches``."""
    launches = folder / "launches"
    launches.mkdir()
    path = folder / "batsim"
    path.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        'if sys.argv[1:] == ["--version"]:\n    sys.exit(print("4.2.1"))\n'
        f"open(os.path.join({str(launches)!r}, str(os.getpid())), 'w').close()\n"
        "sys.exit('Batsim gave up')\n"
    )
    path.chmod(0o755)
    return path


def test_a_failed_run_is_recorded_reported_and_run_again_only_when_asked(tmp_path):
    batsim = failing_batsim(tmp_path)
    campaign = write_campaign(
        tmp_path,
        """
        timeout = 1
        energy_outputs = false
        [platforms]
        small = {cell = 4}
        [workloads]
        google = {preset = "google", tasks = 3000}
        [policies.on]
        energy = "always-on"
        """,
    )
    output = tmp_path / "out"
    compare = ["compare", campaign, "-o", output, "--batsim", batsim, "--jobs", "1", "--no-progress"]
    run = output / "runs" / "small" / "google-s0" / "none" / "on"

    first = batsim_google(*compare)
    assert first.returncode == 1, first.stderr
    # the stock Batsim's cost model predicts more than the 1 s timeout for 3,000 jobs: said before the runs
    assert "warning: 1 run(s) of google on small are predicted to take about" in first.stderr
    assert "past the campaign's timeout (1 s)" in first.stderr
    # without a progress bar, a line per run as it ends
    assert f"[1/1] {run}: failed: batsim exited with status 1" in first.stdout
    assert "1 runs: 0 simulated, 0 reused, 1 failed\n" in first.stdout
    assert len(list((tmp_path / "launches").iterdir())) == 1
    assert (run / "failed.json").is_file() and not (run / "done.json").exists()

    second = batsim_google(*compare)
    assert second.returncode == 1
    assert len(list((tmp_path / "launches").iterdir())) == 1  # not run again
    assert "1 failed (1 of them in an earlier invocation, not run again: --retry-failed runs them)" in second.stdout
    assert f"run {run} failed (in an earlier invocation): batsim exited with status 1" in second.stderr
    assert "warning" not in second.stderr and "[1/1]" not in second.stdout  # nothing to run, nothing predicted

    third = batsim_google(*compare, "--retry-failed")
    assert third.returncode == 1
    assert len(list((tmp_path / "launches").iterdir())) == 2
    assert "1 runs: 0 simulated, 0 reused, 1 failed\n" in third.stdout
