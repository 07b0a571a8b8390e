"""Random byte-level damage to a real part file never crashes trace convert or trace stats."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batsim_google.cli import main

LINES = 2000
_ACCOUNT = re.compile(r"rows read (\d+) = used (\d+) \+ skipped (\d+)")


@pytest.fixture(scope="module")
def extract(google_2011) -> bytes:
    """The first lines of a real part, as text."""
    with gzip.open(google_2011 / "task_events" / "part-00001-of-00500.csv.gz", "rb") as handle:
        return b"".join(handle.readline() for _ in range(LINES))


damage = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=20)),
    st.tuples(st.just("insert"), st.lists(st.tuples(st.floats(0, 1), st.binary(max_size=80)), min_size=1, max_size=5)),
)


def _damaged(data: bytes, kind: str, how) -> bytes:
    if kind == "truncate":
        return data[: int(how * len(data))]
    data = bytearray(data)
    if kind == "flip":
        for where, value in how:
            data[min(int(where * len(data)), len(data) - 1)] = value
        return bytes(data)
    for where, line in how:
        at = data.find(b"\n", int(where * len(data))) + 1
        data[at:at] = line + b"\n"
    return bytes(data)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=damage, compressed=st.booleans(), damage_compressed=st.booleans())
def test_damaged_parts_end_with_an_account_or_a_named_error(
    extract, tmp_path_factory, damage, compressed, damage_compressed
):
    folder = tmp_path_factory.mktemp("part")
    data = extract
    if compressed:
        data = gzip.compress(data, compresslevel=1)
        data = (
            _damaged(data, *damage) if damage_compressed else gzip.compress(_damaged(extract, *damage), compresslevel=1)
        )
    else:
        data = _damaged(data, *damage)
    part = folder / ("part-00001-of-00500.csv" + (".gz" if compressed else ""))
    part.write_bytes(data)
    out = folder / "w.json"
    for command in (["trace", "convert", str(part), "-o", str(out)], ["trace", "stats", str(part)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code in (0, 2), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        if result.exit_code == 0:
            read, used, skipped = map(int, _ACCOUNT.search(result.output).groups())
            assert read == used + skipped
        else:
            assert result.output.strip().splitlines()[-1].startswith("Error: ")
        if command[1] == "convert" and out.exists():
            assert "jobs" in json.loads(out.read_text())
            out.unlink()
