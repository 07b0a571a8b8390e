"""The CPU/memory request law: the shipped one is what derivation gives on the real sample, and
every row read is used or skipped by reason."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.errors import InputFileError
from batsim_google.model.request_law import load_request_law
from batsim_google.trace.derive_requests import derive_request_law
from batsim_google.trace.row_accounting import RowAccount, TraceError
from batsim_google.trace.schema import TaskEvent as E


def test_the_shipped_law_is_derived_from_the_real_sample_parts(google_2011):
    account = RowAccount()
    derived = derive_request_law([google_2011], account, note="sample")
    shipped = load_request_law()
    for kind in ("task", "service"):
        ours, theirs = derived.kinds[kind], shipped.kinds[kind]
        np.testing.assert_array_equal(ours.cpu, theirs.cpu)
        np.testing.assert_array_equal(ours.memory, theirs.memory)
        np.testing.assert_array_equal(ours.count, theirs.count)
    assert derived.provenance["files"] == shipped.provenance["files"]
    assert account.balanced and account.read > account.used > 0
    assert account.used == sum(int(law.count.sum()) for law in derived.kinds.values())


def sample_lines() -> list[str]:
    return [
        event(seconds_us(1), 1, 0, E.SUBMIT),
        event(seconds_us(2), 1, 0, E.SCHEDULE),
        event(seconds_us(3), 1, 0, E.FINISH, cpu="0.125", memory="0.25"),
        event(seconds_us(4), 2, 0, E.FINISH, memory=""),  # no memory request
        event(seconds_us(5), 3, 0, E.KILL, cpu="0.5", memory="0.5"),
        "oops,not,a,row",  # line 6: bad row
        event(seconds_us(7), 4, 0, E.KILL, cpu="0.5", memory="0.5"),
    ]


def test_every_row_is_used_or_skipped_by_reason(tmp_path):
    write_part(tmp_path, sample_lines())
    account = RowAccount()
    law = derive_request_law([tmp_path], account)
    assert law.kinds["task"].count.tolist() == [1.0] and law.kinds["task"].cpu.tolist() == [0.125]
    assert law.kinds["service"].count.tolist() == [2.0]
    assert (account.read, account.used) == (7, 3)
    assert account.skipped["not a FINISH or KILL row, nor a SCHEDULE at time 0"] == 2
    assert "resident" not in law.kinds  # no row at the trace's start
    assert account.skipped["FINISH row without a request"] == 1
    assert account.total_skipped == 4 and account.balanced
    assert law.provenance["rows_skipped_missing_request"] == {"task": 1, "service": 0}


def test_tasks_scheduled_at_the_start_are_the_residents(tmp_path):
    write_part(
        tmp_path,
        [
            event(0, 1, 0, E.SUBMIT, cpu="0.25", memory="0.5"),
            event(0, 1, 0, E.SCHEDULE, cpu="0.25", memory="0.5"),
            event(0, 1, 1, E.SCHEDULE, cpu="0.25", memory="0.5"),
            event(seconds_us(2), 2, 0, E.SCHEDULE, cpu="0.125", memory="0.125"),  # not at the start
            event(seconds_us(3), 2, 0, E.FINISH, cpu="0.125", memory="0.125"),
            event(seconds_us(4), 3, 0, E.KILL, cpu="0.5", memory="0.5"),
        ],
    )
    account = RowAccount()
    law = derive_request_law([tmp_path], account)
    resident = law.kinds["resident"]
    assert (resident.cpu.tolist(), resident.memory.tolist(), resident.count.tolist()) == ([0.25], [0.5], [2.0])
    assert (account.used, account.total_skipped) == (4, 2) and account.balanced


def test_strict_mode_names_the_file_and_line(tmp_path):
    part = write_part(tmp_path, sample_lines())
    with pytest.raises(TraceError, match=f"{part.name}:6"):
        derive_request_law([part], RowAccount(strict=True))


def test_the_command_writes_a_loadable_law_and_ends_with_the_accounting_line(tmp_path):
    part = write_part(tmp_path, sample_lines())
    output = tmp_path / "law.json"
    result = CliRunner().invoke(main, ["requests", str(part), "-o", str(output), "--note", "fixture"])
    assert result.exit_code == 0, result.output
    assert "rows read 7 = used 3 + skipped 4" in result.output
    assert load_request_law(output).provenance["note"] == "fixture"
    strict = CliRunner().invoke(main, ["requests", str(part), "-o", str(output), "--strict"])
    assert strict.exit_code == 2 and f"{part.name}:6" in strict.output


@pytest.mark.parametrize("resource", ["cpu", "memory"])
def test_a_law_requesting_more_than_the_largest_machine_is_refused_when_loaded(tmp_path, resource):
    law = {"kinds": {"task": {"cpu": [0.5, 0.25], "memory": [0.5, 0.25], "count": [1, 2]}}}
    law["kinds"]["task"][resource][1] = 5.0
    path = tmp_path / "law.json"
    path.write_text(json.dumps(law))
    with pytest.raises(InputFileError, match=rf"^{re.escape(str(path))}: kinds\.task\.{resource} holds 5, above 1 "):
        load_request_law(path)
    result = CliRunner().invoke(
        main, ["generate", "--tasks", "5", "--requests", str(path), "-o", str(tmp_path / "w.json")]
    )
    assert result.exit_code == 2 and f"kinds.task.{resource} holds 5, above 1" in result.output
