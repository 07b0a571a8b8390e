"""Reading trace tables: real parts against an independent count, special times, bad input."""

from __future__ import annotations

import csv
import gzip
import hashlib
import zlib
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from trace_files import event, seconds_us, write_part

from batsim_google.trace.reader import out_of_order, read_batches, source_files
from batsim_google.trace.row_accounting import RowAccount, TraceError
from batsim_google.trace.schema import AFTER_WINDOW, seconds


def _independent_counts(google_2011, table: str, column: int) -> Counter:
    counts = Counter()
    for path in sorted((google_2011 / table).glob("part-*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            counts.update(int(row[column]) for row in csv.reader(handle))
    return counts


def _event_counts(batches) -> Counter:
    counts = Counter()
    for _, batch in batches:
        values, numbers = np.unique(batch.column("event_type").to_numpy(), return_counts=True)
        counts.update(dict(zip(values.tolist(), numbers.tolist())))
    return counts


@pytest.mark.parametrize(("table", "column"), [("task_events", 5), ("job_events", 3)])
def test_event_type_counts_equal_an_independent_count(google_2011, table, column):
    account = RowAccount()
    counts = _event_counts(read_batches([google_2011], table, account=account))
    assert counts == _independent_counts(google_2011, table, column)
    assert account.read == sum(counts.values()) and not account.skipped


def test_part_000_has_its_initial_state_and_synthesized_rows(google_2011):
    part = google_2011 / "task_events" / "part-00000-of-00500.csv.gz"
    rows = sum(batch.num_rows for _, batch in read_batches([part], "task_events"))
    assert rows == 450_146
    synthesized = sum(
        b.column("missing_info").is_valid().to_numpy(zero_copy_only=False).sum()
        for _, b in read_batches([part], "task_events")
    )
    assert synthesized == 291  # read like any row (their tasks' states need them)
    before = sum(pc.sum(pc.equal(b.column("time"), 0)).as_py() for _, b in read_batches([part], "task_events"))
    assert before > 100_000  # tasks present when the trace starts are all at time 0


def test_parallel_workers_give_the_same_rows(google_2011):
    def per_file(workers: int) -> dict:
        batches = {}
        for path, batch in read_batches([google_2011], "task_events", line_numbers=True, workers=workers):
            batches.setdefault(path, []).append(batch)
        return {path: pa.Table.from_batches(parts) for path, parts in batches.items()}

    one, two = per_file(1), per_file(2)
    assert list(one) == list(two) and all(one[path].equals(two[path]) for path in one)


def test_special_times_are_infinite_never_ordinary():
    raw = np.array([0, seconds_us(0), seconds_us(12.5), AFTER_WINDOW], dtype=np.int64)
    assert seconds(raw).tolist() == [-np.inf, 0.0, 12.5, np.inf]
    assert seconds(np.array([599_999_999]))[0] == pytest.approx(-1e-6)


def test_special_times_are_exempt_from_the_order_check(tmp_path):
    lines = [
        event(0, 1, 0, 0),
        event(seconds_us(5), 1, 0, 1),
        event(AFTER_WINDOW, 2, 0, 0),
        event(seconds_us(6), 2, 1, 0),
        event(0, 3, 0, 0),
    ]
    write_part(tmp_path, lines)
    account = RowAccount()
    rows = sum(b.num_rows for _, b in read_batches([tmp_path], "task_events", account=account))
    assert rows == 5 and account.skipped == {}


def test_columns_follow_schema_csv(tmp_path):
    (tmp_path / "schema.csv").write_text(
        "file pattern,field number,content,format,mandatory\n"
        + "".join(
            f"job_events/part-?????-of-?????.csv.gz,{number},{content},X,NO\n"
            for number, content in enumerate(
                [
                    "time",
                    "job ID",
                    "missing info",
                    "event type",
                    "user",
                    "scheduling class",
                    "job name",
                    "logical job name",
                ],
                start=1,
            )
        )
    )
    write_part(tmp_path, ["5,42,,1,u,3,n,l"], table="job_events")
    ((_, batch),) = read_batches([tmp_path], "job_events")
    assert batch.column("job_id").to_pylist() == [42] and batch.column("event_type").to_pylist() == [1]


def test_single_files_plain_or_gzip_in_part_order(tmp_path):
    later = write_part(tmp_path / "a", [event(seconds_us(9), 2, 0, 0)], part=1, compress=False)
    first = write_part(tmp_path / "b", [event(seconds_us(1), 1, 0, 0)], part=0)
    assert source_files([later, first], "task_events") == [first, later]
    jobs = [b.column("job_id").to_pylist() for _, b in read_batches([later, first], "task_events")]
    assert jobs == [[1], [2]]


GOOD = [event(seconds_us(t), 1, t, 0) for t in range(1, 9)]


def _bad_case(kind: str) -> tuple[list[str], int, str]:
    """Lines with one bad row (at ``line``), and the reason it is skipped for."""
    lines = list(GOOD)
    if kind == "wrong column count":
        lines[3] += ",1"
        return lines, 4, kind
    if kind == "non-numeric field":
        lines[4] = lines[4].replace(",1,5,", ",1,x5,", 1)
        return lines, 5, kind
    if kind == "unknown event type":
        lines[2] = event(seconds_us(3), 1, 2, 9)
        return lines, 3, kind
    if kind == "time out of order":
        lines[5] = event(seconds_us(1), 1, 5, 0)
        return lines, 6, kind
    if kind == "missing mandatory field":
        lines[6] = event(seconds_us(7), 1, 6, 0, priority="")
        return lines, 7, kind
    if kind == "value out of range":
        lines[1] = event(seconds_us(2), 1, 1, 0, scheduling_class=7)
        return lines, 2, kind
    if kind == "empty line":
        lines[3] = ""
        return lines, 4, "empty line"
    if kind == "infinite request":
        lines[2] = event(seconds_us(3), 1, 2, 0, cpu="inf")
        return lines, 3, "non-numeric field"
    raise AssertionError(kind)


BAD_KINDS = [
    "wrong column count",
    "non-numeric field",
    "unknown event type",
    "time out of order",
    "missing mandatory field",
    "value out of range",
    "empty line",
    "infinite request",
]


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("kind", BAD_KINDS)
def test_bad_row_lenient_skips_and_counts_strict_names_file_and_line(tmp_path, kind, compress):
    lines, line, reason = _bad_case(kind)
    path = write_part(tmp_path, lines, compress=compress)
    account = RowAccount()
    batches = list(read_batches([tmp_path], "task_events", account=account, line_numbers=True))
    used = sum(b.num_rows for _, b in batches)
    account.used = used
    assert account.skipped == {reason: 1} and used == len(GOOD) - 1 and account.balanced
    kept_lines = [n for _, b in batches for n in b.column("line").to_pylist()]
    assert kept_lines == [n for n in range(1, len(GOOD) + 1) if n != line]
    with pytest.raises(TraceError, match=rf"{path}:{line}: {reason}"):
        list(read_batches([tmp_path], "task_events", account=RowAccount(strict=True)))


def test_truncated_gzip_keeps_the_rows_before_the_cut(google_2011, tmp_path):
    source = google_2011 / "task_events" / "part-00001-of-00500.csv.gz"
    cut = tmp_path / "task_events" / "part-00001-of-00500.csv.gz"
    cut.parent.mkdir()
    cut.write_bytes(source.read_bytes()[:400_000])
    complete_lines = zlib.decompressobj(wbits=31).decompress(cut.read_bytes()).count(b"\n")
    account = RowAccount()
    rows = sum(b.num_rows for _, b in read_batches([cut], "task_events", account=account))
    account.used = rows
    assert rows == complete_lines > 30_000
    assert account.skipped == {"line cut by the end of a damaged gzip stream": 1} and account.balanced
    assert len(account.incidents) == 1 and "cut short" in account.incidents[0]
    assert "incident" in account.summary()
    with pytest.raises(TraceError, match=rf"{cut}:{complete_lines + 1}: line cut"):
        list(read_batches([cut], "task_events"))


def test_sha256sum_check(tmp_path):
    path = write_part(tmp_path, GOOD)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "SHA256SUM").write_text(f"{digest}  task_events/{path.name}\n")
    assert sum(b.num_rows for _, b in read_batches([tmp_path], "task_events", verify=True)) == len(GOOD)
    (tmp_path / "SHA256SUM").write_text(f"{'0' * 64}  task_events/{path.name}\n")
    with pytest.raises(TraceError, match="SHA-256 differs"):
        list(read_batches([tmp_path], "task_events", verify=True))
    (tmp_path / "SHA256SUM").write_text(f"{digest}  task_events/other.csv.gz\n")
    with pytest.raises(TraceError, match="not listed"):
        list(read_batches([tmp_path], "task_events", verify=True))
    (tmp_path / "SHA256SUM").unlink()
    with pytest.raises(TraceError, match="no SHA256SUM"):
        list(read_batches([tmp_path], "task_events", verify=True))


def test_corrupt_gzip_is_an_incident_not_a_crash(google_2011, tmp_path):
    data = bytearray((google_2011 / "task_events" / "part-00001-of-00500.csv.gz").read_bytes())
    data[300_000:300_050] = bytes(50)
    path = tmp_path / "part-00001-of-00500.csv.gz"
    path.write_bytes(bytes(data))
    account = RowAccount()
    account.used = sum(b.num_rows for _, b in read_batches([path], "task_events", account=account))
    assert 0 < account.used < 77_776 and account.balanced
    assert len(account.incidents) == 1
    with pytest.raises(TraceError, match=str(path)):
        list(read_batches([path], "task_events"))


def test_one_wild_time_skips_that_row_not_its_successors(google_2011, tmp_path):
    source = google_2011 / "task_events" / "part-00001-of-00500.csv.gz"
    with gzip.open(source, "rt") as handle:
        lines = [next(handle).rstrip("\n") for _ in range(1000)]
    lines[1] = "9000000000000000000" + lines[1][lines[1].index(",") :]
    path = write_part(tmp_path, lines, part=1, parts=500)
    account = RowAccount()
    account.used = sum(b.num_rows for _, b in read_batches([path], "task_events", account=account))
    assert account.skipped == {"time out of order": 1} and account.used == 999 and account.balanced
    with pytest.raises(TraceError, match=rf"{path}:2: time out of order \(time 9000000000000000000 after"):
        list(read_batches([path], "task_events"))


@pytest.mark.parametrize(
    "times, next_time, late",
    [
        ([1, 9, 3, 4], None, [False, True, False, False]),  # a jump ahead: that row only
        ([1, 2, 3, 0, 5], None, [False, False, False, True, False]),  # a step back: that row only
        ([9, 1, 2, 3], None, [True, False, False, False]),  # the first row, judged by its successor
        ([1, 2, 3], 2, [False, False, True]),  # the next chunk shows that the last row jumped ahead
        ([1, 2, 3], None, [False, False, False]),
        ([-5, 1], None, [True, False]),  # earlier than the reference (0)
    ],
)
def test_out_of_order_rows(times, next_time, late):
    flagged, _, reference = out_of_order(np.array(times), 0, next_time)
    assert flagged.tolist() == late and reference == max(t for t, bad in zip(times, late) if not bad)


def test_strict_names_the_line_of_the_field_it_quotes(tmp_path):
    lines = list(GOOD)
    lines[4] = lines[4].replace(",1,5,", ",abc,5,", 1)  # line 5: job ID abc
    lines[6] = "xyz" + lines[6][lines[6].index(",") :]  # line 7: time xyz
    path = write_part(tmp_path, lines)
    with pytest.raises(TraceError, match=rf"{path}:5: non-numeric field \(job_id='abc'\)"):
        list(read_batches([tmp_path], "task_events"))
