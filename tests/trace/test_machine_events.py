"""machine_events: the cell, the availability events and the row accounting (synthetic fixture).

The fixture (tests/data/synthetic-trace, described in its README) is hand-written: the expected
values below are read off its rows, one by one.
"""

from __future__ import annotations

import gzip
import json

import pytest
from click.testing import CliRunner
from conftest import REPO

from batsim_google.cli import main
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.trace.machines import AFTER, REPEATED, UNDESCRIBED, read_machine_history
from batsim_google.trace.row_accounting import TraceError

# Reasons of the trace reader's own checks.
MISSING = "missing mandatory field"
UNKNOWN = "unknown event type"


TRACE = REPO / "tests" / "data" / "synthetic-trace"
PART = TRACE / "machine_events" / "part-00000-of-00001.csv"
B = "HofLGzk1Or/8Ildj2+Lqv0UGGvY82NLoni8+J/Yy0RU="


def test_cell_in_machine_id_order_with_capacities_at_joining():
    history = read_machine_history([TRACE])
    machines = history.cell.machines
    assert machines["machine_id"].to_list() == [5, 6, 7, 10, 13, 2000, 3000]
    assert machines["cpu"].to_list() == [0.5, 0.5, 1.0, 0.25, 0.5, 0.5, 1.0]
    # 5 keeps its memory at joining (0.2493), not its UPDATE's; 13's ADD lacked it, its UPDATE gave it.
    assert machines["memory"].to_list() == [0.2493, 0.2493, 1.0, 0.2498, 0.4995, 0.749, 0.4995]
    assert machines["platform_id"][4] == B
    assert history.capacity_changes == 1  # 5's UPDATE; 13's UPDATE completes it, it changes nothing


def test_a_returning_machine_with_other_capacities_is_counted_not_modelled(tmp_path):
    (tmp_path / "machine_events").mkdir()
    (tmp_path / "machine_events" / "part-00000-of-00001.csv").write_text(
        "\n".join(
            [
                f"0,1,0,{B},0.5,0.5",
                f"0,2,0,{B},0.5,0.5",
                "700000000,1,1,,,",
                f"800000000,1,0,{B},1,1",  # back with twice the capacities
                "900000000,2,2,other-platform,0.5,0.5",  # another platform
            ]
        )
        + "\n"
    )
    history = read_machine_history([tmp_path])
    assert history.capacity_changes == 2 and history.cell.machines["cpu"].to_list() == [0.5, 0.5]
    assert history.account.used == 5 and history.account.balanced


def test_availability_changes():
    changes = read_machine_history([TRACE]).changes
    # Resources: 5->0, 6->1, 7->2, 10->3, 13->4, 2000->5, 3000->6.
    assert list(zip(changes.time.tolist(), changes.resource.tolist(), changes.available.tolist())) == [
        (0.0, 5, False),
        (0.0, 6, False),  # added after t = 0: unavailable from the start
        (100.0, 1, False),
        (100.0, 2, False),
        (200.0, 2, True),  # 7 re-added
        (300.0, 5, True),
        (600.0, 6, True),
        (700.0, 6, False),
        (800.0, 2, False),
        # 10 removed and re-added at 500 s: nothing; 6's second REMOVE at 400 s: nothing.
    ]


def test_accounting_adds_up():
    history = read_machine_history([TRACE])
    rows = PART.read_text().splitlines()
    account = history.account
    assert account.read == len(rows) == 22
    assert dict(account.skipped) == {REPEATED: 2, AFTER: 1, UNDESCRIBED: 2, UNKNOWN: 1}
    assert account.used == 16 and account.balanced
    assert history.accounting().startswith("machine_events: rows read 22 = used 16 + skipped 6 (")


def test_gzip_part_reads_the_same(tmp_path):
    folder = tmp_path / "machine_events"
    folder.mkdir()
    with gzip.open(folder / "part-00000-of-00001.csv.gz", "wb") as out:
        out.write(PART.read_bytes())
    plain, packed = read_machine_history([TRACE]), read_machine_history([tmp_path])
    assert plain.cell.machines.equals(packed.cell.machines)
    assert plain.changes.time.tolist() == packed.changes.time.tolist()


def test_strict_mode_names_file_and_line(tmp_path):
    # The reader's checks come first, as it reads; the machines' own checks after.
    with pytest.raises(TraceError, match=rf"part-00000-of-00001\.csv:21: {UNKNOWN}"):
        read_machine_history([TRACE], strict=True)
    undescribed = tmp_path / "undescribed.csv"
    undescribed.write_text("0,5,0,B,0.5,0.5\n0,7,0,B,,0.5\n")
    with pytest.raises(TraceError, match=rf"{undescribed.name}:2: machine never given"):
        read_machine_history([undescribed], strict=True)
    bad = tmp_path / "bad.csv"
    bad.write_text("0,5,0,B,0.5,0.5\n100,,0,B,0.5,0.5\n0,7,0,B,,0.5\n")
    with pytest.raises(TraceError, match=rf"{bad.name}:2: {MISSING}"):
        read_machine_history([bad], strict=True)
    lenient = read_machine_history([bad])
    assert dict(lenient.account.skipped) == {MISSING: 1, UNDESCRIBED: 1}  # 7 has no CPU capacity
    assert lenient.cell.machines["machine_id"].to_list() == [5]
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("0,5,0,B,0.5,0.5\n0,6,0,B,0.5,0.5\n700000000,5,4,B,0.5,0.5\n")
    with pytest.raises(TraceError, match=rf"{unknown.name}:3: {UNKNOWN}"):
        read_machine_history([unknown], strict=True)


def test_platform_and_events_commands_from_machine_events(tmp_path):
    runner = CliRunner()
    platform = tmp_path / "trace.xml"
    result = runner.invoke(main, ["platform", "--machine-events", str(TRACE), "-o", str(platform)])
    assert result.exit_code == 0, result.output
    assert "rows read 22 = used 16 + skipped 6" in result.output
    hosts = compute_hosts(platform)
    assert [h.properties["machine_id"] for h in hosts] == ["5", "6", "7", "10", "13", "2000", "3000"]
    assert [h.properties["platform_id"] for h in hosts][4] == B
    events = tmp_path / "events.jsonl"
    result = runner.invoke(
        main, ["failures", str(platform), "--machine-events", str(TRACE), "-o", str(events), "--horizon", "650"]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert lines[0] == {"timestamp": 0.0, "type": "machine_unavailable", "resources": "5-6"}
    assert lines[-1]["timestamp"] == 600.0  # the horizon cuts 700 s and 800 s
    other = tmp_path / "other.xml"
    runner.invoke(main, ["platform", "--machines", "7", "-o", str(other)])
    refused = runner.invoke(main, ["failures", str(other), "--machine-events", str(TRACE), "-o", str(events)])
    assert refused.exit_code == 2 and "was not built from the machine_events" in refused.output
    strict = runner.invoke(main, ["platform", "--machine-events", str(TRACE), "--strict", "-o", str(platform)])
    assert strict.exit_code == 2 and f":21: {UNKNOWN}" in strict.output


def test_no_described_machine_names_the_paths_not_their_repr(tmp_path):
    part = tmp_path / "machine_events" / "part-00000-of-00001.csv"
    part.parent.mkdir()
    part.write_text("0,1,0,,,\n")
    with pytest.raises(TraceError) as refused:
        read_machine_history([tmp_path])
    assert str(refused.value).startswith(f"{tmp_path}: no machine of machine_events")
    assert "PosixPath" not in str(refused.value)
