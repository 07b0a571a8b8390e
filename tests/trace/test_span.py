"""The time of a trace directory's last task event: the last line of its last part."""

from __future__ import annotations

import pytest
from trace_files import event, seconds_us, write_part

from batsim_google.trace.reader import TraceError
from batsim_google.trace.span import last_event_time


def test_the_last_event_is_the_last_line_of_the_last_part(tmp_path):
    write_part(tmp_path, [event(seconds_us(5), 1, 0, 0), event(seconds_us(90), 1, 0, 1)], part=0)
    write_part(tmp_path, [event(seconds_us(120), 2, 0, 0), event(seconds_us(7201.5), 2, 0, 1), ""], part=1)
    assert last_event_time(tmp_path) == pytest.approx(7201.5)
    plain = write_part(tmp_path / "plain", [event(seconds_us(33), 1, 0, 0)], compress=False)
    assert last_event_time(plain) == pytest.approx(33.0)


def test_a_last_line_without_a_time_is_refused_with_its_file(tmp_path):
    path = write_part(tmp_path, [event(seconds_us(5), 1, 0, 0), "not,a,time"])
    with pytest.raises(TraceError, match=f"{path.name}: its last line has no event time \\('not'\\)"):
        last_event_time(tmp_path)
    path.write_bytes(b"\x1f\x8b broken")
    with pytest.raises(TraceError, match="cannot be read"):
        last_event_time(tmp_path)
