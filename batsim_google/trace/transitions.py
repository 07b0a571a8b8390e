"""The task lifecycle as a state machine: which event a task may see in which state.

A task (job ID, task index) goes through attempts SUBMIT -> [SCHEDULE] -> end (EVICT, FAIL,
FINISH, KILL, LOST), possibly with UPDATE_PENDING / UPDATE_RUNNING in between, and may be submitted
again after any end. The state after an event depends on the event only (format document, "Job and
task life cycles"), so the machine is a pair of tables over event codes, looked up for whole
arrays of rows at once.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from batsim_google.trace.schema import TaskEvent


class State(IntEnum):
    """State of a task between events."""

    UNSEEN = 0
    PENDING = 1
    RUNNING = 2
    DEAD = 3


ENDS = (TaskEvent.EVICT, TaskEvent.FAIL, TaskEvent.FINISH, TaskEvent.KILL, TaskEvent.LOST)
UPDATES = (TaskEvent.UPDATE_PENDING, TaskEvent.UPDATE_RUNNING)

STATE_AFTER = np.zeros(len(TaskEvent), dtype=np.int8)
STATE_AFTER[[TaskEvent.SUBMIT, TaskEvent.UPDATE_PENDING]] = State.PENDING
STATE_AFTER[[TaskEvent.SCHEDULE, TaskEvent.UPDATE_RUNNING]] = State.RUNNING
STATE_AFTER[list(ENDS)] = State.DEAD

#: Possible (state before, event) pairs. A pending task may also end (FAIL/KILL while pending are
#: documented; EVICT and LOST while pending occur in the trace), but only a running one finishes.
ALLOWED = np.zeros((len(State), len(TaskEvent)), dtype=bool)
ALLOWED[[State.UNSEEN, State.DEAD], TaskEvent.SUBMIT] = True
ALLOWED[State.PENDING, [TaskEvent.SCHEDULE, TaskEvent.UPDATE_PENDING]] = True
ALLOWED[State.PENDING, [TaskEvent.EVICT, TaskEvent.FAIL, TaskEvent.KILL, TaskEvent.LOST]] = True
ALLOWED[State.RUNNING, [*ENDS, TaskEvent.UPDATE_RUNNING]] = True

IS_END = np.zeros(len(TaskEvent), dtype=bool)
IS_END[list(ENDS)] = True
IS_UPDATE = np.zeros(len(TaskEvent), dtype=bool)
IS_UPDATE[list(UPDATES)] = True


def impossible_reason(state: int, event: int) -> str:
    """Why a row whose event its task's state does not allow is skipped."""
    name = TaskEvent(event).name
    if state == State.UNSEEN:
        return f"task began before the input: {name} without its SUBMIT"
    return f"impossible lifecycle: {name} of a {State(state).name.lower()} task"
