"""Batsim's machine counts per state, corrected from the scheduler's log of the machines asleep.

Batsim 4.2.1 labels a machine that failed while asleep *idle* once it is repaired, though it stays
asleep (:mod:`batsim_google.scheduling.sleep_log`). Where the scheduler knows more machines asleep
(and up) than Batsim counts sleeping, the difference is moved from Batsim's idle count to its
sleeping count (never more than Batsim counts idle). Runs without the log (other schedulers,
machines always on) keep Batsim's counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


def corrected_machine_states(states: pl.DataFrame, sleeping: pl.DataFrame | None) -> pl.DataFrame:
    """``states``: Batsim's counts from each change on (``time``, ``nb_idle``, ``nb_sleeping``, ...);
    ``sleeping``: the scheduler's ``time``, ``sleeping`` at each change, or None. The counts at
    every change of either, with a ``mislabelled`` column (machines moved from idle to sleeping)."""
    if sleeping is None or sleeping.height == 0:
        return states.with_columns(pl.lit(0, dtype=pl.Int64).alias("mislabelled"))
    times = pl.concat([states.select("time"), sleeping.select("time")]).unique().sort("time")
    merged = (
        times.join_asof(states.sort("time"), on="time", strategy="backward")
        .join_asof(sleeping.sort("time").rename({"sleeping": "known_asleep"}), on="time", strategy="backward")
        .drop_nulls(["nb_idle"])
        .with_columns(pl.col("known_asleep").fill_null(0))
    )
    mislabelled = (pl.col("known_asleep") - pl.col("nb_sleeping")).clip(lower_bound=0)
    merged = merged.with_columns(pl.min_horizontal(mislabelled, pl.col("nb_idle")).alias("mislabelled"))
    return merged.with_columns(
        pl.col("nb_idle") - pl.col("mislabelled"), pl.col("nb_sleeping") + pl.col("mislabelled")
    ).drop("known_asleep")


def step_points(states: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """The rows of ``states`` (in ``time`` order) that a step plot of ``columns`` (each value held
    until the next row's time) needs: the last row at each time (the earlier ones hold for no
    time), of those the ones where a value changes, and the last row (where the plot ends). Batsim
    writes a row at every job start and end, even when no count changes: a week of the whole cell
    has 12 million rows and 13 thousand changes, and the figure drawn from all of them took GBs."""
    last_at_time = pl.col("time").ne_missing(pl.col("time").shift(-1))
    held = states.filter(last_at_time)
    changed = pl.any_horizontal(pl.col(name).ne_missing(pl.col(name).shift(1)) for name in columns)
    return held.filter(changed | (pl.int_range(pl.len()) == pl.len() - 1))
