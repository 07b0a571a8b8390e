"""Units of time in seconds, Batsim's and the trace's unit."""

HALF_HOUR = 1_800.0
HOUR = 3_600.0
DAY = 86_400.0
WEEK = 7 * DAY
