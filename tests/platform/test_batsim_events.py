"""Availability events: never a repeated state, net effect per timestamp, Batsim's file format."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from procset import ProcSet

from batsim_google.platform.batsim_events import availability_changes, write_availability_events

changes_strategy = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from([-5.0, 0.0, 1.0, 2.0, 2.5, 7.0]), st.booleans()),
    max_size=40,
)


def _sequential_states(rows):
    """Oracle: apply the changes one at a time, in time order then input order (times before 0
    at 0); return each machine's state after each timestamp, and which inputs changed nothing."""
    state, after, repeated = {}, {}, [False] * len(rows)
    for index in sorted(range(len(rows)), key=lambda i: (max(rows[i][1], 0.0), i)):
        machine, time, available = rows[index]
        repeated[index] = state.get(machine, True) == available
        state[machine] = available
        after[(machine, max(time, 0.0))] = available
    return after, repeated


@given(changes_strategy)
def test_changes_are_the_net_state_changes_of_each_timestamp(rows):
    resource = np.array([r for r, _, _ in rows], dtype=np.int64)
    time = np.array([t for _, t, _ in rows], dtype=float)
    available = np.array([a for _, _, a in rows], dtype=bool)
    changes, repeated = availability_changes(resource, time, available)
    after, expected_repeated = _sequential_states(rows)
    assert repeated.tolist() == expected_repeated
    expected, state = [], {}
    for (machine, moment), value in sorted(after.items(), key=lambda item: (item[0][1], item[0][0])):
        if state.get(machine, True) != value:
            expected.append((moment, machine, value))
        state[machine] = value
    assert list(zip(changes.time.tolist(), changes.resource.tolist(), changes.available.tolist())) == expected


@given(changes_strategy)
def test_batsim_never_sees_a_repeated_state(rows):
    changes, _ = availability_changes(
        np.array([r for r, _, _ in rows], dtype=np.int64),
        np.array([t for _, t, _ in rows]),
        np.array([a for _, _, a in rows], dtype=bool),
    )
    state = {}
    for _time, machine, value in zip(changes.time, changes.resource, changes.available):
        assert state.get(machine, True) != value
        state[machine] = value
    assert (np.diff(changes.time) >= 0).all()


def test_file_groups_one_timestamp_and_type_per_line(tmp_path):
    changes, _ = availability_changes(
        np.array([0, 1, 2, 4, 1, 3]),
        np.array([5.0, 5.0, 5.0, 5.0, 9.1234567, 9.1234567]),
        np.array([False, False, False, False, True, False]),
    )
    path = tmp_path / "events.jsonl"
    assert write_availability_events(path, changes) == 3
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert events == [
        {"timestamp": 5.0, "type": "machine_unavailable", "resources": "0-2 4"},
        {"timestamp": 9.123457, "type": "machine_available", "resources": "1"},
        {"timestamp": 9.123457, "type": "machine_unavailable", "resources": "3"},
    ]
    assert ProcSet.from_str(events[0]["resources"]) == ProcSet(0, 1, 2, 4)
