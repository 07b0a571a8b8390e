"""``run``: simulate workloads in Batsim with the Google-cell scheduler."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from batsim_google.simulation.runner import SimulationError
from batsim_google.scheduling.placement import PLACEMENTS
from batsim_google.scheduling.policy_config import ENERGY_POLICIES, RESTARTS
from batsim_google.simulation.run import FRONTENDS, run_google_cell
from batsim_google.cli.common import BATSIM_OPTION, fail, show_progress


@click.command()
@click.option("--platform", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True, help="SimGrid platform XML.")
@click.option("--workload", "workloads", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Batsim JSON workload (repeatable).")
@click.option("--events", "events", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Batsim external events: machine failures, user kills (repeatable).")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for Batsim's outputs and the scheduler's accounting.")
@click.option("--placement", type=click.Choice(list(PLACEMENTS)), default="best-fit", show_default=True)
@click.option("--overcommit", type=click.FloatRange(min=1.0), default=1.0, show_default=True, help="CPU over-commit ratio (memory never is).")
@click.option("--preemption/--no-preemption", default=True, show_default=True, help="Evict lower priorities for a task that fits nowhere.")
@click.option("--priority-levels", type=click.IntRange(min=0), default=12, show_default=True, help="Evict only tasks of a lower level of ]0,1] cut in this many bands (Google's 12); 0: any lower priority.")
@click.option("--restart", type=click.Choice(list(RESTARTS)), default="immediate", show_default=True, help="What evicted tasks do.")
@click.option("--restart-delay", type=click.FloatRange(min=0), default=0.0, show_default=True, help="Seconds suspended before a 'delayed' restart.")
@click.option("--max-restarts", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--resume/--from-scratch", default=False, show_default=True, help="Restart with the work left, or all of it.")
@click.option("--energy", type=click.Choice(list(ENERGY_POLICIES)), default="always-on", show_default=True)
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True, help="Seconds idle before a machine sleeps (idle-sleep).")
@click.option("--wake-before-evicting/--evict-before-waking", default=False, show_default=True, help="idle-sleep: a task that fits nowhere awake waits for a sleeping machine to wake rather than evict.")
@click.option("--timeout", type=click.FloatRange(min=1), default=3600.0, show_default=True, help="Wall-clock limit of the simulation, seconds.")
@click.option("--energy-outputs/--no-energy-outputs", default=True, show_default=True, help="Batsim's energy plugin (-E) and its outputs; needs a platform with an energy model.")
@BATSIM_OPTION
@click.option("--progress/--no-progress", default=None, help="Progress bar over simulated time (default: on a terminal).")
@click.option("--frontend", type=click.Choice(FRONTENDS), default="pybatsim", show_default=True, help="Protocol library between Batsim and the policy (batsim-py: restart 'none', no events; see README).")
def run(platform, workloads, events, output, placement, overcommit, preemption, priority_levels, restart, restart_delay, max_restarts, resume, energy, idle_timeout, wake_before_evicting, timeout, energy_outputs, batsim_binary, progress, frontend) -> None:
    """Simulate workloads with Batsim and the Google-cell scheduler; exit 1 if accounting fails."""
    policy = {
        "placement": placement, "cpu_overcommit": overcommit, "preemption": preemption, "priority_levels": priority_levels,
        "restart": restart, "restart_delay": restart_delay, "max_restarts": max_restarts,
        "resume": resume, "energy": energy, "idle_timeout": idle_timeout, "wake_before_evicting": wake_before_evicting,
    }
    try:
        summary = run_google_cell(
            platform, list(workloads), output, policy, events=list(events), timeout=timeout,
            batsim=batsim_binary, energy=energy_outputs, progress=show_progress(progress),
            frontend=frontend,
        ).summary
    except ImportError as error:
        fail(f"--frontend {frontend} needs the batsim-py extra (uv sync --extra batsim-py): {error}")
    except SimulationError as error:
        raise click.ClickException(str(error)) from error
    except ValueError as error:  # what the batsim-py front-end cannot run
        fail(str(error))
    outcomes = ", ".join(f"{count} {name}" for name, count in summary["outcomes"].items() if count)
    click.echo(f"{summary['submitted']} tasks: {outcomes}; {summary['attempts']} attempts")
    click.echo(f"outputs in {output}")
    if not summary["balanced"]:
        click.echo(f"accounting does not balance: {summary['open']} task(s) never ended", err=True)
        sys.exit(1)
