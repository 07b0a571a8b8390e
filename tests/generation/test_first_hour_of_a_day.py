"""``generate --duration 3600`` with a day's seed is exactly that day's first hour (docs/generating.md):
a short run is a prefix of a longer one, so an hour needs no slicing of a day's file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from batsim_google.cli import main

HOUR_S, DAY_S = 3600, 86_400
#: The cell's load per machine on 512 machines (docs/generating.md), so that a day stays small.
ON_512_MACHINES = ["--arrival-scale", "24.58"]


def generate(path, duration: int, *options: str) -> dict:
    arguments = ["generate", "--duration", str(duration), "--seed", "7", *ON_512_MACHINES, *options, "-o", str(path)]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "options",
    [
        ["--preset", "google"],
        ["--preset", "google-2011-cell"],  # an arrival profile: the month's rhythm
        ["--preset", "google", "--warm-start", "--nb-res", "512", "--grain", "60", "--walltime", "1.5"],
        ["--preset", "google", "--walltime", "user-estimate"],  # drawn factors, in blocks of a fixed size
    ],
    ids=["google", "google-2011-cell", "warm-start-grain-walltimes", "user-estimate"],
)
def test_the_hour_is_the_days_first_hour_job_by_job(tmp_path, options):
    hour = generate(tmp_path / "hour.json", HOUR_S, *options)
    day = generate(tmp_path / "day.json", DAY_S, *options)
    first_hour = [job for job in day["jobs"] if job["subtime"] <= HOUR_S]
    assert len(first_hour) < len(day["jobs"])  # the day goes on past its first hour
    assert len(hour["jobs"]) > 100
    assert hour["jobs"] == first_hour
    assert {job["profile"]: day["profiles"][job["profile"]] for job in first_hour} == {
        job["profile"]: hour["profiles"][job["profile"]] for job in hour["jobs"]
    }
    assert {key: value for key, value in hour.items() if key not in ("jobs", "profiles")} == {
        key: value for key, value in day.items() if key not in ("jobs", "profiles")
    }
