"""Batsim's machine states corrected from the scheduler's log of the machines asleep: Batsim 4.2.1
labels a machine repaired while asleep idle."""

from __future__ import annotations

import polars as pl

from batsim_google.experiments.machine_states import corrected_machine_states, step_points


def states(rows: list[tuple[float, int, int]]) -> pl.DataFrame:
    """(time, idle, sleeping) on 4 machines, none computing or switching."""
    return pl.DataFrame(
        {
            "time": [r[0] for r in rows],
            "nb_sleeping": [r[2] for r in rows],
            "nb_switching_on": [0] * len(rows),
            "nb_switching_off": [0] * len(rows),
            "nb_idle": [r[1] for r in rows],
            "nb_computing": [0] * len(rows),
        }
    )


def test_a_machine_repaired_asleep_is_shown_asleep_not_idle():
    # two machines fall asleep at 10; one of them fails at 20 and is repaired at 30, still asleep,
    # which Batsim then labels idle
    batsim = states([(0.0, 4, 0), (10.0, 2, 2), (20.0, 2, 1), (30.0, 3, 1)])
    log = pl.DataFrame({"time": [10.0, 20.0, 30.0], "sleeping": [2, 1, 2]})
    corrected = corrected_machine_states(batsim, log)
    assert corrected.select("time", "nb_idle", "nb_sleeping", "mislabelled").rows() == [
        (0.0, 4, 0, 0),
        (10.0, 2, 2, 0),
        (20.0, 2, 1, 0),
        (30.0, 2, 2, 1),
    ]


def test_without_the_log_batsims_counts_stay():
    batsim = states([(0.0, 4, 0), (30.0, 3, 1)])
    corrected = corrected_machine_states(batsim, None)
    assert corrected.drop("mislabelled").equals(batsim) and corrected["mislabelled"].sum() == 0


def test_never_more_moved_than_batsim_counts_idle_and_times_of_either_kept():
    batsim = states([(0.0, 1, 0)])  # 3 machines in no state (failed, say)
    log = pl.DataFrame({"time": [5.0], "sleeping": [3]})
    corrected = corrected_machine_states(batsim, log)
    assert corrected.select("time", "nb_idle", "nb_sleeping").rows() == [(0.0, 1, 0), (5.0, 0, 1)]


def test_step_points_keep_the_steps_drawn_and_the_end():
    # rows at 0 and 5 hold for no time (another row at the same time follows); 10 and 30 change
    # nothing; 40 ends the plot
    batsim = states(
        [(0.0, 4, 0), (0.0, 3, 1), (5.0, 2, 2), (5.0, 3, 1), (10.0, 3, 1), (20.0, 2, 2), (30.0, 2, 2), (40.0, 2, 2)]
    )
    kept = step_points(batsim, ["nb_idle", "nb_sleeping"])
    assert kept.select("time", "nb_idle", "nb_sleeping").rows() == [(0.0, 3, 1), (20.0, 2, 2), (40.0, 2, 2)]
    # the value held at every time is the same
    for time in (0.0, 3.0, 5.0, 10.0, 25.0, 35.0, 40.0):
        assert held(kept, time) == held(batsim, time)


def held(frame: pl.DataFrame, time: float) -> tuple:
    """The counts a step plot of ``frame`` shows at ``time``."""
    return frame.filter(pl.col("time") <= time).select("nb_idle", "nb_sleeping").row(-1)
