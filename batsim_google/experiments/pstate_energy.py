"""The machines' energy from Batsim's power-state changes, without Batsim's per-event sweep.

With ``-E``, Batsim sums every machine's consumed energy at every job event to write
``out_consumed_energy.csv``: O(machines) per event, most of a full-cell run's time. Our Batsim
patch's ``--disable-energy-tracing`` turns that file off and keeps ``out_pstate_changes.csv``,
from which the same energy follows exactly, host by host, as SimGrid's energy plugin integrates it:

- a host in a pstate and not computing draws that pstate's idle watts (``wattage_per_state``);
  the delay jobs of a workload never compute, so to SimGrid they leave their host idle (what
  their load adds is :mod:`.load_energy`'s, as with Batsim's own figure);
- Batsim records ``-2`` (switching off) or ``-1`` (switching on) when a switch is asked for, and
  the target pstate once every machine of the request has switched; each machine switches by
  computing 1 flop on one core in the switch's virtual pstate (``sleep_pstates``:
  sleep, switch-off, switch-on), so for 1 / speed seconds it draws that pstate's
  epsilon + (full - epsilon) / cores, then the target pstate's idle watts.

Batsim writes the times with six significant digits (``%g``), so past 10^5 s a change may be
placed up to 0.5 s off: a few joules a switch against the cell's megajoules a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.errors import InputFileError
from batsim_google.platform.simgrid_xml import PlatformHost, pstate_watts, sleep_pstates

#: Batsim's ``new_pstate`` for machines asked to switch on or off, before they reach the target.
SWITCHING_ON, SWITCHING_OFF = -1, -2


def read_pstate_changes(path: str | Path, machines: int) -> pl.DataFrame:
    """``out_pstate_changes.csv`` one row per machine and change: ``time``, ``machine``, ``pstate``,
    sorted by machine, then in file order (which is time order); refused when it names a machine
    beyond the platform's ``machines``."""
    try:
        frame = pl.read_csv(
            path, schema_overrides={"time": pl.Float64, "machine_id": pl.String, "new_pstate": pl.Int64}
        )
        bounds = pl.col("part").str.split("-")
        changes = (
            frame.with_columns(pl.col("machine_id").str.strip_chars().str.split(" ").alias("part"))
            .explode("part")
            .select(
                "time",
                pl.int_ranges(bounds.list.first().cast(pl.Int64), bounds.list.last().cast(pl.Int64) + 1).alias(
                    "machine"
                ),
                pl.col("new_pstate").alias("pstate"),
            )
            .explode("machine")
            .sort("machine", maintain_order=True)
        )
    except (pl.exceptions.PolarsError, OSError) as error:
        raise InputFileError(f"{path}: {error}") from error
    outside = changes.filter((pl.col("machine") < 0) | (pl.col("machine") >= machines))
    if outside.height:
        raise InputFileError(f"{path}: machine {outside['machine'][0]}, but the platform has {machines} compute hosts")
    return changes


def sleep_table(hosts: Sequence[PlatformHost]) -> np.ndarray:
    """(machines, 3): each host's sleep, switch-off and switch-on pstates; -1 without ``sleep_pstates``."""
    return np.array([sleep_pstates(host.properties) or (-1, -1, -1) for host in hosts], dtype=np.int64).reshape(-1, 3)


def _host_table(hosts: Sequence[PlatformHost]) -> dict[str, np.ndarray]:
    """Per machine (rows) and pstate (columns): idle, epsilon and full watts, speed; per machine:
    cores and the sleep, switch-off and switch-on pstates (-1 without ``sleep_pstates``)."""
    watts = [pstate_watts(host) for host in hosts]
    missing = next((host for host, table in zip(hosts, watts) if table is None), None)
    if missing is not None:
        raise InputFileError(f"host {missing.name}: no wattage_per_state, so no energy to compute")
    width = max((len(table) for table in watts), default=1)
    grid = np.full((len(hosts), width, 3), np.nan)
    speeds = np.full((len(hosts), width), np.nan)
    for machine, (host, table) in enumerate(zip(hosts, watts)):
        grid[machine, : len(table)] = table
        speeds[machine, : len(host.speeds)] = host.speeds[:width]
    sleeping = sleep_table(hosts)
    return {
        "idle": grid[:, :, 0],
        "epsilon": grid[:, :, 1],
        "full": grid[:, :, 2],
        "speed": speeds,
        "cores": np.array([host.cores for host in hosts], dtype=float),
        "sleep": sleeping,
    }


def power_segments(changes: pl.DataFrame, hosts: Sequence[PlatformHost], end: float) -> pl.DataFrame:
    """Each machine's power over time until ``end``: rows ``machine``, ``start``, ``stop``, ``watts``.
    ``changes``: :func:`read_pstate_changes`'s rows."""
    table = _host_table(hosts)
    machine = changes["machine"].to_numpy()
    time = changes["time"].to_numpy()
    state = changes["pstate"].to_numpy()
    last = np.append(machine[1:] != machine[:-1], True)  # the machine's last change
    following = np.where(last, end, np.append(time[1:], end))
    next_state = np.where(last, -1, np.append(state[1:], -1))
    steady = state >= 0
    switching = ~steady
    if switching.any():
        first = np.insert(machine[1:] != machine[:-1], 0, True)
        no_sleep = table["sleep"][machine, 0] < 0
        if (switching & (first | no_sleep)).any():
            bad = hosts[int(machine[switching & (first | no_sleep)][0])]
            raise InputFileError(f"host {bad.name} switches without sleep_pstates or a known pstate")
        unknown = switching & ~np.isin(state, (SWITCHING_ON, SWITCHING_OFF))
        if unknown.any():
            bad = hosts[int(machine[unknown][0])]
            raise InputFileError(f"host {bad.name}: unknown transition pstate {int(state[unknown][0])}")
    off = state == SWITCHING_OFF
    virtual = np.where(off, table["sleep"][machine, 1], table["sleep"][machine, 2])
    reached = np.where(next_state >= 0, next_state, np.where(off, table["sleep"][machine, 0], 0))
    rows = np.flatnonzero(switching)
    switch_end = np.minimum(time[rows] + 1.0 / table["speed"][machine[rows], virtual[rows]], following[rows])
    epsilon = table["epsilon"][machine[rows], virtual[rows]]
    full = table["full"][machine[rows], virtual[rows]]
    kept = np.flatnonzero(steady)
    frame = pl.DataFrame(
        {
            "machine": np.concatenate([machine[kept], machine[rows], machine[rows]]),
            "start": np.concatenate([time[kept], time[rows], switch_end]),
            "stop": np.concatenate([following[kept], switch_end, following[rows]]),
            "watts": np.concatenate(
                [
                    table["idle"][machine[kept], state[kept]],
                    epsilon + (full - epsilon) / table["cores"][machine[rows]],
                    table["idle"][machine[rows], reached[rows]],
                ]
            ),
        }
    )
    return frame.with_columns(pl.col("stop").clip(upper_bound=end), pl.col("start").clip(upper_bound=end))


def energy_records(segments: pl.DataFrame) -> pl.DataFrame:
    """Cumulative ``time``, ``energy`` (joules since 0) at each change of the total power, as
    Batsim's ``out_consumed_energy.csv`` reads (the energy is linear between two records)."""
    times = np.concatenate([segments["start"].to_numpy(), segments["stop"].to_numpy()])
    steps = np.concatenate([segments["watts"].to_numpy(), -segments["watts"].to_numpy()])
    order = np.argsort(times, kind="stable")
    times, steps = times[order], steps[order]
    instants, first = np.unique(times, return_index=True)
    power = np.cumsum(np.add.reduceat(steps, first)) if steps.size else np.zeros(0)
    energy = np.concatenate([[0.0], np.cumsum(power[:-1] * np.diff(instants))])
    return pl.DataFrame({"time": instants, "energy": energy})


def pstate_energy_records(path: str | Path, hosts: Sequence[PlatformHost], end: float) -> pl.DataFrame:
    """Cumulative energy records of a run from its ``out_pstate_changes.csv``, up to ``end``."""
    return energy_records(power_segments(read_pstate_changes(path, len(hosts)), hosts, end))
