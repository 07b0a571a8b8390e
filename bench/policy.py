"""Benchmark: the scheduler's own decision time as the task count grows, without Batsim.

The workloads of ``bench.scheduler`` ('google' model, seed 1, 512-machine cell, by default at the
Google cell's load per machine, ``--arrival-scale 1`` for its stress test) replayed through
the policy core by a minimal event loop that answers like Batsim would: a job runs for its work (a
service until its walltime), kills and registrations are acknowledged at once. Real Batsim adds
its own cost per event (SimGrid's sharing of machines among thousands of tasks), which
``bench.scheduler`` measures with it; this one isolates how the policy's cost grows.

    uv run python -m bench.policy [--tasks 10000 50000 100000] [--arrival-scale F]
"""

from __future__ import annotations

import argparse
import heapq
import json
import tempfile
import time
from pathlib import Path

from batsim_google.generation.workload import (
    Generation,
    write_generated_workload,
)
from batsim_google.model.presets import preset
from batsim_google.model.request_law import load_request_law
from batsim_google.platform.simgrid_xml import compute_hosts
from batsim_google.scheduling.decisions import Execute, Kill, Register, RegistrationFinished, Reject, WakeAt
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.tasks import JobRequest
from batsim_google.simulation.frontend import cell_policy, job_request
from bench.scheduler import PLATFORM, add_arrival_scale


def replay(policy: CellPolicy, workload: dict) -> tuple[int, float]:
    """Run the workload through ``policy``; (events delivered, seconds spent deciding)."""
    events: list[tuple[float, int, str, object]] = []
    for sequence, job in enumerate(workload["jobs"]):
        delay = workload["profiles"][job["profile"]].get("delay", 0.0)
        request = job_request(f"w0!{job['id']}", job["subtime"], job, job["walltime"], delay)
        events.append((job["subtime"], sequence, "submit", request))
    heapq.heapify(events)
    sequence, left_to_submit, delivered, deciding = len(events), len(events), 0, 0.0
    running: set[str] = set()
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, _, kind, payload = heapq.heappop(events)
            delivered += 1
            if kind == "submit":
                left_to_submit -= 1
                policy.job_submitted(now, payload)
            elif kind == "end" and payload[0] in running:
                running.discard(payload[0])
                policy.job_ended(now, *payload)
            elif kind == "wake":
                policy.woken(now)
        policy.no_more_jobs = policy.no_more_events = left_to_submit == 0
        answers = True
        while answers:  # kills and registrations are answered at once, then the policy decides again
            started = time.perf_counter()
            decisions = policy.decide(now)
            deciding += time.perf_counter() - started
            answers = False
            for decision in decisions:
                if isinstance(decision, Execute):
                    task = policy.by_job[decision.job_id]
                    running.add(decision.job_id)
                    status = "walltime" if task.is_service else "success"
                    heapq.heappush(events, (now + task.remaining, sequence, "end", (decision.job_id, status)))
                elif isinstance(decision, Kill):
                    for job_id in decision.job_ids:
                        running.discard(job_id)
                        policy.job_ended(now, job_id, "killed")
                    answers = True
                elif isinstance(decision, Register):
                    original = policy.by_job[decision.job_id].request
                    policy.job_submitted(
                        now,
                        JobRequest(
                            decision.job_id,
                            now,
                            original.kind,
                            original.priority,
                            original.cpu,
                            original.memory,
                            decision.work,
                        ),
                    )
                    answers = True
                elif isinstance(decision, WakeAt):
                    heapq.heappush(events, (decision.time, sequence, "wake", None))
                elif not isinstance(decision, (Reject, RegistrationFinished)):
                    raise TypeError(f"{decision!r}: this replay runs the always-on policy only")
                sequence += 1
    return delivered, deciding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    add_arrival_scale(parser)
    args = parser.parse_args()
    properties = [host.properties for host in compute_hosts(PLATFORM)]
    seconds = {}
    with tempfile.TemporaryDirectory() as folder:
        for tasks in args.tasks:
            path = Path(folder) / f"workload-{tasks}.json"
            write_generated_workload(
                path,
                preset("google"),
                load_request_law(),
                1,
                Generation(tasks=tasks, nb_res=len(properties), arrival_scale=args.arrival_scale),
            )
            policy = cell_policy(properties, PolicyConfig())
            events, seconds[tasks] = replay(policy, json.loads(path.read_text()))
            outcomes = ", ".join(f"{name} {count}" for name, count in policy.ledger.outcomes().items() if count)
            print(
                f"{tasks:>7} tasks: {events} events, {seconds[tasks]:7.2f} s deciding, "
                f"{seconds[tasks] / events * 1e6:6.1f} us per event, {len(policy.ledger.attempts)} attempts ({outcomes})"
            )
            assert policy.ledger.balanced(), "accounting does not balance"
    base = args.tasks[0]
    for tasks in args.tasks[1:]:
        print(
            f"growth {base} -> {tasks} tasks ({tasks / base:.0f}x): deciding time {seconds[tasks] / seconds[base]:.1f}x"
        )


if __name__ == "__main__":
    main()
