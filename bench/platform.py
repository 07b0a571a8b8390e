"""Benchmark: writing the full-cell platform, and Batsim loading it with a 1,000-job workload.

- Writing: this package's writer (column-wise with polars) against a straightforward
  xml.etree.ElementTree writer of the same hosts and properties, in the same run.
- Batsim: wall time and peak resident memory (the Batsim process's own rusage) of a complete
  simulation of a 1,000-job generated workload with fillerSched, on the full cell and,
  as the baseline, on the 64-machine cell; with and without the energy plugin (-E). The peak is
  the Batsim process's own (see batsim_google.simulation.runner).
  Target: Batsim's peak memory < 300 MB on the full cell.

    uv run python -m bench.platform [--jobs 1000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.cell import Cell, google_2011_cell
from batsim_google.platform.energy import EnergyModel, load_energy_model
from batsim_google.platform.simgrid_xml import CORE_SPEED, SLEEP_PSTATES, cores, host_names, write_platform
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation

MB = 1 << 20
TARGET_MB = 300


def element_tree_writer(path: Path, cell: Cell, energy: EnergyModel) -> None:
    """Baseline: one ElementTree element per host, link and property."""
    root = ET.Element("platform", version="4.1")
    zone = ET.SubElement(root, "zone", id="cell", routing="Cluster")
    for name, (platform_id, cpu, memory) in zip(host_names(len(cell)), cell.machines.iter_rows()):
        profile = energy.profile(platform_id, cpu)
        speeds = [CORE_SPEED, 1e-3, 1 / profile.switch_off_seconds, 1 / profile.switch_on_seconds]
        host = ET.SubElement(
            zone, "host", id=name, speed=", ".join(f"{s!r}f" for s in speeds), core=str(cores(cpu)), pstate="0"
        )
        watts = [
            (profile.idle, profile.epsilon, profile.full),
            (profile.sleep,) * 3,
            (profile.switch_off_watts,) * 3,
            (profile.switch_on_watts,) * 3,
        ]
        properties = {
            "wattage_per_state": ", ".join(":".join(map(repr, state)) for state in watts),
            "wattage_off": repr(profile.off),
            "sleep_pstates": SLEEP_PSTATES,
            "platform_id": platform_id,
            "cpu_capacity": repr(cpu),
            "memory_capacity": repr(memory),
        }
        for key, value in properties.items():
            ET.SubElement(host, "prop", id=key, value=value)
        ET.SubElement(zone, "link", id=f"{name}_link", bandwidth="125MBps", latency="0us", sharing_policy="SPLITDUPLEX")
        ET.SubElement(zone, "host_link", id=name, up=f"{name}_link_UP", down=f"{name}_link_DOWN")
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5, help="writes timed (best of)")
    args = parser.parse_args()
    energy = load_energy_model()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        full = folder / "full.xml"
        ours = min(timed(lambda: write_platform(full, google_2011_cell(), energy)) for _ in range(args.repeat))
        baseline = min(
            timed(lambda: element_tree_writer(folder / "etree.xml", google_2011_cell(), energy))
            for _ in range(args.repeat)
        )
        print(f"write full cell ({full.stat().st_size / MB:.1f} MB): {ours * 1000:8.1f} ms")
        print(f"ElementTree baseline          : {baseline * 1000:8.1f} ms   ratio {baseline / ours:.1f}x")
        if shutil.which("batsim") is None:
            print("no 'batsim' on PATH: Batsim figures skipped")
            return
        small = folder / "small.xml"
        write_platform(small, google_2011_cell(64), energy)
        baseline_runs = {}
        for platform, machines in ((small, 64), (full, 12_583)):
            workload = folder / f"workload-{machines}.json"
            write_generated_workload(
                workload, preset("google"), load_request_law(), 1, Generation(tasks=args.jobs, nb_res=machines)
            )
            for use_energy in (False, True):
                run = run_simulation(
                    Simulation(
                        platform,
                        [workload],
                        folder / f"out-{machines}-{use_energy}",
                        pybatsim_scheduler("fillerSched", timeout_ms=1_800_000),
                        energy=use_energy,
                        timeout=1800,
                    )
                )
                line = (
                    f"batsim {'-E' if use_energy else '  '} {machines:>6} machines, {args.jobs} jobs: "
                    f"{run.wall_seconds:7.2f} s, peak RSS {run.batsim_peak_rss / MB:7.1f} MB"
                )
                if machines == 64:
                    baseline_runs[use_energy] = run
                else:
                    base = baseline_runs[use_energy]
                    verdict = "met" if run.batsim_peak_rss < TARGET_MB * MB else "MISSED"
                    line += (
                        f"   vs 64 machines: time {run.wall_seconds / base.wall_seconds:.1f}x, memory "
                        f"{run.batsim_peak_rss / base.batsim_peak_rss:.1f}x   (target < {TARGET_MB} MB: {verdict})"
                    )
                print(line)


if __name__ == "__main__":
    main()
