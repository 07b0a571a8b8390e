"""The trace statistics' tables written out: as the paper prints them, as CSV rows, as JSON.

The tables are :meth:`batsim_google.trace.stats.TraceStats.tables`' dictionary; nothing here
computes a statistic.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from batsim_google.trace.stats import GROUPS


def render_text(tables: dict[str, Any]) -> str:
    """The tables as the paper prints them (one block per table)."""
    out = io.StringIO()
    t1 = tables["table1_events_per_task"]
    dropped = (
        f"; {t1['synthesized_tasks_dropped']} with a synthesized event left out"
        if "synthesized_tasks_dropped" in t1
        else ""
    )
    out.write(
        f"Table 1. Events per task ({t1['total']} tasks, {t1['open_at_end']} still open at the end of the input{dropped})\n"
    )
    out.write(_row("events", t1["events"] + ["total"]) + _row("tasks", t1["tasks"] + [t1["total"]]))
    t2 = tables["table2_end_of_three_event_tasks"]
    out.write(f"\nTable 2. End event of the {t2['total']} tasks with three events\n")
    out.write(_row("event", t2["event"]) + _row("tasks", t2["tasks"]) + _row("percent", _pct(t2["percent"])))
    t3 = tables["table3_scheduling_class"]
    out.write(f"\nTable 3. Scheduling class ({t3['total']} tasks of three events: Submit, Schedule, Finish or Kill)\n")
    out.write(_row("class", t3["class"]) + _row("tasks", t3["tasks"]) + _row("percent", _pct(t3["percent"])))
    t4 = tables["table4_priority"]
    out.write("\nTable 4. Priority\n" + _row("priority", t4["priority"]) + _row("tasks", t4["tasks"]))
    t5 = tables["table5_priority_group"]
    out.write("\nTable 5. Priority group\n" + _row("group", t5["group"]) + _row("priorities", t5["priorities"]))
    out.write(_row("tasks", t5["tasks"]) + _row("percent", _pct(t5["percent"])))
    for key, title in (
        ("table6_makespan_finish", "Table 6. Makespan (s) of tasks ended by Finish"),
        ("table7_makespan_kill", "Table 7. Makespan (s) of tasks ended by Kill"),
    ):
        table = tables[key]
        censored = table["censored"]
        out.write(
            f"\n{title} (makespan unknown: {censored['scheduled_before_window']} scheduled before the window, "
            f"{censored['ended_after_window']} ended after it)\n"
        )
        out.write(_row("group", ["count", "mean", "std", "median"]))
        for group in [*GROUPS, "all"]:
            stats = table[group]
            out.write(_row(group, [stats["count"], _num(stats["mean"]), _num(stats["std"]), _num(stats["median"])]))
    arrivals = tables["interarrival"]
    out.write(
        f"\nInter-arrival: mean {_num(arrivals['submissions']['mean'], 4)} s between submissions "
        f"({arrivals['submissions']['count']} gaps), {_num(arrivals['new_tasks']['mean'], 4)} s between new tasks\n"
    )
    return out.getvalue()


def _row(label: str, cells: list) -> str:
    return f"{label:<11}" + "".join(f"{str(cell):>11}" for cell in cells) + "\n"


def _num(value: float, decimals: int = 1) -> str:
    return "NA" if value != value else f"{value:.{decimals}f}"


def _pct(values: list[float]) -> list[str]:
    return [f"{_num(v, 2)}%" if v == v else "NA" for v in values]


def render_csv(tables: dict[str, Any]) -> str:
    """Long format: table, row, column, value."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["table", "row", "column", "value"])
    for name, table in tables.items():
        for row, value in _flatten(table):
            column = row.rsplit(".", 1)
            writer.writerow([name, column[0] if len(column) > 1 else "", column[-1], value])
    return out.getvalue()


def _flatten(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows = []
    labels = next((table[k] for k in ("events", "event", "class", "priority", "group") if k in table), None)
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, f"{path}.")
        elif isinstance(value, list) and labels is not None and value is not labels:
            rows += [(f"{label}.{key}", item) for label, item in zip(labels, value)]
        elif not isinstance(value, list):
            rows.append((path, value))
    return rows


def render_json(tables: dict[str, Any]) -> str:
    """Strict JSON: an undefined statistic (NaN, e.g. the mean of no task) is null."""
    return json.dumps(_nan_to_none(tables), indent=1, allow_nan=False) + "\n"


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _nan_to_none(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(item) for item in value]
    if isinstance(value, float) and value != value:
        return None
    return value
