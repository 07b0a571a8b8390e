"""The names and defaults the trace commands' options are declared with, importable without polars.

The command line declares its choices and defaults with them at start-up; the readers, statistics
and converters use the same names.
"""

from batsim_google.units import HOUR

#: Priority groups of the model paper (Section 2, Table 5), Google priorities inclusive.
PRIORITY_GROUPS: dict[str, tuple[int, int]] = {
    "free": (0, 1),
    "normal": (2, 8),
    "production": (9, 9),
    "monitoring": (10, 11),
}
#: The events that end a task attempt, by name (lower-case ``TaskEvent`` names).
END_EVENT_NAMES = ("evict", "fail", "finish", "kill", "lost")
#: Default time (s) a dead task is kept, waiting for a resubmission, before it is reported closed.
DEFAULT_GRACE = HOUR
#: Default sampling step (s) of the running-task curves of the statistics.
DEFAULT_BIN_WIDTH = 60.0
