"""Benchmark: the scheduler's time 0 on a generated warm start of the full cell, without Batsim.

A warm start submits the cell's stationary state at time 0 (``generate --preset google-2011-cell
--warm-start --nb-res 12583``: 133,172 tasks for seed 1), without machines. This replays time 0
through the policy core twice in the same run: the tasks placed together
(:mod:`batsim_google.scheduling.initial_placement`, the scheduler's way), and the same tasks
submitted as ordinary ones with no placement latency, the queue placing them one by one (its way
before). It prints each way's CPU seconds (submissions and the pass), the tasks started and left
pending, the evictions, the wake-ups wanted and those asked of Batsim, each of which is a waiting
actor in Batsim that every step scans.

    uv run python -m bench.warm_start [--machines N] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from batsim_google.generation.workload import Generation, write_generated_workload
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.scheduling.decisions import Execute, Kill, WakeAt
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.simulation.frontend import job_request

PLATFORM = Path(__file__).resolve().parent.parent / "platforms" / "google-2011-cell.xml"


def time_zero(cpu: np.ndarray, memory: np.ndarray, requests: list[JobRequest], together: bool) -> dict:
    """Submit ``requests`` at time 0 and run the pass; its figures."""
    config = PolicyConfig() if together else PolicyConfig(placement_latency=0.0)
    policy = CellPolicy(cpu, memory, config)
    if not together:  # ordinary tasks: the queue's pass places them one by one
        requests = [JobRequest(r.job_id, 0.0, r.kind, r.priority, r.cpu, r.memory, r.work) for r in requests]
    started = time.process_time()
    for request in requests:
        policy.job_submitted(0.0, request)
    decisions = policy.decide(0.0)
    seconds = time.process_time() - started
    cluster = policy.cluster
    return {
        "cpu_seconds": seconds,
        "started": sum(isinstance(d, Execute) for d in decisions),
        "pending": len(policy.pending),
        "evicted": sum(len(d.job_ids) for d in decisions if isinstance(d, Kill)),
        "wanted": len(policy._wake_ups),
        "asked": sum(isinstance(d, WakeAt) for d in decisions),
        "cpu_requested": cluster.cpu_used.sum() / cluster.cpu_capacity.sum(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, help="the platform's first N machines only (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    hosts = compute_hosts(PLATFORM)[: args.machines]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "warm.json"
        model = preset("google-2011-cell")
        write_generated_workload(
            path, model, load_request_law(), args.seed, Generation(duration=1.0, nb_res=len(hosts), warm=True)
        )
        workload = json.loads(path.read_text())
    requests = [
        job_request(
            f"w0!{job['id']}", 0.0, job, job["walltime"], workload["profiles"][job["profile"]].get("delay", 0.0)
        )
        for job in workload["jobs"]
        if job.get("initial") == "running"
    ]
    cpu = np.array([float(host.properties.get("cpu_capacity", 1.0)) for host in hosts])
    memory = np.array([float(host.properties.get("memory_capacity", 1.0)) for host in hosts])
    print(f"warm start: {len(requests):,} tasks at time 0 on {len(cpu):,} machines")
    figures = {}
    for name, together in (("one by one", False), ("together", True)):
        figures[name] = f = time_zero(cpu, memory, requests, together)
        print(
            f"{name:>10}: {f['cpu_seconds']:6.2f} CPU s, {f['started']:,} started, {f['pending']:,} pending, "
            f"{f['evicted']:,} evicted, CPU requested {f['cpu_requested']:.3f} of capacity; "
            f"wake-ups wanted {f['wanted']:,} (each asked of Batsim before), asked now {f['asked']:,}"
        )
    ratio = figures["one by one"]["cpu_seconds"] / figures["together"]["cpu_seconds"]
    print(f"time 0 placed together: {ratio:.1f}x less CPU than one by one")


if __name__ == "__main__":
    main()
