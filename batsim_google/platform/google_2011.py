"""The 2011 Google cell as published: its machine types, and the trace's length.

Plain figures, importable without numpy or polars, so that the command line declares its defaults
with them at start-up.
"""

#: Reiss et al. 2012, Table 1: machine count, platform ID, CPU and memory capacity (normalized).
GOOGLE_2011_TYPES: tuple[tuple[int, str, float, float], ...] = (
    (6732, "B", 0.50, 0.50),
    (3863, "B", 0.50, 0.25),
    (1001, "B", 0.50, 0.75),
    (795, "C", 1.00, 1.00),
    (126, "A", 0.25, 0.25),
    (52, "B", 0.50, 0.12),
    (5, "B", 0.50, 0.03),
    (5, "B", 0.50, 0.97),
    (3, "C", 1.00, 0.50),
    (1, "B", 0.50, 0.06),
)
#: The cell's machine count, 12,583.
GOOGLE_2011_MACHINES = sum(count for count, *_ in GOOGLE_2011_TYPES)
#: Tasks running at the trace's start (task_events part 00000, scheduled at time 0): the cell's
#: steady state, 10.6 per machine.
GOOGLE_2011_START_TASKS = 132_982
#: The trace's length, the default horizon of machine failures.
TRACE_DAYS = 29
