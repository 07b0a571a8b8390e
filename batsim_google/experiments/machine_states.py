"""Batsim's machine counts per state, corrected from the scheduler's log of the machines asleep.

Batsim 4.2.1 labels a machine that failed while asleep *idle* once it is repaired, though it stays
asleep (:mod:`batsim_google.scheduling.sleep_log`). Where the scheduler knows more machines asleep
(and up) than Batsim counts sleeping, the difference is moved from Batsim's idle count to its
sleeping count (never more than Batsim counts idle). Runs without the log (other schedulers,
machines always on) keep Batsim's counts.
"""

from __future__ import annotations

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
