"""Derivation: how Borg placed bursts and preempted, from the trace's task_events parts.

Prints the figures behind the scheduler's passes and preemption defaults (docs/faithful-replay.md,
"Bursts"): the instants Borg's events come at and its passes' waits by their size (the fit of
``pass_tasks`` and ``pass_rate``, each hour left out in turn); which placements evicted (an
eviction on the same machine at the same millisecond), how long they waited against the others,
by the size of their job's burst, and the law of that delay (each hour left out); the share of
placements that preempt by the task's memory request, and by its job's burst per priority band
and hour (no one law of the burst holds); which tasks were evicted; how the big jobs' tasks
started; whether the machines' requests separate the placements that evicted; the free tier's
attempts never started and its waits after a mass eviction; priority 0's waits behind the
tasks above it, hour by hour, and a gate's fit (each hour left out); the victims' waits per
preempting job; each job's preemption wave's pace; whether the victims (their number, memory,
CPU, age), the lower priorities there or the job's wave say how long an evicting placement waits
(each hour left out), and on whose machines the slow waves ran.

    uv run python -m bench.borg_bursts [--trace ../shared/data/google-2011] [--hours 4]

With ``--replays DIR ...`` (``validate-replay -o DIR`` folders), it prints instead each window's
largest job (the most tasks submitted in the window, on the real side) and its median wait, real
and simulated.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

from batsim_google.trace.schema import MICROSECONDS, TIME_OFFSET_S, TaskEvent

COLUMNS = [
    "time",
    "missing",
    "job",
    "index",
    "machine",
    "type",
    "user",
    "class",
    "priority",
    "cpu",
    "memory",
    "disk",
    "other",
]
ENDS = [TaskEvent.EVICT, TaskEvent.FAIL, TaskEvent.FINISH, TaskEvent.KILL, TaskEvent.LOST]
MEMORY_BINS = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1]
BIG_JOBS = [6251812952, 6252358260, 6251625636, 6252326772, 6251784940, 6252469765]


def events(trace: Path) -> pl.DataFrame:
    """The task events of every part, times in seconds from the trace's start (t = 0)."""
    parts = sorted((trace / "task_events").glob("part-*.csv.gz"))
    frame = pl.concat(pl.read_csv(part, has_header=False, new_columns=COLUMNS, infer_schema_length=0) for part in parts)
    frame = frame.select(
        (pl.col("time").cast(pl.Int64) / MICROSECONDS - TIME_OFFSET_S).alias("t"),
        *(pl.col(name).cast(pl.Int64, strict=False) for name in ("job", "index", "machine", "type", "priority")),
        *(pl.col(name).cast(pl.Float64, strict=False) for name in ("cpu", "memory")),
    )
    requests = [pl.col(name).fill_null(strategy="forward").over(["job", "index"]) for name in ("cpu", "memory")]
    return frame.with_row_index("row").sort(["job", "index", "t", "row"]).with_columns(requests)


def stays(frame: pl.DataFrame) -> pl.DataFrame:
    """Each SCHEDULE with the event that ended it (null while running at the input's end)."""
    ended = frame.filter(pl.col("type").is_in([TaskEvent.SCHEDULE, *ENDS])).with_columns(
        pl.col("type").shift(-1).over(["job", "index"]).alias("next_type"),
        pl.col("t").shift(-1).over(["job", "index"]).alias("next_t"),
    )
    ends = pl.col("next_type").is_in(list(ENDS))
    return ended.filter(pl.col("type") == TaskEvent.SCHEDULE).select(
        "job",
        "index",
        "machine",
        "priority",
        "cpu",
        "memory",
        pl.col("t").alias("start"),
        pl.when(ends).then(pl.col("next_t")).otherwise(float("inf")).alias("end"),
        pl.when(ends).then(pl.col("next_type")).alias("end_type"),
    )


def millisecond(column: str) -> pl.Expr:
    return (pl.col(column) * 1000).round().cast(pl.Int64).alias("ms")


def placements(frame: pl.DataFrame, stay: pl.DataFrame) -> pl.DataFrame:
    """Placements after t = 0 with their wait (from the attempt's submission) and the evictions on
    their machine at the same millisecond (``evicted``)."""
    evictions = (
        stay.filter(pl.col("end_type") == TaskEvent.EVICT)
        .with_columns(millisecond("end"))
        .group_by(["machine", "ms"])
        .agg(pl.len().alias("evicted"))
    )
    placed = stay.filter(pl.col("start") > 0).with_columns(millisecond("start"))
    placed = placed.join(evictions, on=["machine", "ms"], how="left").with_columns(pl.col("evicted").fill_null(0))
    submits = frame.filter(pl.col("type") == TaskEvent.SUBMIT).select("job", "index", pl.col("t").alias("submit"))
    burst = submits.group_by(["job", pl.col("submit").round(0).alias("second")]).agg(pl.len().alias("burst"))
    waits = (
        placed.join(submits, on=["job", "index"])
        .filter(pl.col("submit") <= pl.col("start"))
        .group_by(["job", "index", "start"])
        .agg(pl.col("submit").max())
        .with_columns(pl.col("submit").round(0).alias("second"))
        .join(burst, on=["job", "second"], how="left")
    )
    return placed.join(waits, on=["job", "index", "start"], how="left").with_columns(
        (pl.col("start") - pl.col("submit")).alias("wait")
    )


def percentiles(values, points=(10, 25, 50, 75, 90)) -> str:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return " / ".join(f"{v:.1f}" for v in np.percentile(values, points)) if values.size else "-"


def report_waits(placed: pl.DataFrame, stay: pl.DataFrame) -> None:
    evicting = placed.filter(pl.col("evicted") > 0)
    at_placement = evicting.unique(["machine", "ms"])["evicted"].sum()
    total = stay.filter((pl.col("end_type") == TaskEvent.EVICT) & (pl.col("end") > 0)).height
    print(f"placements after t = 0: {placed.height:,}; evicting at their instant: {evicting.height:,}")
    print(f"evictions at a placement's instant on their machine: {at_placement:,} of {total:,}")
    print("wait (s) from submission, percentiles 10 / 25 / 50 / 75 / 90:")
    print(f"  placements evicting nothing     : {percentiles(placed.filter(pl.col('evicted') == 0)['wait'])}")
    for low, high, name in [(1, 99, "1-99"), (100, 999, "100-999"), (1000, 10**9, "1,000+")]:
        group = evicting.filter(pl.col("burst").is_between(low, high))
        print(f"  evicting, bursts of {name:<12}: {percentiles(group['wait'])} ({group.height:,})")
    print(f"  evicting, all                   : {percentiles(evicting['wait'])} ({evicting.height:,})")
    for low, high, name in [(1, 1, "priority 1"), (2, 8, "priorities 2-8"), (9, 9, "priority 9")]:
        band = evicting.filter(pl.col("priority").is_between(low, high) & (pl.col("start") < 4 * 3600))
        print(f"  evicting, {name:<22}: {percentiles(band['wait'])} ({band.height:,}, hours 0 to 3)")


def report_memory(placed: pl.DataFrame, hours: int) -> None:
    placed = placed.filter(pl.col("start") < hours * 3600)
    edges = [0.0, *MEMORY_BINS, np.inf]
    labels = [f"{low:g}-{high:g}" for low, high in zip(edges[:-1], edges[1:], strict=True)]
    bins = np.searchsorted(MEMORY_BINS, placed["memory"].fill_null(0.0).to_numpy(), side="left")
    binned = placed.with_columns(
        pl.Series("memory asked", [labels[b] for b in bins]),
        (pl.col("start") // 3600).cast(pl.Int64).alias("hour"),
        (pl.col("evicted") > 0).alias("preempts"),
    )
    table = binned.group_by("memory asked").agg(pl.len().alias("placements"), pl.col("preempts").mean())
    by_hour = (
        binned.sort("hour")
        .group_by(["memory asked", "hour"], maintain_order=True)
        .agg(pl.col("preempts").mean())
        .pivot(on="hour", index="memory asked")
    )
    print(f"share of placements that evict, by memory asked (hours 0 to {hours - 1}, then per hour):")
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, float_precision=3):
        order = pl.DataFrame({"memory asked": labels})
        print(order.join(table.join(by_hour, on="memory asked"), on="memory asked", how="left", maintain_order="left"))
    large = binned.filter(pl.col("memory") > 0.05)
    print(f"above 0.05 of memory: {large['preempts'].mean():.3f} of {large.height:,} placements; by their job's burst:")
    for low, high, name in [(1, 1, "alone"), (2, 99, "2-99"), (100, 999, "100-999"), (1000, 10**9, "1,000+")]:
        for size, group in (("above 0.05", large), ("at most 0.05", binned.filter(pl.col("memory") <= 0.05))):
            burst = group.filter(pl.col("burst").is_between(low, high))
            print(f"  {name:<8} {size:<13}: {burst['preempts'].mean() or 0:.3f} of {burst.height:,}")


BURSTS = [(1, 1, "1"), (2, 9, "2-9"), (10, 99, "10-99"), (100, 999, "100-999"), (1000, 10**9, "1,000+")]
BANDS = [(1, 1, "1 (free)"), (2, 8, "2-8"), (9, 11, "9-11")]


def report_burst_law(placed: pl.DataFrame, hours: int) -> None:
    """The share of placements that evict by their job's burst (its tasks submitted within the
    same second), per priority band and per hour: whether one law of the burst holds across them."""
    placed = placed.filter((pl.col("start") < hours * 3600) & (pl.col("priority") >= 1) & pl.col("burst").is_not_null())
    placed = placed.with_columns(
        (pl.col("evicted") > 0).alias("preempts"), (pl.col("start") // 3600).cast(pl.Int64).alias("hour")
    )

    def cell(rows: pl.DataFrame) -> str:
        return f"{rows['preempts'].mean():6.1%} of {rows.height:>6,}" if rows.height else f"{'-':>16}"

    print(f"share of placements (priority 1 and above) that evict, by their job's burst; hours 0 to {hours - 1}:")
    print(
        f"  {'burst':<8} {'all':>16} "
        + " ".join(f"{name:>16}" for *_, name in BANDS)
        + " | per hour: "
        + ", ".join(str(h) for h in range(hours))
    )
    for low, high, name in BURSTS:
        rows = placed.filter(pl.col("burst").is_between(low, high))
        bands = " ".join(cell(rows.filter(pl.col("priority").is_between(a, b))) for a, b, _ in BANDS)
        hourly = ", ".join(f"{rows.filter(pl.col('hour') == h)['preempts'].mean() or 0:.1%}" for h in range(hours))
        print(f"  {name:<8} {cell(rows)} {bands} | {hourly}")
    print("  per hour and band (bursts 1-99 / 100+):")
    for a, b, band in BANDS:
        rows = placed.filter(pl.col("priority").is_between(a, b))
        cells = ", ".join(
            f"{cell(rows.filter((pl.col('hour') == h) & (pl.col('burst') < 100)))} / {cell(rows.filter((pl.col('hour') == h) & (pl.col('burst') >= 100)))}"
            for h in range(hours)
        )
        print(f"    {band:<9}: {cells}")
    jobs = (
        placed.filter(pl.col("burst") >= 100)
        .group_by(["job", "priority"])
        .agg(pl.len().alias("placements"), pl.col("preempts").mean().alias("share"), pl.col("hour").min())
    )
    print("  jobs with bursts of 100+ tasks, by the share of their placements that evict (jobs, placements):")
    for a, b, band in BANDS:
        rows = jobs.filter(pl.col("priority").is_between(a, b))
        cells = ", ".join(
            f"{name} {part.height} ({part['placements'].sum():,})"
            for name, part in (
                ("under 10 %", rows.filter(pl.col("share") < 0.1)),
                ("10-90 %", rows.filter(pl.col("share").is_between(0.1, 0.9))),
                ("over 90 %", rows.filter(pl.col("share") > 0.9)),
            )
        )
        print(f"    {band:<9}: {cells}")


def report_victims(placed: pl.DataFrame, stay: pl.DataFrame) -> None:
    evicting = (
        placed.filter(pl.col("evicted") > 0)
        .group_by(["machine", "ms"])
        .agg(pl.col("priority").max().alias("placed"), pl.col("start").first())
    )
    running = stay.select("machine", pl.col("priority").alias("p"), pl.col("start").alias("since"), "end", "end_type")
    candidates = evicting.join(running, on="machine").filter(
        (pl.col("since") < pl.col("start") - 1e-4)
        & (pl.col("end") >= pl.col("start") - 1e-4)
        & (pl.col("p") < pl.col("placed"))
    )
    candidates = candidates.with_columns(
        ((pl.col("end_type") == TaskEvent.EVICT) & ((pl.col("end") - pl.col("start")).abs() < 2e-3)).alias("gone")
    )
    per = candidates.group_by(["machine", "ms"]).agg(pl.len().alias("candidates"), pl.col("gone").sum().alias("gone"))
    print(
        f"evicting placements: {per.height:,}; candidates (lower priorities there) median {per['candidates'].median():.0f}, "
        f"evicted median {per['gone'].median():.0f}, mean {per['gone'].mean():.2f}; all evicted in {(per['candidates'] == per['gone']).mean():.1%}"
    )
    choice = candidates.join(per, on=["machine", "ms"]).filter(
        (pl.col("gone_right") > 0) & (pl.col("gone_right") < pl.col("candidates"))
    )
    choice = choice.with_columns(
        pl.col("since").rank("ordinal", descending=True).over(["machine", "ms"]).alias("youth")
    )
    gone = choice.filter(pl.col("gone"))
    print(
        f"  where some were kept: evicted among the youngest {(gone['youth'] <= gone['gone_right']).mean():.1%}, "
        f"by chance {(gone['gone_right'] / gone['candidates']).mean():.1%}"
    )
    mixed = (
        choice.group_by(["machine", "ms"])
        .agg(
            pl.col("p").filter(pl.col("gone")).max().alias("evicted_top"),
            pl.col("p").filter(~pl.col("gone")).min().alias("kept_bottom"),
            pl.col("p").n_unique().alias("levels"),
        )
        .filter(pl.col("levels") > 1)
    )
    print(
        f"  with several priorities there: the lowest went first in {(mixed['evicted_top'] <= mixed['kept_bottom']).mean():.1%} of {mixed.height:,}"
    )


def report_priorities(placed: pl.DataFrame, hours: int) -> None:
    """Which priorities' placements preempt: the free tier's priority 1 preempts priority 0."""
    placed = placed.filter(pl.col("start") < hours * 3600).with_columns(
        (pl.col("evicted") > 0).alias("preempts"), (pl.col("start") // 3600).cast(pl.Int64).alias("hour")
    )
    print(
        f"placements that evict, by the placed task's priority, per hour 0 to {hours - 1}: share (evictions at their instants)"
    )
    for name, rows in (
        ("0", placed.filter(pl.col("priority") == 0)),
        ("1", placed.filter(pl.col("priority") == 1)),
        ("2-11", placed.filter(pl.col("priority") >= 2)),
    ):
        instants = (
            rows.filter(pl.col("preempts")).unique(["machine", "ms"]).group_by("hour").agg(pl.col("evicted").sum())
        )
        per_hour = (
            rows.group_by("hour")
            .agg(pl.len(), pl.col("preempts").mean())
            .join(instants, on="hour", how="left")
            .fill_null(0)
            .sort("hour")
        )
        cells = ", ".join(f"{share:.1%} of {n:,} ({ev:,})" for _, n, share, ev in per_hour.iter_rows())
        print(f"  priority {name:<5}: {cells}")
    above = placed.filter((pl.col("priority") >= 2) & (pl.col("memory") > 0.05))
    print(f"  above the free tier and 0.05 of memory: {above['preempts'].mean():.3f} of {above.height:,} placements")


def report_priority_pairs(placed: pl.DataFrame, stay: pl.DataFrame, hours: int) -> None:
    """Which priorities evicted which, at their placements' instants: the pairs the scheduler's
    preemption rules need."""
    evicted = (
        stay.filter(pl.col("end_type") == TaskEvent.EVICT)
        .with_columns(millisecond("end"))
        .select("machine", "ms", pl.col("priority").alias("victim"))
    )
    instants = (
        placed.filter((pl.col("start") < hours * 3600) & (pl.col("evicted") > 0))
        .group_by(["machine", "ms"])
        .agg(pl.col("priority").max().alias("placed"))
    )
    pairs = instants.join(evicted, on=["machine", "ms"]).group_by(["placed", "victim"]).len().sort(["placed", "victim"])
    print(f"evictions at placements' instants by (placed priority -> evicted priority), hours 0 to {hours - 1}:")
    print("  " + ", ".join(f"{a} -> {b}: {n:,}" for a, b, n in pairs.rows()))


def report_free_tier_preemption(placed: pl.DataFrame, stay: pl.DataFrame, frame: pl.DataFrame, hours: int) -> None:
    """Priority 1 preempting priority 0 inside the free tier: the share of priority-1 placements
    beside priority-0 tasks that evicted them, per hour and pooled (the scheduler's default), the
    victims, and per job: whether the job's size, its shape or the cell's room says which preempt."""
    top = placed.filter((pl.col("start") < hours * 3600) & (pl.col("priority") == 1))
    running = stay.filter(pl.col("priority") == 0).select(
        "machine", pl.col("start").alias("since"), "end", "end_type", pl.col("memory").alias("m")
    )
    beside = (
        top.select("job", "index", "machine", "start", "memory", "cpu", "burst")
        .join(running, on="machine")
        .filter((pl.col("since") < pl.col("start") - 1e-4) & (pl.col("end") >= pl.col("start") - 1e-3))
        .with_columns(
            ((pl.col("end_type") == TaskEvent.EVICT) & ((pl.col("end") - pl.col("start")).abs() < 2e-3)).alias("gone")
        )
        .group_by(["job", "index", "start"])
        .agg(
            pl.len().alias("lower"),
            pl.col("gone").sum(),
            pl.col("m").filter(pl.col("gone")).sum().alias("freed"),
            pl.col("memory", "cpu", "burst").first(),
        )
        .with_columns((pl.col("gone") > 0).alias("preempts"), (pl.col("start") // 3600).cast(pl.Int64).alias("hour"))
    )
    hourly = beside.group_by("hour").agg(pl.len(), pl.col("preempts").mean()).sort("hour")
    print(
        f"priority-1 placements beside priority-0 tasks: {beside.height:,} of {top.height:,}; evicting them, per hour: "
        + ", ".join(f"{share:.1%} of {n:,}" for _, n, share in hourly.rows())
        + f"; pooled {beside['preempts'].mean():.3f}"
    )
    evicting = beside.filter(pl.col("preempts"))
    instants = (
        top.filter(pl.col("evicted") > 0)
        .group_by(["machine", "ms"])
        .agg(pl.col("memory").sum().alias("asked"), pl.col("start").first())
        .join(running, on="machine")
        .filter(
            (pl.col("since") < pl.col("start") - 1e-4)
            & (pl.col("end_type") == TaskEvent.EVICT)
            & ((pl.col("end") - pl.col("start")).abs() < 2e-3)
        )
        .group_by(["machine", "ms"])
        .agg(pl.col("m").sum().alias("freed"), pl.col("asked").first())
    )
    print(
        f"  victims per evicting placement: mean {evicting['gone'].mean():.2f}, median {evicting['gone'].median():.0f} "
        f"of {evicting['lower'].median():.0f} there; memory freed / asked median {(evicting['freed'] / evicting['memory']).median():.2f}, "
        f"per machine and instant {(instants['freed'] / instants['asked']).median():.2f} ({instants.height:,})"
    )
    print("  by the task's burst (its job's tasks submitted within the same second) and request, per hour 0 to 3:")
    for name, rows in (
        ("alone", beside.filter(pl.col("burst") == 1)),
        ("burst, memory > CPU", beside.filter((pl.col("burst") > 1) & (pl.col("memory") > pl.col("cpu")))),
        ("burst, memory <= CPU", beside.filter((pl.col("burst") > 1) & (pl.col("memory") <= pl.col("cpu")))),
    ):
        per_hour = rows.group_by("hour").agg(pl.len(), pl.col("preempts").mean()).sort("hour")
        cells = ", ".join(f"{share:.1%} of {n:,}" for _, n, share in per_hour.rows())
        print(
            f"    {name:<21}: {rows['preempts'].mean():.3f} of {rows.height:,} ({rows['job'].n_unique():,} jobs); {cells}"
        )
    jobs = (
        beside.filter(pl.col("burst") >= 100)
        .group_by("job")
        .agg(
            pl.len().alias("placements"),
            pl.col("preempts").mean().alias("share"),
            pl.col("cpu", "memory").median(),
            pl.col("start").min().alias("first start"),
        )
        .sort("first start")
    )
    submitted = frame.filter(pl.col("type") == TaskEvent.SUBMIT).group_by("job").agg(pl.col("t").min().alias("at"))
    print("  its jobs with a burst of 100+ tasks (placements, share evicting, CPU / memory asked; the cell's")
    print("  requests running at its submission, CPU / memory, priority 0 | 1 | 2+):")
    for job, count, share, cpu, memory, _ in jobs.rows():
        at = submitted.filter(pl.col("job") == job)["at"][0]
        live = stay.filter((pl.col("start") <= at) & (pl.col("end") > at))
        bands = [
            live.filter(band) for band in (pl.col("priority") == 0, pl.col("priority") == 1, pl.col("priority") >= 2)
        ]
        loads = " | ".join(f"{b['cpu'].sum():,.0f} / {b['memory'].sum():,.0f}" for b in bands)
        print(f"    {job} at {at:,.0f} s: {count:,}, {share:.1%}, {cpu:.4f} / {memory:.4f}; {loads}")


def report_pass_time(placed: pl.DataFrame, hours: int) -> None:
    """Whether Borg placed a burst at a finite rate: the waits of bursts that evicted nothing, by
    their size, and how long each took from its first start to its last."""
    calm = placed.filter((pl.col("start") < hours * 3600) & (pl.col("evicted") == 0) & pl.col("burst").is_not_null())
    bursts = (
        calm.group_by(["job", "second"])
        .agg(
            pl.len().alias("placed"),
            pl.col("burst").first(),
            pl.col("wait").median().alias("median"),
            (pl.col("start").max() - pl.col("start").min()).alias("spread"),
        )
        .filter(pl.col("placed") >= 0.8 * pl.col("burst"))
    )
    print("bursts that evicted nothing (80 % of their tasks placed): median wait, then start spread (s), by size:")
    for low, high, name in [(1, 1, "1"), (2, 99, "2-99"), (100, 999, "100-999"), (1000, 10**9, "1,000+")]:
        rows = bursts.filter(pl.col("burst").is_between(low, high))
        print(
            f"  {name:<8}: {rows.height:,} bursts, median waits {percentiles(rows['median'], (10, 50, 90))}; "
            f"spread {percentiles(rows['spread'], (50, 90))}"
        )
    large = bursts.filter(pl.col("burst") >= 20)
    slope = np.corrcoef(np.log(large["burst"].to_numpy()), large["median"].to_numpy())[0, 1]
    print(f"  bursts of 20+: correlation of log size and median wait {slope:.2f} ({large.height:,} bursts)")


def report_big_jobs(placed: pl.DataFrame) -> None:
    print("big jobs: tasks, memory asked; those started within 15 s of the submission, then the others:")
    for job in BIG_JOBS:
        tasks = placed.filter((pl.col("job") == job) & pl.col("wait").is_not_null())
        if tasks.is_empty():
            continue
        first = tasks["submit"].min()
        burst = tasks.filter(pl.col("submit") < first + 2)
        early = burst.filter(pl.col("wait") < 15)
        late = burst.filter(pl.col("wait") >= 15)
        print(
            f"  {job}: {burst.height:,} tasks at {first:,.0f} s, memory {burst['memory'].median():.4f}; "
            f"{early.height:,} at {percentiles(early['wait'], (50,))} s ({(early['evicted'] > 0).mean():.0%} evicting); "
            f"{late.height:,} at {percentiles(late['wait'], (10, 50, 90))} s ({(late['evicted'] > 0).mean():.0%} evicting)"
            if late.height
            else f"  {job}: {burst.height:,} tasks at {first:,.0f} s, memory {burst['memory'].median():.4f}; all at {percentiles(early['wait'], (50,))} s"
        )


def report_requests(placed: pl.DataFrame, stay: pl.DataFrame) -> None:
    """Whether a machine's requests with the new task passed what it held at placements that
    evicted nothing: the limit a request-based preemption would need."""
    running = stay.select(
        "machine",
        pl.col("start").alias("since"),
        "end",
        "end_type",
        pl.col("cpu").alias("c"),
        pl.col("memory").alias("m"),
    )
    sample = placed.filter(pl.col("start") < 4 * 3600).select("machine", "ms", "start", "cpu", "memory", "evicted")
    held = (
        sample.join(running, on="machine")
        .filter(
            (pl.col("since") < pl.col("start"))
            & (
                (pl.col("end") > pl.col("start"))
                | ((pl.col("end_type") == TaskEvent.EVICT) & (pl.col("end") >= pl.col("start") - 1e-3))
            )
        )
        .group_by(["machine", "ms"])
        .agg(pl.col("c").sum().alias("held_cpu"), pl.col("m").sum().alias("held_memory"))
    )
    sample = (
        sample.join(held, on=["machine", "ms"], how="left")
        .fill_null(0.0)
        .with_columns(
            (pl.col("held_cpu") + pl.col("cpu")).alias("with_cpu"),
            (pl.col("held_memory") + pl.col("memory")).alias("with_memory"),
        )
    )
    quiet = (
        sample.filter(pl.col("evicted") == 0)
        .group_by("machine")
        .agg(pl.col("with_cpu").max().alias("cpu_max"), pl.col("with_memory").max().alias("memory_max"))
    )
    evicting = sample.filter(pl.col("evicted") > 0).join(quiet, on="machine")
    past = (evicting["with_cpu"] > evicting["cpu_max"]) | (evicting["with_memory"] > evicting["memory_max"])
    print(
        f"evicting placements whose machine, with the task, passed what it held at its placements evicting nothing: "
        f"{past.mean():.1%} of {evicting.height:,} (CPU {(evicting['with_cpu'] > evicting['cpu_max']).mean():.1%}, "
        f"memory {(evicting['with_memory'] > evicting['memory_max']).mean():.1%})"
    )


def submissions(frame: pl.DataFrame, hours: int) -> pl.DataFrame:
    """Attempts submitted in hours 0 to ``hours`` - 1 with their wait (null if the input never
    schedules them), their next event and their priority group."""
    lifecycle = frame.filter(pl.col("type").is_in([TaskEvent.SUBMIT, TaskEvent.SCHEDULE, *ENDS])).with_columns(
        pl.col("type").shift(-1).over(["job", "index"]).alias("next_type"),
        pl.col("t").shift(-1).over(["job", "index"]).alias("next_t"),
        pl.col("type").shift(1).over(["job", "index"]).alias("previous_type"),
    )
    submitted = lifecycle.filter(
        (pl.col("type") == TaskEvent.SUBMIT) & pl.col("t").is_between(0, hours * 3600, closed="left")
    )
    return submitted.with_columns(
        (pl.col("previous_type") == TaskEvent.EVICT).fill_null(False).alias("after_eviction"),
        pl.when(pl.col("next_type") == TaskEvent.SCHEDULE).then(pl.col("next_t") - pl.col("t")).alias("wait"),
        pl.when(pl.col("priority") <= 1).then(pl.lit("free")).otherwise(pl.lit("other")).alias("group"),
    )


def report_free_tier(frame: pl.DataFrame, hours: int) -> None:
    """The free tier's attempts never started, and its waits after a mass eviction."""
    submitted = submissions(frame, hours)
    free = submitted.filter(pl.col("group") == "free")
    never = free.filter(pl.col("wait").is_null() & (pl.col("next_type").fill_null(-1) != TaskEvent.KILL))
    top = never.group_by("job").len().sort("len", descending=True)
    print(
        f"free-tier attempts submitted in hours 0 to {hours - 1}: {free.height:,}; never scheduled in the input "
        f"(nor killed pending): {never.height:,}, of {top.height} jobs, {top['len'][0]:,} of job {top['job'][0]}; "
        f"waiting over 600 s: {(free['wait'] > 600).sum():,}"
    )
    hour = (pl.col("t") // 3600).cast(pl.Int64)
    for name, rows in (
        ("after an eviction", free.filter(pl.col("after_eviction"))),
        ("the others", free.filter(~pl.col("after_eviction"))),
    ):
        medians = ", ".join(f"{rows.filter(hour == h)['wait'].median():.1f}" for h in range(hours))
        print(f"  free-tier submissions {name}: {rows.height:,}, median wait per hour {medians} s")
    minutes = (
        frame.filter((pl.col("type") == TaskEvent.EVICT) & (pl.col("t") > 0))
        .group_by((pl.col("t") // 60).cast(pl.Int64).alias("minute"))
        .len()
        .filter(pl.col("len") > 500)
        .sort("minute")
    )
    print("minutes of more than 500 evictions:", ", ".join(f"{m} ({n:,})" for m, n in minutes.rows()))
    after = {minute + lag for minute in minutes["minute"] for lag in range(3)}
    near = pl.col("t").floordiv(60).cast(pl.Int64).is_in(list(after))
    for name, group in (("within 3 min of one", free.filter(near)), ("the others", free.filter(~near))):
        print(
            f"  free-tier submissions {name}: {group.height:,}, wait 50th / 90th percentile "
            f"{percentiles(group['wait'], (50, 90))} s, started within 60 s {(group['wait'] <= 60).sum() / group.height:.1%}"
        )


TICK_GAP_S = 0.1


def ticks(frame: pl.DataFrame) -> np.ndarray:
    """The start of each of the trace's instants: its events (after t = 0) come in clusters a few
    hundredths of a second long, separated by more than TICK_GAP_S."""
    times = np.sort(frame.filter(pl.col("t") > 0)["t"].to_numpy())
    return times[np.r_[0, np.nonzero(np.diff(times) > TICK_GAP_S)[0] + 1]]


def passes(frame: pl.DataFrame, starts: np.ndarray) -> pl.DataFrame:
    """Per instant with submissions (a pass): the tasks (re)submitted at it, and the wait of the
    first of them placed (its first wave) and their median wait."""

    def instant(times: pl.Series) -> pl.Series:
        return pl.Series(np.searchsorted(starts, times.to_numpy() + TICK_GAP_S, side="right") - 1)

    lifecycle = frame.filter(pl.col("type").is_in([TaskEvent.SUBMIT, TaskEvent.SCHEDULE, *ENDS])).with_columns(
        pl.col("type").shift(-1).over(["job", "index"]).alias("next_type"),
        pl.col("t").shift(-1).over(["job", "index"]).alias("next_t"),
    )
    submitted = lifecycle.filter((pl.col("type") == TaskEvent.SUBMIT) & (pl.col("t") > 0))
    submitted = submitted.with_columns(
        instant(submitted["t"]).alias("tick"),
        pl.when(pl.col("next_type") == TaskEvent.SCHEDULE).then(pl.col("next_t") - pl.col("t")).alias("wait"),
        pl.when(pl.col("next_type") == TaskEvent.SCHEDULE).then(pl.col("next_t")).alias("placed_at"),
    )
    submitted = submitted.with_columns(
        (instant(submitted["placed_at"].fill_null(-1.0)) - pl.col("tick")).alias("placed_after")
    )
    return (
        submitted.group_by("tick")
        .agg(
            pl.col("placed_after").filter(pl.col("wait") == pl.col("wait").min()).first(),
            pl.len().alias("tasks"),
            pl.col("wait").min().alias("first"),
            pl.col("wait").median().alias("median"),
            pl.col("t").min().alias("at"),
        )
        .filter(pl.col("first").is_not_null())
    )


def pass_fit(table: pl.DataFrame, base: float) -> tuple[float, float, float, float]:
    """The pass size ``n0`` and rate ``r`` (tasks/s) of first-wave waits ``base + max(0, n - n0) / r``
    nearest (least absolute deviations, on a grid) to the passes of 100 tasks or more; with the
    mean absolute deviation, and that of ``base`` alone."""
    big = table.filter(pl.col("tasks") >= 100)
    tasks, first = big["tasks"].to_numpy().astype(float), big["first"].to_numpy()
    best = (np.inf, 0.0, 0.0)
    for size in np.arange(0, 3001, 50.0):
        for per_task in np.arange(0, 0.005, 0.00002):
            loss = np.abs(first - base - np.maximum(0.0, tasks - size) * per_task).mean()
            if loss < best[0]:
                best = (loss, size, per_task)
    loss, size, per_task = best
    return size, 1 / per_task if per_task else np.inf, loss, np.abs(first - base).mean()


def report_passes(frame: pl.DataFrame) -> None:
    """Whether Borg schedules in passes: its events come at instants, a task is placed at the
    second instant after its submission's, a pass's tasks together, later the more it holds."""
    starts = ticks(frame)
    gaps = np.diff(starts)
    schedules = frame.filter((pl.col("type") == TaskEvent.SCHEDULE) & (pl.col("t") > 0))
    instants = np.unique(np.searchsorted(starts, schedules["t"].to_numpy() + TICK_GAP_S, side="right") - 1)
    print(
        f"the trace's events after t = 0 come at {starts.size:,} instants (clusters apart by more than {TICK_GAP_S} s); "
        f"between instants, percentiles 10 / 50 / 90: {percentiles(gaps, (10, 50, 90))} s (to 0.01: "
        + " / ".join(f"{v:.2f}" for v in np.percentile(gaps, (10, 50, 90)))
        + f"); {instants.size:,} hold its {schedules.height:,} SCHEDULEs"
    )
    table = passes(frame, starts)
    later = table["placed_after"].drop_nulls().to_numpy()
    print(
        "  instants from a submission's to its task's first placement: "
        + ", ".join(f"{k}: {(later == k).mean():.1%}" for k in range(5))
        + f", more: {(later > 4).mean():.1%} (the passes' first waves)"
    )
    print("passes (the tasks (re)submitted at one instant): first-wave wait, percentiles 25 / 50 / 75, by tasks:")
    edges = [1, 2, 10, 100, 300, 1000, 1500, 2000, 3000, 10**6]
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        rows = table.filter(pl.col("tasks").is_between(low, high - 1))
        if rows.height:
            print(f"  {low:>5,}-{high - 1:<7,}: {rows.height:>6,} passes, {percentiles(rows['first'], (25, 50, 75))} s")
    base = float(table.filter(pl.col("tasks") < 100)["first"].median())
    size, rate, loss, flat = pass_fit(table, base)
    print(
        f"  first-wave wait = {base:.2f} s + max(0, tasks - n0) / r, fitted on the {table.filter(pl.col('tasks') >= 100).height} "
        f"passes of 100+ tasks (all hours): n0 = {size:,.0f} tasks, r = {rate:,.0f} tasks/s (mean absolute deviation {loss:.2f} s; {flat:.2f} s for {base:.2f} s alone)"
    )
    large = table.filter(pl.col("tasks") >= 2000).sort("at")
    print(
        "  passes of 2,000+ tasks (at, tasks: first-wave wait, the fit): "
        + "; ".join(
            f"{at:,.0f} s, {tasks:,}: {first:.2f} / {base + max(0.0, tasks - size) / rate:.2f} s"
            for at, tasks, first in large.select("at", "tasks", "first").rows()
        )
    )
    thousands = table.filter(pl.col("tasks") >= 1000)
    model = base + np.maximum(0.0, thousands["tasks"].to_numpy() - size) / rate
    print(
        f"  on the {thousands.height} passes of 1,000+ tasks: mean |error| {np.abs(thousands['first'].to_numpy() - model).mean():.2f} s, "
        f"{np.abs(thousands['first'].to_numpy() - base).mean():.2f} s for {base:.2f} s alone"
    )
    print("  each hour left out (fitted on the others; mean |error| on its passes of 1,000+ tasks, fit / base alone):")
    hour = (pl.col("at") // 3600).cast(pl.Int64)
    for left_out in range(int(table["at"].max() // 3600) + 1):
        others_size, others_rate, _, _ = pass_fit(table.filter(hour != left_out), base)
        rows = thousands.filter(hour == left_out)
        model = base + np.maximum(0.0, rows["tasks"].to_numpy() - others_size) / others_rate
        print(
            f"    hour {left_out}: n0 = {others_size:,.0f}, r = {others_rate:,.0f} tasks/s; its {rows.height} passes: "
            f"{np.abs(rows['first'].to_numpy() - model).mean():.2f} / {np.abs(rows['first'].to_numpy() - base).mean():.2f} s"
        )


def report_behind_higher(frame: pl.DataFrame) -> None:
    """Whether priority 0 waits behind the tasks above it that wait: its submissions' waits by the
    tasks of priority 1 or more pending for over 5 s at its submission, and the victims of hour 3's
    mass eviction placed together once the jobs that preempted them had started."""
    lifecycle = frame.filter(pl.col("type").is_in([TaskEvent.SUBMIT, TaskEvent.SCHEDULE, *ENDS])).with_columns(
        pl.col("type").shift(-1).over(["job", "index"]).alias("next_type"),
        pl.col("t").shift(-1).over(["job", "index"]).alias("next_t"),
        pl.col("type").shift(1).over(["job", "index"]).alias("previous_type"),
    )
    submitted = lifecycle.filter((pl.col("type") == TaskEvent.SUBMIT) & (pl.col("t") > 0)).with_columns(
        pl.when(pl.col("next_type") == TaskEvent.SCHEDULE).then(pl.col("next_t") - pl.col("t")).alias("wait"),
        pl.col("next_t").alias("left"),
    )
    # those the input never schedules nor ends (its last hour's) would stay pending to the end
    waiting = submitted.filter((pl.col("priority") >= 1) & pl.col("next_type").is_not_null())
    above = waiting.filter(pl.col("t") + 5 < pl.col("left"))
    late, left = np.sort(above["t"].to_numpy() + 5), np.sort(above["left"].to_numpy())
    lowest = submitted.filter((pl.col("priority") == 0) & pl.col("wait").is_not_null())
    at = lowest["t"].to_numpy()
    pending = np.searchsorted(late, at, side="right") - np.searchsorted(left, at, side="right")
    waits = lowest["wait"].to_numpy()
    print(
        "priority-0 submissions, by the tasks of priority 1+ pending over 5 s at their submission: wait 25 / 50 / 90th percentile"
    )
    for low, high in PENDING_BINS:
        chosen = (pending >= low) & (pending <= high)
        print(
            f"  {low:>5,}-{min(high, 99_999):<6,}: {chosen.sum():>6,} submissions, {percentiles(waits[chosen], (25, 50, 90))} s"
        )
    hour = np.minimum(at // 3600, 3).astype(int)  # the last 632 s with hour 3
    print(
        "  per hour (submissions: median wait, s), by the tasks pending over 5 s of priority 1+ / of priority 1 / of 2+:"
    )
    for name, chosen in (("1+", None), ("1", 1), ("2+", 2)):
        band = above if chosen is None else above.filter((pl.col("priority") == 1) == (chosen == 1))
        band_late, band_left = np.sort(band["t"].to_numpy() + 5), np.sort(band["left"].to_numpy())
        count = np.searchsorted(band_late, at, side="right") - np.searchsorted(band_left, at, side="right")
        for h in range(4):
            cells = []
            for low, high in PENDING_BINS:
                rows = waits[(hour == h) & (count >= low) & (count <= high)]
                cells.append(f"{rows.size:>6,}: {np.median(rows):5.1f}" if rows.size else f"{'-':>13}")
            print(f"    priority {name:<2} hour {h}: " + " | ".join(cells))
    report_gate(waiting, at, waits, hour, float(np.median(waits[pending < 10])))
    victims = submitted.filter(
        (pl.col("previous_type") == TaskEvent.EVICT)
        & pl.col("t").is_between(11_785, 11_830)
        & pl.col("wait").is_not_null()
    )
    placed_at = victims["next_t"].to_numpy()
    preempting = frame.filter((pl.col("job") == 6252358260) & (pl.col("type") == TaskEvent.SCHEDULE))["t"].to_numpy()
    print(
        f"  hour 3's victims evicted at 11,785-11,830 s: {victims.height:,}, waits {percentiles(victims['wait'], (25, 50, 90))} s; "
        f"placed at {percentiles(placed_at, (10, 50, 90))} s, when job 6252358260's last tasks started "
        f"({percentiles(preempting, (90, 99))} s, 90th / 99th percentile)"
    )


PENDING_BINS = [(0, 9), (10, 99), (100, 999), (1000, 10**9)]
#: The gate's candidate seconds pending and counts; a count of 10**9 is no gate.
GATE_SECONDS, GATE_COUNTS = (2, 5, 10, 20), (10, 30, 100, 300, 1000, 3000, 10**9)


def gate_open(above: pl.DataFrame, seconds: float, count: int, at: np.ndarray) -> np.ndarray:
    """The first time from each of ``at`` when fewer than ``count`` tasks of ``above`` have been
    pending over ``seconds`` (each pending from its submission to its next event)."""
    submit, left = above["t"].to_numpy(), above["left"].to_numpy()
    kept = submit + seconds < left
    times = np.concatenate([submit[kept] + seconds, left[kept]])
    steps = np.concatenate([np.ones(kept.sum()), -np.ones(kept.sum())])
    order = np.argsort(times, kind="stable")
    times, open_ = times[order], np.cumsum(steps[order]) < count
    n = times.size
    index = np.searchsorted(times, at, side="right") - 1
    next_open = np.minimum.accumulate(np.where(open_, np.arange(n), n)[::-1])[::-1]  # the first open step from each
    after = next_open[np.minimum(index + 1, n - 1)]
    closed = (index >= 0) & ~open_[np.maximum(index, 0)]
    return np.where(closed, np.where(after < n, times[np.minimum(after, n - 1)], np.inf), at)


def report_gate(above: pl.DataFrame, at: np.ndarray, waits: np.ndarray, hour: np.ndarray, base: float) -> None:
    """Whether a gate holds from hour to hour: priority 0 (submitted ``at``, waited ``waits``) is
    placed ``base`` seconds after its submission, but not while N tasks of ``above`` have been
    pending over S seconds. Each hour left out, (S, N) fitted on the others (mean |log wait| error,
    waits capped at 600 s), against no gate on the hour left out."""
    capped = np.log(np.minimum(waits, 600.0))
    errors = {}
    for seconds in GATE_SECONDS:
        for count in GATE_COUNTS:
            predicted = np.maximum(gate_open(above, seconds, count, at + base) - at, base)
            errors[seconds, count] = np.abs(np.log(np.minimum(predicted, 600.0)) - capped)
    none = errors[GATE_SECONDS[0], GATE_COUNTS[-1]]
    print(
        f"  a gate (priority 0 placed {base:.1f} s after its submission, not while N tasks of 1+ have been pending over S s),"
    )
    print("  each hour left out: the gate fitted on the others, mean |log wait error| on it, the gate / no gate:")
    for left_out in range(4):
        fitted = min(errors, key=lambda key: errors[key][hour != left_out].mean())
        gate = "none" if fitted[1] == GATE_COUNTS[-1] else f"S = {fitted[0]} s, N = {fitted[1]:,}"
        print(
            f"    hour {left_out}: {gate}; {errors[fitted][hour == left_out].mean():.3f} / {none[hour == left_out].mean():.3f}"
        )


#: The placement latency the scheduler's delay is counted after (``placement_latency``), and the
#: waits of evicting placements its law is fitted on: those placed within two minutes after it.
LATENCY_S, DELAY_CAP_S = 2.0, 120.0
#: The window after an evicting placement's submission over which the other jobs' evicting
#: placements are counted.
OTHERS_WINDOW_S = 30.0


def report_delay_law(placed: pl.DataFrame) -> None:
    """The preemption delay's law: the waits of the placements that evicted, in bursts of under 100
    tasks (no pass delay), less the latency, fitted by a logistic law, pooled and each hour left
    out (fitted on the others: its Wasserstein distance and KS test on the hour left out, against
    the others' median as a constant); then the larger bursts' waits against the law."""
    evicting = placed.filter((pl.col("evicted") > 0) & pl.col("wait").is_not_null())
    small = evicting.filter((pl.col("burst") < 100) & pl.col("wait").is_between(LATENCY_S, LATENCY_S + DELAY_CAP_S))
    delay = small["wait"].to_numpy() - LATENCY_S
    hour = np.minimum(small["start"].to_numpy() // 3600, 3).astype(int)  # the last 632 s with hour 3
    loc, scale = stats.logistic.fit(delay)
    print(
        f"preemption delay (waits of evicting placements, bursts of < 100, {LATENCY_S:.0f} to {LATENCY_S + DELAY_CAP_S:.0f} s, "
        f"less {LATENCY_S:.0f} s; {delay.size:,} of {evicting.filter(pl.col('burst') < 100).height:,}): "
        f"logistic, location {loc:.2f} s, scale {scale:.2f} s"
    )
    print(
        f"  waits 10 / 25 / 50 / 75 / 90th percentile: {percentiles(delay + LATENCY_S)} s; the law: "
        + " / ".join(f"{v:.1f}" for v in stats.logistic.ppf([0.1, 0.25, 0.5, 0.75, 0.9], loc, scale) + LATENCY_S)
        + f" s; KS {stats.kstest(delay, 'logistic', (loc, scale)).statistic:.3f}"
    )
    print("  each hour left out (the law fitted on the others): location, scale; on the hour left out,")
    print(
        "  Wasserstein distance law / constant (the others' median), KS statistic and p, waits 10 / 50 / 90th real / law:"
    )
    draws = stats.logistic.rvs(size=100_000, random_state=np.random.default_rng(1))
    for left_out in range(4):
        train, test = delay[hour != left_out], delay[hour == left_out]
        at, spread = stats.logistic.fit(train)
        constant = float(np.median(train))
        ks = stats.kstest(test, "logistic", (at, spread))
        law = np.maximum(at + spread * draws, 0.0)
        print(
            f"    hour {left_out} ({test.size}): {at:.2f}, {spread:.2f}; {stats.wasserstein_distance(test, law):.2f} / "
            f"{np.abs(test - constant).mean():.2f} s, KS {ks.statistic:.3f} p = {ks.pvalue:.2g}; "
            f"{percentiles(test + LATENCY_S, (10, 50, 90))} / "
            + " / ".join(f"{v:.1f}" for v in stats.logistic.ppf([0.1, 0.5, 0.9], at, spread) + LATENCY_S)
        )
    for low, high, name in [(100, 999, "100-999"), (1000, 10**9, "1,000+")]:
        rows = evicting.filter(pl.col("burst").is_between(low, high) & (pl.col("wait") < LATENCY_S + DELAY_CAP_S))
        by_hour = ", ".join(
            f"{h}: {percentiles(rows.filter((pl.col('start') // 3600).cast(pl.Int64).clip(0, 3) == h)['wait'], (10, 50, 90))}"
            for h in range(4)
        )
        print(
            f"  bursts of {name}, waits under {LATENCY_S + DELAY_CAP_S:.0f} s, 10 / 50 / 90th percentile per hour: {by_hour}"
        )


def report_wave_victims(frame: pl.DataFrame, placed: pl.DataFrame) -> None:
    """The victims' waits per preempting job (an eviction's resubmission, by the job whose placement
    evicted on its machine at its millisecond), for the jobs evicting 300 tasks or more: whether
    the victims of a wave wait for it."""
    lifecycle = frame.filter(pl.col("type").is_in([TaskEvent.SUBMIT, TaskEvent.SCHEDULE, *ENDS])).with_columns(
        pl.col("type").shift(-1).over(["job", "index"]).alias("next_type"),
        pl.col("t").shift(-1).over(["job", "index"]).alias("next_t"),
        pl.col("type").shift(1).over(["job", "index"]).alias("previous_type"),
        pl.col("machine").shift(1).over(["job", "index"]).alias("previous_machine"),
    )
    resubmitted = lifecycle.filter(
        (pl.col("type") == TaskEvent.SUBMIT) & (pl.col("t") > 0) & (pl.col("previous_type") == TaskEvent.EVICT)
    ).with_columns(
        pl.when(pl.col("next_type") == TaskEvent.SCHEDULE).then(pl.col("next_t") - pl.col("t")).alias("wait"),
        millisecond("t"),
    )
    evicting = placed.filter(pl.col("evicted") > 0)
    by = evicting.unique(["machine", "ms"]).select(
        pl.col("job").alias("by"), "machine", "ms", pl.col("priority").alias("by_priority")
    )
    victims = resubmitted.join(by, left_on=["previous_machine", "ms"], right_on=["machine", "ms"])
    waves = evicting.group_by("job").agg(pl.col("start").quantile(0.99).alias("wave_99"))
    jobs = (
        victims.group_by("by")
        .agg(
            pl.len().alias("victims"),
            pl.col("by_priority").first(),
            pl.col("t").median().alias("evicted"),
            pl.col("wait").median().alias("w50"),
            pl.col("wait").quantile(0.9).alias("w90"),
            pl.col("next_t").median().alias("placed"),
        )
        .filter(pl.col("victims") >= 300)
        .join(waves, left_on="by", right_on="job")
        .sort("evicted")
    )
    print("victims of the jobs evicting 300+ tasks: evicting job (priority), victims, evicted (median, s), their waits")
    print("50th / 90th percentile, placed (median) against the job's evicting placements' 99th percentile:")
    for job, count, priority, evicted, w50, w90, placed_at, wave in jobs.rows():
        print(
            f"  {job} ({priority}): {count:,}, at {evicted:,.0f} s, waits {w50:.1f} / {w90:.1f} s, "
            f"placed {placed_at:,.1f} s against {wave:,.1f} s"
        )


def report_preemption_pace(placed: pl.DataFrame) -> None:
    """The jobs with 50 or more placements that evicted: how fast those placements came (80 % of
    them between their 10th and 90th percentile start), and their waits; production's slow ones."""
    jobs = (
        placed.filter(pl.col("evicted") > 0)
        .group_by("job")
        .agg(
            pl.len().alias("evicting"),
            pl.col("priority").first(),
            pl.col("cpu", "memory").median(),
            (pl.col("start").quantile(0.9) - pl.col("start").quantile(0.1)).alias("span"),
            pl.col("wait").quantile(0.1).alias("w10"),
            pl.col("wait").median().alias("w50"),
            pl.col("wait").quantile(0.9).alias("w90"),
        )
        .filter((pl.col("evicting") >= 50) & (pl.col("span") < 600))
        .with_columns((0.8 * pl.col("evicting") / pl.col("span")).alias("pace"))
        .sort("evicting", descending=True)
    )
    print("jobs with 50+ evicting placements within 10 minutes: evicting, priority, CPU / memory, 10th-90th percentile")
    print("span (s) and pace (placements/s), waits 10 / 50 / 90th percentile:")
    for job, count, priority, cpu, memory, span, w10, w50, w90, pace in jobs.rows():
        print(
            f"  {job}: {count:,}, priority {priority}, {cpu:.4f} / {memory:.4f}, {span:.0f} s, {pace:.1f}/s; "
            f"{w10:.1f} / {w50:.1f} / {w90:.1f} s"
        )


#: The job the slow production waves of hours 1 and 3 evicted most tasks of: a priority-0 job
#: (986 of its tasks never started) whose machines the waves' machines are compared with.
CONFINED_VICTIM = 6218406404


def evicting_features(placed: pl.DataFrame, stay: pl.DataFrame) -> pl.DataFrame:
    """The evicting placements after t = 0 that waited 2 to 122 s (the delay's range), each with
    what a mechanism of the delay could read: its victims (tasks evicted on its machine at its
    millisecond: how many, their memory and CPU, the youngest one's age), the lower priorities
    running there (how many, their memory), its job's evicting placements in its burst (the wave's
    size), the other jobs' evicting placements in the 30 s after its submission (the cell's
    preemptions, in a window that does not grow with the wait) and the
    placements sharing its machine and instant (victims are counted per placement only where it is
    alone)."""
    evicted = stay.filter(pl.col("end_type") == TaskEvent.EVICT).with_columns(millisecond("end"))
    victims = evicted.group_by(["machine", "ms"]).agg(
        pl.len().alias("victims"),
        pl.col("memory").sum().alias("victims_memory"),
        pl.col("cpu").sum().alias("victims_cpu"),
        (pl.col("end") - pl.col("start")).min().alias("youngest_victim_age"),
        pl.col("priority").max().alias("victims_priority"),
        (pl.col("job") == CONFINED_VICTIM).any().alias("evicts_confined"),
    )
    evicting = placed.filter(pl.col("evicted") > 0)
    instants = evicting.group_by(["machine", "ms"]).agg(
        pl.len().alias("sharing"),
        pl.col("priority").max().alias("placed_priority"),
        pl.col("start").first().alias("at"),
    )
    running = stay.select("machine", pl.col("priority").alias("p"), pl.col("start").alias("since"), "end", "memory")
    lower = (
        instants.join(running, on="machine")
        .filter(
            (pl.col("since") < pl.col("at") - 1e-4)
            & (pl.col("end") >= pl.col("at") - 1e-4)
            & (pl.col("p") < pl.col("placed_priority"))
        )
        .group_by(["machine", "ms"])
        .agg(pl.len().alias("lower_there"), pl.col("memory").sum().alias("lower_memory"))
    )
    ordered = evicting.filter(pl.col("wait").is_not_null()).sort("start")
    times, jobs = ordered["start"].to_numpy(), ordered["job"].to_numpy()
    rows = (
        evicting.join(victims, on=["machine", "ms"], how="left")
        .join(instants.select("machine", "ms", "sharing"), on=["machine", "ms"])
        .join(lower, on=["machine", "ms"], how="left")
        .with_columns(
            pl.len().over(["job", "second"]).alias("wave"),
            (pl.col("start") // 3600).clip(0, 3).cast(pl.Int64).alias("hour"),  # the last 632 s with hour 3
        )
        .filter(pl.col("wait").is_between(LATENCY_S, LATENCY_S + DELAY_CAP_S))
    )
    others = [
        int((jobs[np.searchsorted(times, submit) : np.searchsorted(times, submit + OTHERS_WINDOW_S)] != job).sum())
        for job, submit in zip(rows["job"], rows["submit"])
    ]
    return rows.with_columns(pl.Series("others_evicting", others))


def left_out_errors(x: np.ndarray, wait: np.ndarray, hour: np.ndarray, bins: int = 5) -> list[tuple[float, float]]:
    """Each hour left out: the mean absolute error of the waits predicted by their feature's bin
    (the other hours' quintiles of it, each bin's median wait there), and of the other hours'
    median wait alone."""
    errors = []
    for left_out in range(4):
        train, test = hour != left_out, hour == left_out
        edges = np.unique(np.quantile(x[train], np.linspace(0, 1, bins + 1)[1:-1]))
        trained, tested = np.searchsorted(edges, x[train], "right"), np.searchsorted(edges, x[test], "right")
        constant = np.median(wait[train])
        medians = np.array(
            [np.median(wait[train][trained == b]) if (trained == b).any() else constant for b in range(edges.size + 1)]
        )
        errors.append((np.abs(wait[test] - medians[tested]).mean(), np.abs(wait[test] - constant).mean()))
    return errors


def report_delay_mechanisms(placed: pl.DataFrame, stay: pl.DataFrame) -> None:
    """Whether a mechanism says how long an evicting placement waits: its victims' number (killed
    one after another, or the slowest of k: the delay's law's maximum of k draws), their memory,
    CPU and age, the lower priorities there, its job's wave (its size, a pace of the job's
    evictions); each fitted on three hours and checked on the fourth. Then the two slow production
    waves (hours 1 and 3) against the others: on whose machines they ran."""
    rows = evicting_features(placed, stay)
    alone = rows.filter(pl.col("sharing") == 1)
    small = alone.filter(pl.col("burst") < 100)
    at, spread = stats.logistic.fit(rows.filter(pl.col("burst") < 100)["wait"].to_numpy() - LATENCY_S)
    print(
        f"evicting placements that waited {LATENCY_S:.0f} to {LATENCY_S + DELAY_CAP_S:.0f} s: {rows.height:,}; alone at their "
        f"machine and instant: {alone.height:,} (per hour {', '.join(str(n) for _, n in alone.group_by('hour').len().sort('hour').rows())})"
    )
    evictions = (
        stay.filter((pl.col("end_type") == TaskEvent.EVICT) & (pl.col("end") > 0))
        .with_columns(millisecond("end"))
        .select("machine", pl.col("ms").alias("evicted_ms"))
    )
    instants = placed.filter(pl.col("start") > 60).group_by(["machine", "ms"]).agg(pl.col("evicted").max() > 0)
    before = (
        instants.join(evictions, on="machine")
        .filter(pl.col("evicted_ms").is_between(pl.col("ms") - 60_000, pl.col("ms") - 1))
        .group_by(["machine", "ms"])
        .agg(((pl.col("ms") - pl.col("evicted_ms")) / 1000).min().alias("gap"))
    )
    instants = instants.join(before, on=["machine", "ms"], how="left")
    cells = []
    for kind, chosen in (("evicting", pl.col("evicted")), ("evicting nothing", ~pl.col("evicted"))):
        part = instants.filter(chosen)
        earlier = part.filter(pl.col("gap").is_not_null())
        cells.append(
            f"{kind} {earlier.height / part.height:.1%} of {part.height:,} (the last {earlier['gap'].median():.1f} s before, median)"
        )
    print(
        "  machines and instants of placements (after 60 s) with an eviction there in the 60 s before, not at it: "
        + "; ".join(cells)
    )
    by_priority = rows.group_by("victims_priority").agg(pl.len(), pl.col("wait").median()).sort("victims_priority")
    print(
        "  by their victims' highest priority: "
        + ", ".join(f"{p}: {n:,} (median {w:.1f} s)" for p, n, w in by_priority.rows())
    )
    print(
        "  by their victims: placements, median wait per hour 0 to 3 (s), all; bursts under 100 tasks: placements, median;"
    )
    print(f"  the slowest of k draws of the small bursts' law (location {at:.2f} s, scale {spread:.2f} s), median:")
    for k in range(1, 7):
        chosen = pl.col("victims") == k if k < 6 else pl.col("victims") >= k
        rows_k, small_k = alone.filter(chosen), small.filter(chosen)
        draws = k if k < 6 else int(small_k["victims"].median())
        hourly = ", ".join(
            f"{rows_k.filter(pl.col('hour') == h)['wait'].median() or float('nan'):.1f}" for h in range(4)
        )
        law = LATENCY_S + at + spread * np.log(0.5 ** (1 / draws) / (1 - 0.5 ** (1 / draws)))
        print(
            f"    {k}{'+' if k == 6 else ' '}: {rows_k.height:>5,}, {rows_k['wait'].median():.1f} s ({hourly}); "
            f"{small_k.height:>4,}, {small_k['wait'].median():.1f} s; max of {draws}: {law:.1f} s"
        )
    print(
        "  each feature, its bin's median wait (quintiles) fitted on three hours: mean absolute error on the hour left out,"
    )
    print("  feature / the others' median alone (s), hours 0 to 3; within-job Spearman (median over jobs with 20+):")
    features = [
        ("victims", alone),
        ("victims_memory", alone),
        ("victims_cpu", alone),
        ("youngest_victim_age", alone),
        ("lower_there", rows),
        ("lower_memory", rows),
        ("wave", rows),
        ("others_evicting", rows),
        ("memory", rows),
        ("cpu", rows),
    ]
    for name, frame in features:
        frame = frame.filter(pl.col(name).is_not_null())
        x, wait, hour = frame[name].cast(pl.Float64).to_numpy(), frame["wait"].to_numpy(), frame["hour"].to_numpy()
        errors = left_out_errors(x, wait, hour)
        within = [
            stats.spearmanr(group[name].to_numpy(), group["wait"].to_numpy()).statistic
            for _, group in frame.group_by("job")
            if group.height >= 20 and group[name].n_unique() > 1
        ]
        better = sum(mine < constant for mine, constant in errors)
        print(
            f"    {name:<20}: "
            + ", ".join(f"{mine:.2f} / {constant:.2f}" for mine, constant in errors)
            + f"; better on {better} of 4; within jobs {np.median(within) if within else float('nan'):+.2f} ({len(within)} jobs)"
        )
    waves = (
        rows.group_by(["job", "second"])
        .agg(
            pl.len().alias("evicting"),
            pl.col("priority").first(),
            pl.col("hour").first(),
            (pl.col("start").quantile(0.9) - pl.col("start").quantile(0.1)).alias("span"),
            pl.col("wait").quantile(0.1).alias("w10"),
            pl.col("start").round(1).n_unique().alias("instants"),
            pl.col("machine")
            .is_in(stay.filter(pl.col("job") == CONFINED_VICTIM)["machine"].unique().implode())
            .mean()
            .alias("confined"),
            pl.col("submit").min().alias("submitted"),
        )
        .filter(pl.col("evicting") >= 20)
        .sort("evicting", descending=True)
    )
    big = waves.filter(pl.col("evicting") >= 50)
    n, span, hour = big["evicting"].to_numpy(), big["span"].to_numpy(), big["hour"].to_numpy()
    print(
        f"  waves (a job's evicting placements of one burst, 50+): span 10th-90th percentile against size, Spearman "
        f"{stats.spearmanr(n, span).statistic:+.2f} ({n.size} waves); each hour left out, mean |span error| (s) of a pace"
    )
    print("  of the job's evictions (span = 0.8 size / the other hours' median pace) / a constant span (their median):")
    for left_out in range(4):
        train, test = hour != left_out, hour == left_out
        if not test.any():
            continue
        pace = np.median(0.8 * n[train] / span[train])
        print(
            f"    hour {left_out} ({test.sum()} waves): {np.abs(span[test] - 0.8 * n[test] / pace).mean():.1f} / "
            f"{np.abs(span[test] - np.median(span[train])).mean():.1f}"
        )
    machines = stay.filter(pl.col("job") == CONFINED_VICTIM)["machine"].n_unique()
    print(
        "  waves of 20+ evicting placements: submitted at (s), size, priority, hour, span (s), 10th percentile wait (s),"
    )
    print(
        f"  evicting per instant, share on the {machines:,} machines that ran job {CONFINED_VICTIM} "
        f"(of {stay['machine'].n_unique():,}):"
    )
    for job, _, count, priority, wave_hour, wave_span, w10, instants, confined, submitted in waves.sort(
        "confined"
    ).rows():
        print(
            f"    {job}: {submitted:,.1f}, {count:,}, {priority}, {wave_hour}, {wave_span:.1f}, {w10:.1f}, "
            f"{count / instants:.1f}, {confined:.2f}"
        )
    print("  within the waves of 50+, median wait of the placements evicting a task of that job / the others':")
    confined_rows = rows.filter(pl.col("wave") >= 50)
    cells = []
    for (job,), group in confined_rows.group_by("job"):
        hit, miss = group.filter(pl.col("evicts_confined")), group.filter(~pl.col("evicts_confined"))
        if hit.height >= 10 and miss.height >= 10:
            cells.append(
                (group.height, f"{job} {hit['wait'].median():.1f} ({hit.height}) / {miss['wait'].median():.1f}")
            )
    print("    " + "; ".join(cell for _, cell in sorted(cells, reverse=True)))
    evicted = stay.filter(pl.col("end_type") == TaskEvent.EVICT).with_columns(millisecond("end"))
    slow = waves.filter((pl.col("evicting") >= 100) & (pl.col("confined") >= 0.85))
    print("  the confined waves of 100+: tasks evicted (of that job), placements evicting nothing and their waits (s):")
    for job, second, *_ in slow.rows():
        tasks = placed.filter((pl.col("job") == job) & (pl.col("second") == second))
        hit = tasks.filter(pl.col("evicted") > 0).unique(["machine", "ms"]).join(evicted, on=["machine", "ms"])
        calm = tasks.filter(pl.col("evicted") == 0)["wait"].sort()
        print(
            f"    {job}: {hit.height:,} ({(hit['job_right'] == CONFINED_VICTIM).sum():,}); {calm.len()}: "
            + ", ".join(f"{w:.1f}" for w in calm)
        )


def largest_job(folder: Path) -> str:
    """The window's largest job in a ``validate-replay`` folder and its median wait, real and simulated."""
    real = pl.read_parquet(folder / "real_attempts.parquet").filter(pl.col("submit") > -np.inf)
    real = real.with_columns(pl.col("task").str.split("_").list.first().cast(pl.Int64).alias("job"))
    sizes = real.group_by("job").agg(pl.col("task").n_unique().alias("tasks")).sort(["tasks", "job"], descending=True)
    job, tasks = sizes.row(0)
    workload = json.loads((folder / "workload.json").read_text())["jobs"]
    ours = {f"w0!{entry['id']}" for entry in workload if entry.get("google_job") == job}
    simulated = pl.read_parquet(folder / "simulated_attempts.parquet").filter(pl.col("task").is_in(list(ours)))

    def median_wait(frame: pl.DataFrame) -> float:
        waits = frame.filter(pl.col("submit") > -np.inf)["start"] - frame.filter(pl.col("submit") > -np.inf)["submit"]
        return float(waits.drop_nans().median()) if waits.len() else float("nan")

    return (
        f"{folder.name}: job {job}, {tasks:,} tasks; median wait real {median_wait(real.filter(pl.col('job') == job)):.1f} s, "
        f"simulated {median_wait(simulated):.1f} s ({simulated.height:,} attempts)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=Path("../shared/data/google-2011"))
    parser.add_argument("--hours", type=int, default=4)
    parser.add_argument("--replays", type=Path, nargs="+", default=[])
    args = parser.parse_args()
    if args.replays:
        for folder in args.replays:
            print(largest_job(folder))
        return
    frame = events(args.trace)
    stay = stays(frame)
    placed = placements(frame, stay)
    report_passes(frame)
    print()
    report_waits(placed, stay)
    print()
    report_delay_law(placed)
    print()
    report_memory(placed, args.hours)
    print()
    report_priorities(placed, args.hours)
    print()
    report_priority_pairs(placed, stay, args.hours)
    print()
    report_free_tier_preemption(placed, stay, frame, args.hours)
    print()
    report_burst_law(placed, args.hours)
    print()
    report_victims(placed, stay)
    print()
    report_pass_time(placed, args.hours)
    print()
    report_big_jobs(placed)
    print()
    report_requests(placed, stay)
    print()
    report_free_tier(frame, args.hours)
    print()
    report_behind_higher(frame)
    print()
    report_wave_victims(frame, placed)
    print()
    report_preemption_pace(placed)
    print()
    report_delay_mechanisms(placed, stay)


if __name__ == "__main__":
    main()
