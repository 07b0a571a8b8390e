"""Benchmark: a generated cell against the trace's, per priority group and hour.

A model of the Google cell (the ``google-2011-cell`` preset, or a model file: a plain ``fit`` of
the trace parts) is generated warm-started on the whole cell (12,583 machines) over the shared
parts' span (0-15,032 s) and over a day, for several seeds (the warm start and the arrivals as
``generate --warm-start --seed S`` draws them), each task running from its submission for its
makespan (no contention). Against the trace parts it prints, per priority group (free 0-1, normal
2-8, production 9-11): the tasks running at t = 0 and their CPU and memory, the tasks submitted per hour
(the seeds' mean); the requested CPU (and memory) at each hour of the span and the targets (within 5 % on
average, 10 % every hour); the submissions per hour (within 10 % on average); over the
generated day, the requested CPU per hour against the trace's start and the submissions per hour
against the model's own mean rate.

The tasks submitted over the span are a heavy-tailed sum (job sizes are the trace's exact
histogram: one job may hold thousands of tasks), so a few seeds cannot tell a biased rate from
draws that fell short: ``--draws N`` generates the span alone (no warm start, no load) for seeds
1 to N and prints the mean of the submissions over the parts', its standard error, one draw's
spread and the share of the draws within 10 %, overall and per group, beside the count the
model's own mean rate gives.

    uv run python -m bench.cell_fidelity [--model model.toml] [--seeds 1,2,3] [--draws 200] [--data ../shared/data/google-2011]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

from batsim_google.fitting.load_fidelity import input_load, running_load
from batsim_google.fitting.priority_groups import PRIORITY_SPLIT, in_levels
from batsim_google.fitting.trace_input import trace_task_table
from batsim_google.generation.generator import generate
from batsim_google.generation.warm_start import class_rates, warm_start
from batsim_google.model.presets import preset
from batsim_google.model.priority import google_priority
from batsim_google.model.request_law import load_request_law
from batsim_google.model.workload_model import load_model
from batsim_google.platform.google_2011 import GOOGLE_2011_MACHINES
from batsim_google.trace.row_accounting import RowAccount

SPAN = 15_032.0
HOUR = 3600.0
DAY = 24 * HOUR


def _edges(end: float) -> np.ndarray:
    return np.append(np.arange(0.0, end, HOUR), end)


def _groups(levels: np.ndarray) -> dict[str, np.ndarray]:
    return {name: in_levels(levels, bounds) for name, bounds in PRIORITY_SPLIT.items()}


def trace_side(data: Path) -> dict:
    frame, _ = trace_task_table([data], RowAccount(), censored=True)
    residents = frame.filter(pl.col("resident"))
    submitted = frame.filter(~pl.col("resident"))
    edges = _edges(SPAN)
    start_levels = residents["google_priority"].to_numpy()
    levels = submitted["google_priority"].to_numpy()
    subtime = submitted["subtime"].to_numpy()
    cpu = residents["cpu_request"].fill_null(0.0).to_numpy()
    memory = residents["memory_request"].fill_null(0.0).to_numpy()
    return {
        "start": {
            g: (int(m.sum()), float(cpu[m].sum()), float(memory[m].sum())) for g, m in _groups(start_levels).items()
        },
        "hourly": {g: np.histogram(subtime[m], edges)[0] for g, m in _groups(levels).items()},
        "submitted": np.histogram(subtime, edges)[0],
        "jobs": submitted["job_id"].n_unique(),
        "load": input_load(frame.with_columns(pl.col("subtime").fill_null(0.0)), edges),
    }


def generated_side(model, requests, seed: int, end: float) -> dict:
    rng = np.random.default_rng(seed)
    warm = warm_start(model, requests, rng.spawn(1)[0], 1.0, GOOGLE_2011_MACHINES)
    batches = [warm, *generate(model, requests, rng, duration=end)]
    edges = _edges(end)
    subtime = np.concatenate([b.subtime for b in batches[1:]])
    levels = google_priority(np.concatenate([b.priority for b in batches[1:]]))
    load = running_load(
        edges,
        np.concatenate([b.subtime for b in batches]),
        np.concatenate([b.subtime + b.makespan for b in batches]),
        np.concatenate([b.cpu for b in batches]),
        np.concatenate([b.memory for b in batches]),
    )
    start_levels = google_priority(warm.priority)
    return {
        "start": {
            g: (int(m.sum()), float(warm.cpu[m].sum()), float(warm.memory[m].sum()))
            for g, m in _groups(start_levels).items()
        },
        "hourly": {g: np.histogram(subtime[m], edges)[0] for g, m in _groups(levels).items()},
        "submitted": np.histogram(subtime, edges)[0],
        "load": load,
    }


def expected_submissions(model, end: float) -> np.ndarray:
    """The model's mean tasks submitted in each hour up to ``end`` (its rate through its profile)."""
    rate = float(class_rates(model).sum())
    edges = _edges(end)
    profile = model.jobs.profile if model.jobs is not None and model.jobs.profile else model.arrival_profile
    if profile is None:
        return rate * np.diff(edges)
    return rate * np.diff(profile.to_normalized_time(edges))


def parse_seeds(text: str) -> list[int]:
    """Seeds as a list (``1,2,3``), a range (``1-30``, inclusive) or both (``1-3,7``)."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds += list(range(int(first), int(last or first) + 1))
    return seeds


def span_submissions(model, requests, seed: int) -> np.ndarray:
    """What one draw (seed ``seed``, arrivals only) submits over the span: its tasks, per priority
    group, and its jobs (last)."""
    batches = list(generate(model, requests, np.random.default_rng(seed), duration=SPAN))
    levels = google_priority(np.concatenate([b.priority for b in batches]))
    jobs = len(np.unique(np.concatenate([b.job for b in batches]))) if model.jobs is not None else np.nan
    return np.array([len(levels), *(m.sum() for m in _groups(levels).values()), jobs], dtype=float)


def print_submission_spread(model, requests, draws: int, real: dict) -> None:
    counts = np.array([span_submissions(model, requests, seed) for seed in range(1, draws + 1)])
    references = [real["submitted"].sum(), *(real["hourly"][g].sum() for g in PRIORITY_SPLIT), real["jobs"]]
    expected = expected_submissions(model, SPAN).sum()
    print(
        f"tasks submitted over 0-15,032 s, {draws} draws (seeds 1-{draws}, arrivals only), over the parts' "
        f"{references[0]:,}; the model's own mean rate gives {expected:,.0f} (x{expected / references[0]:.3f})"
    )
    names = ["all", *PRIORITY_SPLIT, "jobs"]
    if model.jobs is None:  # tasks only
        names, counts, references = names[:-1], counts[:, :-1], references[:-1]
    for name, column, reference in zip(names, counts.T, references, strict=True):
        ratio = column / max(reference, 1)
        print(
            f"  {name:<10} mean x{ratio.mean():.3f} (standard error {ratio.std(ddof=1) / np.sqrt(draws):.3f}), "
            f"median x{np.median(ratio):.3f}; one draw: sd {ratio.std(ddof=1):.3f}, 10th-90th percentile "
            f"x{np.quantile(ratio, 0.1):.3f}-x{np.quantile(ratio, 0.9):.3f}, within 10 % in "
            f"{np.mean(np.abs(ratio - 1) <= 0.1):.0%} of the draws"
        )
    if model.jobs is not None:
        print(
            f"  tasks per job: {counts[:, 0].mean() / counts[:, -1].mean():.2f}, the parts' {references[0] / references[-1]:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a model file (default: the google-2011-cell preset)")
    parser.add_argument("--seeds", default="1,2,3", help="seeds of the full figures: 1,2,3 or a range, 1-30")
    parser.add_argument("--draws", type=int, default=200, help="draws of the submissions' spread over the span")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/google-2011"))
    args = parser.parse_args()
    model = preset("google-2011-cell") if args.model is None else load_model(args.model)
    requests = load_request_law()
    seeds = parse_seeds(args.seeds)
    real = trace_side(args.data)
    runs = [generated_side(model, requests, seed, SPAN) for seed in seeds]
    print(f"model: {args.model or 'google-2011-cell preset'}; seeds {seeds}; whole cell, no contention")
    print("running at t = 0, per group: tasks, CPU and memory, generated (mean of the seeds) / real")
    for group in [*PRIORITY_SPLIT, "all"]:
        if group == "all":
            real_start = np.sum(list(real["start"].values()), axis=0)
            generated = np.mean([np.sum(list(r["start"].values()), axis=0) for r in runs], axis=0)
        else:
            real_start = np.array(real["start"][group])
            generated = np.mean([r["start"][group] for r in runs], axis=0)
        tasks, cpu, memory = real_start
        ratio = generated / real_start
        print(
            f"  {group:<10} real {tasks:>7,.0f} tasks {cpu:>8,.1f} CPU {memory:>8,.1f} memory | "
            f"x{ratio[0]:.3f} tasks x{ratio[1]:.3f} CPU x{ratio[2]:.3f} memory"
        )
    print("tasks submitted per hour of 0-15,032 s, per group: real | generated mean of the seeds")
    for group in PRIORITY_SPLIT:
        generated = np.mean([r["hourly"][group] for r in runs], axis=0)
        print(
            f"  {group:<10} real {real['hourly'][group].tolist()} | generated {np.round(generated).astype(int).tolist()}"
        )
        print(f"  {'':<10} total over the span: x{generated.sum() / max(real['hourly'][group].sum(), 1):.3f}")
    for seed, run in zip(seeds, runs):
        ratio = run["load"].cpu / real["load"].cpu
        memory = run["load"].memory / real["load"].memory
        sub = run["submitted"] / real["submitted"]
        print(
            f"seed {seed}: requested CPU / real at hours {np.round(ratio, 3).tolist()}: mean error "
            f"{np.mean(np.abs(ratio - 1)):.1%}, worst {np.max(np.abs(ratio - 1)):.1%}; memory: mean error "
            f"{np.mean(np.abs(memory - 1)):.1%}, worst {np.max(np.abs(memory - 1)):.1%}; submissions / real per hour "
            f"{np.round(sub, 3).tolist()}, over the span x{run['submitted'].sum() / real['submitted'].sum():.3f}"
        )
    if args.draws > 1:
        print_submission_spread(model, requests, args.draws, real)
    expected = expected_submissions(model, DAY)
    for seed in seeds:
        day = generated_side(model, requests, seed, DAY)
        ratio = day["load"].cpu / real["load"].cpu[0]
        memory = day["load"].memory / real["load"].memory[0]
        sub = day["submitted"] / expected
        print(
            f"seed {seed}, a generated day: CPU / the trace's start, mean {ratio.mean():.3f}, from {ratio.min():.3f} "
            f"to {ratio.max():.3f}; memory, mean {memory.mean():.3f}, from {memory.min():.3f} to {memory.max():.3f}; "
            f"submissions / the model's mean rate, mean {sub.mean():.3f}, mean error "
            f"{np.mean(np.abs(sub - 1)):.1%}, over the day x{day['submitted'].sum() / expected.sum():.3f}"
        )


if __name__ == "__main__":
    main()
