"""Work done beside every cost: a warning when the schedulers compared in one scenario (same
platform, workload and failures) delivered different work.

A policy that saves energy by abandoning or never running tasks looks cheap; energy and waiting
compare fairly only over the same work. The delivered CPU-seconds (:mod:`.metrics`) of the
policies of a scenario, averaged over its seeds, differing by more than ``WORK_TOLERANCE`` of the
largest, the summary says so. Likewise a scheduler that refused jobs (``jobs_refused``: Batsim's
``REJECTED`` but for the tasks open at a horizon; a planner given jobs without walltime, jobs
wider than the platform...) is flagged on its rows: its
figures are over fewer jobs than the others', not to be ranked with them.
"""

from __future__ import annotations

import polars as pl

#: Share of the largest delivered work by which the policies of a scenario may differ unremarked.
WORK_TOLERANCE = 0.01
SCENARIO = ["platform", "workload", "failures"]
DELIVERED = "delivered_cpu_s"
REFUSED_JOBS = "jobs_refused"


def work_warnings(summary: pl.DataFrame) -> dict[tuple, str]:
    """Per scenario (platform, workload, failures) whose policies' mean delivered CPU-seconds differ
    by more than the tolerance, the warning (schedulers without the ledger, whose work is not
    known, left out)."""
    delivered = summary.filter((pl.col("metric") == DELIVERED) & pl.col("mean").is_not_null())
    warnings = {}
    for scenario, group in delivered.group_by(SCENARIO, maintain_order=True):
        largest = group["mean"].max()
        spread = (largest - group["mean"].min()) / largest if largest else 0.0
        if group.height > 1 and spread > WORK_TOLERANCE:
            per_policy = ", ".join(f"{p} {v / 3600:.4g}" for p, v in group.select("policy", "mean").iter_rows())
            warnings[tuple(scenario)] = (
                f"{'/'.join(map(str, scenario))}: the policies delivered different work (CPU-hours: {per_policy}; "
                f"{spread:.1%} apart, more than {WORK_TOLERANCE:.0%}): compare their costs with care"
            )
    return warnings


def rejection_warnings(summary: pl.DataFrame) -> dict[tuple, str]:
    """Per scenario and policy whose runs rejected jobs, the warning."""
    rejected = summary.filter((pl.col("metric") == REFUSED_JOBS) & (pl.col("mean") > 0))
    warnings = {}
    for row in rejected.iter_rows(named=True):
        key = tuple(row[k] for k in (*SCENARIO, "policy"))
        warnings[key] = (
            f"{'/'.join(map(str, key[:3]))} [{key[3]}]: refused {row['mean']:.4g} jobs per run on average: "
            "its figures cover fewer jobs than a scheduler that ran them all; do not rank it with them "
            "(metrics.json's rejected_by_reason says why)"
        )
    return warnings


def with_work_warnings(summary: pl.DataFrame) -> pl.DataFrame:
    """The summary with a ``warning`` column: the scenario's warning and its policy's rejection
    warning on its rows, else null."""
    scenario_warnings, policy_warnings = work_warnings(summary), rejection_warnings(summary)

    def warning(row: dict) -> str | None:
        scenario = tuple(row[k] for k in SCENARIO)
        found = [scenario_warnings.get(scenario), policy_warnings.get((*scenario, row["policy"]))]
        return "; ".join(text for text in found if text) or None

    return summary.with_columns(
        pl.struct([*SCENARIO, "policy"]).map_elements(warning, return_dtype=pl.String).alias("warning")
    )
