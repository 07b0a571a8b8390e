"""The fit report: every law's parameters and scores per class and for the arrivals, the
priority rates, the paper's mass and disparity, the width law and the makespan laws per group of
widths of parallel jobs, the k-means diagnostics and, when computed, the fidelity of the fitted
model and the requested load it generates against the input's; as JSON (``.json``) or Markdown (any other suffix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from batsim_google.fitting.fidelity import Fidelity
from batsim_google.fitting.job_arrivals import JobArrivalFit, describe_job_profile
from batsim_google.fitting.job_fidelity import JobFidelity
from batsim_google.fitting.load_fidelity import LoadFidelity
from batsim_google.fitting.model_fit import MIN_GROUP_TASKS, ModelFit, WidthFit
from batsim_google.fitting.select import LawFit
from batsim_google.model.arrival_profile import ArrivalProfile
from batsim_google.model.laws import Law
from batsim_google.output_files import write_text
from batsim_google.units import HOUR


def _g(value: float) -> str:
    return f"{value:.4g}"


def describe(law: Law | None) -> str:
    """``gamma(shape=0.62, scale=2137)``: a law in one line."""
    if law is None:
        return "-"
    parts = []
    for key, value in law.to_mapping().items():
        if key != "law":
            parts.append(f"{key}=[{', '.join(map(_g, value))}]" if isinstance(value, list) else f"{key}={_g(value)}")
    return f"{law.name}({', '.join(parts)})"


def _widths_mapping(widths: WidthFit) -> dict[str, Any]:
    return {
        "law": widths.law.to_mapping(),
        "mean": widths.law.mean(),
        "groups": widths.grouping,
        "small_groups": widths.small_groups,
        "small_group_tasks": widths.small_group_tasks,
        "constant_groups": list(widths.constant_groups),
        "group_fits": [
            {"group": g.name, "tasks": g.tasks, "best": g.best.method, "fits": [f.to_mapping() for f in g.fits]}
            for g in widths.groups
        ],
    }


def report_mapping(fit: ModelFit, source: str, fidelity: Fidelity | None = None) -> dict[str, Any]:
    arrivals = fit.arrivals
    profile = arrivals.profile
    mapping: dict[str, Any] = {
        "input": source,
        "rows": fit.table.rows.to_json(),
        "criterion": fit.criterion,
        "classification": fit.classification,
        "arrivals": {
            "gaps": arrivals.gaps,
            "zero_gaps": arrivals.zero_gaps,
            "mean_gap": arrivals.mean_gap,
            "profile": None
            if profile is None
            else {
                "period": profile.profile.period,
                "bins": len(profile.profile.rates),
                "covered_bins": profile.covered_bins,
                "rates": list(profile.profile.rates),
            },
            "best": arrivals.best.method,
            "simultaneous": arrivals.simultaneous,
            "fits": [f.to_mapping() for f in arrivals.fits],
        },
        "classes": [
            {
                "name": c.name,
                "kind": c.kind,
                "tasks": c.tasks,
                "frequency": c.frequency,
                "mass": c.mass,
                "disparity": c.disparity,
                "lambda": c.priority.rate,
                "mean_priority": c.priority.mean,
                **({"priority_note": c.priority.note} if c.priority.note else {}),
                "best": c.best.method,
                **({"cpu_share": c.cpu_share} if c.cpu_share is not None else {}),
                **({"without_lifetime": c.without_lifetime} if c.without_lifetime else {}),
                **({"censored": c.censored} if c.censored else {}),
                **({"cpu_range": list(c.cpu_range)} if c.cpu_range is not None else {}),
                **({"population": c.population} if c.population is not None else {}),
                "fits": [f.to_mapping() for f in c.fits],
                **({"widths": _widths_mapping(c.widths)} if c.widths is not None else {}),
            }
            for c in fit.classes
        ],
    }
    if fit.without_lifetime:
        mapping["without_lifetime"] = {"tasks": fit.without_lifetime, "cpu_share": fit.without_lifetime_cpu}
    if fit.elbow is not None:
        mapping["kmeans"] = {
            "elbow": [vars(score) for score in fit.elbow],
            "k": fit.clustering.k,
            "silhouette": fit.clustering.silhouette,
            "clusters": fit.clustering.clusters.to_dicts(),
        }
    if fit.jobs is not None:
        mapping["jobs"] = job_report_mapping(fit.jobs)
    if fidelity is not None:
        mapping["fidelity"] = fidelity.to_mapping()
    return mapping


def job_report_mapping(jobs: JobArrivalFit) -> dict[str, Any]:
    return {
        "jobs": jobs.job_count,
        "gaps": jobs.gaps,
        "zero_gaps": jobs.zero_gaps,
        "best": jobs.best.to_mapping(),
        "fits": [f.to_mapping() for f in jobs.fits],
        "gaps_within_jobs": jobs.spread_gaps,
        "spread_fits": [f.to_mapping() for f in jobs.spread_fits],
        "multi_task_jobs": jobs.multi_task_jobs,
        "shared": jobs.shared,
        "recorded_jobs": jobs.recorded_jobs,
        "as_recorded": jobs.as_recorded,
        "model": jobs.jobs.to_mapping(),
    }


def job_report_lines(
    jobs: JobArrivalFit, task_profile: ArrivalProfile | None, fidelity: JobFidelity | None
) -> list[str]:
    """The Markdown section of job-level arrivals (an extension of the model paper)."""
    model = jobs.jobs
    lines = [
        "",
        "## Jobs (an extension of the model paper)",
        "",
        f"{jobs.job_count} jobs, {_g(model.mean_tasks())} tasks per job on average; "
        f"{jobs.zero_gaps} of {jobs.gaps} job gaps simultaneous (under 10 us). Job inter-arrivals:",
        "",
        *_fits_table(jobs.fits, jobs.best),
        "",
        f"Within jobs: {_g(model.zero_spread)} of {jobs.spread_gaps} gaps simultaneous; the others: "
        f"{describe(model.spread)}.",
        *(
            ["", f"With {note}."]
            if task_profile is not None and (note := describe_job_profile(jobs, task_profile))
            else []
        ),
        "",
        "| job class | share of jobs | mean tasks per job | largest | shares of its tasks per class |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {index} | {_g(c.frequency)} | {_g(c.tasks.mean())} | {max(c.tasks.values):.0f} | "
            f"{', '.join(map(_g, c.mix))} |"
            for index, c in enumerate(model.classes)
        ),
        "",
        f"Shared by all the tasks of a job, over the {jobs.multi_task_jobs} jobs of two tasks or more: "
        + ", ".join(f"{name} {_g(share)}" for name, share in jobs.shared.items())
        + ".",
    ]
    if jobs.as_recorded is not None:
        lines += [
            "",
            f"{jobs.recorded_jobs} jobs start at their own SUBMIT (job_events); share of them whose tasks all "
            "have the job's own value: " + ", ".join(f"{name} {_g(share)}" for name, share in jobs.as_recorded.items()),
        ]
    if fidelity is not None:
        error = fidelity.worst_hourly_error
        lines += [
            "",
            f"Fidelity, two-sample KS: task gaps {_g(fidelity.task_gap_ks)}, job gaps {_g(fidelity.job_gap_ks)}, "
            f"tasks per job {_g(fidelity.tasks_per_job_ks)} ({fidelity.original_jobs} jobs / "
            f"{fidelity.generated_jobs} generated); hourly submission rates "
            + ("-" if error is None else f"within {error:.1%} (worst hour, {fidelity.hourly_note()})")
            + ".",
        ]
    return lines


def _fits_table(fits: list[LawFit], best: LawFit) -> list[str]:
    lines = ["| method | law | KS | log-likelihood | AIC | seconds |", "| --- | --- | --- | --- | --- | --- |"]
    for f in fits:
        mark = " **(best)**" if f is best else ""
        law = describe(f.law) if f.law is not None else f"not applicable: {f.note}"
        lines.append(f"| {f.method}{mark} | {law} | {_g(f.ks)} | {_g(f.loglik)} | {_g(f.aic)} | {f.seconds:.3f} |")
    return lines


def _widths_lines(name: str, widths: WidthFit) -> list[str]:
    law = widths.law
    lines = [
        "",
        f"### Widths of {name}",
        "",
        f"Empirical law of {len(law.values)} widths from {int(min(law.values))} to {int(max(law.values))}, "
        f"mean {_g(law.mean())}:",
        "",
        "| width | " + " | ".join(str(int(v)) for v in law.values) + " |",
        "|" + " --- |" * (len(law.values) + 1),
        "| share | " + " | ".join(_g(w) for w in law.weights) + " |",
    ]
    if widths.grouping is None:
        return lines
    lines += [
        "",
        f"Makespan laws per group ({widths.grouping}): {len(widths.groups)} groups of at least "
        f"{MIN_GROUP_TASKS} tasks have their own; {widths.small_groups} smaller groups "
        f"({widths.small_group_tasks} tasks) draw from the class's law.",
    ]
    if widths.constant_groups:
        lines.append(
            f"So do the groups whose makespans are all equal (no continuous law): {', '.join(widths.constant_groups)}."
        )
    for group in widths.groups:
        lines += [
            "",
            f"#### Makespans of {name}, widths {group.name} ({group.tasks} tasks)",
            "",
            *_fits_table(group.fits, group.best),
        ]
    return lines


def _bands_hold(held: list) -> str:
    if any(c.requests is not None for c in held):
        return "each drawing the requests of the start's tasks in it, so that the start's CPU and memory are held too"
    return "so that the start's CPU is held too"


def stationarity_summary(fit: ModelFit) -> str | None:
    """What a fit that holds a start assumed, in one line (None when it held none)."""
    held = [c for c in fit.classes if c.population is not None]
    if not held:
        return None
    bands = sum(c.cpu_range is not None for c in held)
    start = (
        "the input's start"
        if fit.start is not None and fit.start.tasks
        else "the trace's start (the input's own is unknown)"
    )
    return (
        f"assumed a stationary cell: the {sum(c.population for c in held):,.0f} tasks of {start} beyond the other "
        f"classes' are held by {', '.join(c.name for c in held)} (rate x mean lifetime, Little's law"
        + (f"; {bands} bands of CPU and memory request, {_bands_hold(held)}" if bands else "")
        + (
            "; classes split by priority group (free 0-1, normal 2-8, production 9-11), each drawing its "
            "tasks' Google priorities, so that the start's groups are held too"
            if any(c.levels is not None for c in fit.classes)
            else ""
        )
        + "); a warm start is then the cell the arrivals keep"
    )


def without_lifetime_summary(fit: ModelFit) -> str | None:
    """What the fit did with the tasks submitted without a lifetime (None without any)."""
    if not fit.without_lifetime:
        return None
    total = sum(fit.without_lifetime.values())
    reasons = ", ".join(f"{count} {reason}" for reason, count in fit.without_lifetime.items())
    drawn = ", ".join(f"{c.name} {c.without_lifetime}" for c in fit.classes if c.without_lifetime)
    cpu = "" if fit.without_lifetime_cpu is None else f", {fit.without_lifetime_cpu:.1%} of the requested CPU"
    return (
        f"{total} tasks submitted without a lifetime ({reasons}){cpu}: left out of the lifetime laws and "
        f"priority rates; counted in the arrival rate, the jobs and the classes' shares, each drawn into a "
        f"class by its job's other tasks ({drawn}), whose lifetime law the generator gives it"
    )


def _without_lifetime_lines(fit: ModelFit) -> list[str]:
    summary = without_lifetime_summary(fit)
    return [] if summary is None else ["", summary + "."]


def render_markdown(fit: ModelFit, source: str, fidelity: Fidelity | None = None) -> str:
    arrivals = fit.arrivals
    lines = [
        f"# Fit of {source}",
        "",
        f"Input: {fit.table.rows.summary()}.",
        f"Classes: {fit.classification}; best law by {'smallest KS statistic' if fit.criterion == 'ks' else 'smallest AIC'}.",
        "",
        "## Classes",
        "",
        "| class | kind | tasks | frequency | mass (mean, s) | disparity (mean/median) | lambda | mean priority | best law |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in fit.classes:
        lines.append(
            f"| {c.name} | {c.kind} | {c.tasks} | {_g(c.frequency)} | {_g(c.mass)} | {_g(c.disparity)} | "
            f"{_g(c.priority.rate)} | {_g(c.priority.mean)} | {c.best.method} |"
        )
    lines += [f"- {c.name}: {c.priority.note}" for c in fit.classes if c.priority.note]
    lines += [
        f"- {c.name}: {c.cpu_share:.1%} of the requested CPU"
        + (f", {c.censored} lifetimes censored" if c.censored else "")
        + (f", {c.without_lifetime} more tasks without a lifetime drawn into it" if c.without_lifetime else "")
        for c in fit.classes
        if c.cpu_share is not None
    ]
    lines += [f"- {note}"] if (note := stationarity_summary(fit)) else []
    lines += [
        f"- {c.name}: holds {c.population:,.0f} tasks of the start"
        + (f", CPU requests in [{c.cpu_range[0]:.4g}, {c.cpu_range[1]:.4g})" if c.cpu_range is not None else "")
        for c in fit.classes
        if c.population is not None
    ]
    lines += _without_lifetime_lines(fit)
    for c in fit.classes:
        lines += ["", f"### Makespans of {c.name}", "", *_fits_table(c.fits, c.best)]
        if c.best.note:
            lines += ["", f"{c.best.method}: {c.best.note}."]
        if c.widths is not None:
            lines += _widths_lines(c.name, c.widths)
    lines += ["", "## Arrivals", ""]
    if arrivals.profile is not None:
        p = arrivals.profile
        lines.append(
            f"Arrival-rate profile: period {p.profile.period:g} s in {len(p.profile.rates)} bins of "
            f"{p.profile.bin_width:g} s, {p.covered_bins} bins observed; rates from "
            f"{_g(min(p.profile.rates))} to {_g(max(p.profile.rates))} times the mean. "
            "Inter-arrival times below are in normalized time."
        )
    else:
        lines.append("No arrival-rate profile (stationary arrivals).")
    lines += [
        "",
        f"{arrivals.gaps} gaps between submissions, mean {_g(arrivals.mean_gap)} s; "
        f"{arrivals.zero_gaps} simultaneous submissions (zero gaps) left out of the fits.",
        "",
        *_fits_table(arrivals.fits, arrivals.best),
    ]
    if arrivals.zero_gaps:
        lines += [
            "",
            f"The model draws zero gaps at their share ({_g(arrivals.simultaneous)}, `simultaneous`), "
            f"the others from {arrivals.best.method}: a mean gap of "
            f"{_g((1 - arrivals.simultaneous) * arrivals.best.law.mean())} s (observed {_g(arrivals.mean_gap)} s).",
        ]
    if fit.elbow is not None:
        clustering = fit.clustering
        lines += [
            "",
            "## k-means",
            "",
            "| k | inertia | mean distance to closest centroid | mean silhouette |",
            "| --- | --- | --- | --- |",
            *(f"| {s.k} | {_g(s.inertia)} | {_g(s.mean_distance)} | {_g(s.silhouette)} |" for s in fit.elbow),
            "",
            f"Clusters of the {clustering.k}-clustering (mean silhouette {_g(clustering.silhouette)}):",
            "",
        ]
        columns = clustering.clusters.columns
        lines += ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
        for row in clustering.clusters.iter_rows():
            lines.append("| " + " | ".join(_g(v) if isinstance(v, float) else str(v) for v in row) + " |")
    if fidelity is not None:
        lines += ["", *fidelity_lines(fidelity, f"## Fidelity (generated with seed {fidelity.seed} vs original)")]
    if fit.jobs is not None:
        lines += job_report_lines(fit.jobs, fit.model.arrival_profile, None if fidelity is None else fidelity.jobs)
    return "\n".join(lines) + "\n"


def fidelity_lines(fidelity: Fidelity, heading: str, names: tuple[str, str] = ("orig.", "gen.")) -> list[str]:
    """The Markdown table of a :class:`Fidelity` per class, and its inter-arrival KS; ``names``:
    the two inputs' short names."""
    a, b = names
    return [
        heading,
        "",
        f"| class | tasks {a} / {b} | frequency {a} / {b} | makespan KS (two-sample) | mean priority {a} / {b} | width KS |",
        "| --- | --- | --- | --- | --- | --- |",
        *(
            f"| {c.name} | {c.original_tasks} / {c.generated_tasks} | {_g(c.original_frequency)} / "
            f"{_g(c.generated_frequency)} | {_g(c.makespan_ks)} | {_g(c.original_mean_priority)} / "
            f"{_g(c.generated_mean_priority)} | {'-' if c.width_ks is None else _g(c.width_ks)} |"
            for c in fidelity.classes
        ),
        "",
        f"Inter-arrival times, two-sample KS: {_g(fidelity.interarrival_ks)}.",
    ]


def comparison_markdown(fidelity: Fidelity, workload: str, reference: str, rows: tuple[str, str]) -> str:
    """The report of ``compare-workload``: ``fidelity`` of :func:`.fidelity.compare_inputs`
    (the reference first), the inputs' ``rows`` accounts."""
    rates = fidelity.rates
    lines = [
        f"# {workload} against {reference}",
        "",
        f"Reference ({reference}): {rows[0]}.",
        f"Workload ({workload}): {rows[1]}.",
        "Classes: the model paper's a-priori split (Finish-ended tasks, Kill-ended services).",
        "",
        *fidelity_lines(fidelity, "## Laws", ("ref.", "wl.")),
        "",
        "## Rates",
        "",
        f"Submissions per hour over each one's span: reference {_rate(rates.original_rate)}, "
        f"workload {_rate(rates.other_rate)}"
        + (
            f" ({rates.other_rate / rates.original_rate:.4g} times the reference's)."
            if rates.original_rate and rates.other_rate
            else "."
        ),
        "",
    ]
    if rates.hours:
        lines += [
            f"Hourly profile over the {rates.hours} whole hour(s) both span, from each one's first submission "
            f"(an hour's count over its input's mean hourly count): largest gap {_g(rates.worst_profile_gap)}.",
            "",
            "| hour | reference | workload |",
            "| --- | --- | --- |",
            *(
                f"| {hour} | {_g(x)} | {_g(y)} |"
                for hour, (x, y) in enumerate(zip(rates.original_profile, rates.other_profile))
            ),
        ]
    else:
        lines.append("No whole hour in common: no hourly profile.")
    if fidelity.jobs is not None:
        jobs = fidelity.jobs
        lines += [
            "",
            "## Jobs of tasks",
            "",
            f"Jobs: reference {jobs.original_jobs}, workload {jobs.generated_jobs}. Two-sample KS: task gaps "
            f"{_g(jobs.task_gap_ks)}, job gaps {_g(jobs.job_gap_ks)}, tasks per job {_g(jobs.tasks_per_job_ks)}.",
        ]
    return "\n".join(lines) + "\n"


def _rate(rate: float | None) -> str:
    return "- (all at once)" if rate is None else _g(rate)


#: Instants of the load table in the Markdown report (the JSON report and the figure have them all).
LOAD_TABLE_ROWS = 9


def load_lines(load: LoadFidelity | None) -> str:
    """The requested load, input against generated, at the start and over time, in Markdown ('' without)."""
    if load is None:
        return ""
    cpu_error, memory_error = load.errors
    lines = [
        "",
        "## Requested load",
        "",
        f"- input, at its start (tasks running then): {load.input_start.describe()}",
        f"- generated, the model's warm start on {load.machines:,} machines (seed {load.seed}): "
        f"{load.warm_start.describe()}",
        f"- over the input's span, generated against input (mean absolute error over the input's mean"
        f"{load.span_note}): CPU {cpu_error:.1%}, memory {memory_error:.1%}",
        "",
        "| hour | input CPU | generated CPU | input memory | generated memory |",
        "| --- | --- | --- | --- | --- |",
    ]
    rows = np.unique(np.linspace(0, len(load.input.times) - 1, LOAD_TABLE_ROWS).round().astype(int))
    for i in rows:
        lines.append(
            f"| {load.input.times[i] / HOUR:.2f} | {load.input.cpu[i]:,.1f} | {load.generated.cpu[i]:,.1f} | "
            f"{load.input.memory[i]:,.1f} | {load.generated.memory[i]:,.1f} |"
        )
    if load.day is not None:
        lines += [
            "",
            f"- {load.day_note()}",
            "",
            "| hour | tasks | CPU | submitted in the hour before |",
            "| --- | --- | --- | --- |",
        ]
        for index, hour in enumerate(load.day.times / HOUR):
            submitted = f"{load.day.submitted[index - 1]:,}" if index else "-"
            lines.append(f"| {hour:.0f} | {load.day.tasks[index]:,.0f} | {load.day.cpu[index]:,.1f} | {submitted} |")
    return "\n".join(lines) + "\n"


def write_report(
    path: str | Path, fit: ModelFit, source: str, fidelity: Fidelity | None = None, load: LoadFidelity | None = None
) -> None:
    path = Path(path)
    if path.suffix.lower() == ".json":
        mapping = report_mapping(fit, source, fidelity)
        if load is not None:
            mapping["load"] = load.to_mapping()
        text = json.dumps(mapping, indent=1, default=float) + "\n"
    else:
        text = render_markdown(fit, source, fidelity) + load_lines(load)
    write_text(path, text)
