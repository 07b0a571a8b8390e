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
