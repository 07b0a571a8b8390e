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
from batsim_google.platform.simgrid_xml import PlatformHost, sleep_pstates

#: Batsim's ``new_pstate`` for machines asked to switch on or off, before they reach the target.
SWITCHING_ON, SWITCHING_OFF = -1, -2


def _watts(host: PlatformHost) -> np.ndarray:
    """(pstates, 3) idle, epsilon and full watts of each pstate ("idle:full" means epsilon = idle)."""
    value = host.properties.get("wattage_per_state")
    if not value:
        raise InputFileError(f"host {host.name}: no wattage_per_state, so no energy to compute")
    rows = []
    for state in value.split(","):
        watts = [float(part) for part in state.split(":")]
        rows.append([watts[0], watts[0], watts[1]] if len(watts) == 2 else watts[:3])
    return np.asarray(rows, dtype=float)


def machine_ids(text: str) -> list[int]:
    """The machines of a Batsim interval set written ``0-3 7 9-10``."""
    ids: list[int] = []
    for part in text.split():
        low, _, high = part.partition("-")
        ids.extend(range(int(low), int(high or low) + 1))
    return ids


def read_pstate_changes(path: str | Path) -> pl.DataFrame:
    """``out_pstate_changes.csv`` one row per machine and change: ``time``, ``machine``, ``pstate``
    (in file order, which is time order)."""
    try:
        frame = pl.read_csv(
            path, schema_overrides={"time": pl.Float64, "machine_id": pl.String, "new_pstate": pl.Int64}
        )
    except (pl.exceptions.PolarsError, OSError) as error:
        raise InputFileError(f"{path}: {error}") from error
    machines = [machine_ids(text) for text in frame["machine_id"]]
    counts = [len(ids) for ids in machines]
    return pl.DataFrame(
        {
            "time": np.repeat(frame["time"].to_numpy(), counts),
            "machine": np.fromiter((i for ids in machines for i in ids), dtype=np.int64, count=sum(counts)),
            "pstate": np.repeat(frame["new_pstate"].to_numpy(), counts),
        }
    )


def power_segments(changes: pl.DataFrame, hosts: Sequence[PlatformHost], end: float) -> pl.DataFrame:
    """Each machine's power over time until ``end``: rows ``machine``, ``start``, ``stop``, ``watts``."""
    segments: list[tuple[int, float, float, float]] = []
    watts = {}
    for machine, group in changes.sort("machine", maintain_order=True).group_by("machine", maintain_order=True):
        machine = int(machine[0])
        if not 0 <= machine < len(hosts):
            raise InputFileError(f"pstate changes name machine {machine}, the platform has {len(hosts)} compute hosts")
        host = hosts[machine]
        table = watts.setdefault(host.properties.get("wattage_per_state"), _watts(host))
        times, states = group["time"].to_list(), group["pstate"].to_list()
        current = None
        for index, (time, state) in enumerate(zip(times, states)):
            following = times[index + 1] if index + 1 < len(times) else end
            if state >= 0:
                current = state
                segments.append((machine, time, following, table[state, 0]))
                continue
            target = states[index + 1] if index + 1 < len(states) and states[index + 1] >= 0 else None
            virtual, target = _switch(host, current, state, target)
            switch_end = min(time + 1.0 / host.speeds[virtual], following)
            _, epsilon, full = table[virtual]
            segments.append((machine, time, switch_end, epsilon + (full - epsilon) / host.cores))
            segments.append((machine, switch_end, following, table[target, 0]))
            current = target
    frame = pl.DataFrame(segments, schema=["machine", "start", "stop", "watts"], orient="row")
    return frame.with_columns(pl.col("stop").clip(upper_bound=end), pl.col("start").clip(upper_bound=end))


def _switch(host: PlatformHost, current: int | None, direction: int, target: int | None) -> tuple[int, int]:
    """(virtual pstate computing the switch, pstate reached) for a switch of ``host``."""
    triple = sleep_pstates(host.properties)
    if triple is None or current is None:
        raise InputFileError(f"host {host.name} switches without sleep_pstates or a known pstate")
    sleep, off, on = triple
    if direction == SWITCHING_OFF:
        return off, sleep if target is None else target
    if direction == SWITCHING_ON:
        return on, 0 if target is None else target
    raise InputFileError(f"host {host.name}: unknown transition pstate {direction}")


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
    return energy_records(power_segments(read_pstate_changes(path), hosts, end))
