"""Benchmark: what the scheduler's process costs per Batsim message, without Batsim.

A run's scheduler process reads each of Batsim's messages (JSON), hands its events to the policy
through pybatsim and this package's front-end, and answers with the decisions (JSON). This
benchmark records the messages of one real run (``--workload`` on ``--platform`` with the default
policy, ``--horizon``; or ``--messages`` of an earlier recording) and replays them in this process,
answered by the same front-end, so that the process's own CPU time is measured apart from
Batsim's and from the machine's load. The answers are Batsim's to the same messages only if the
decisions are the same: each replay prints the digest of its answers and of the attempts and
tasks it wrote, and the digests must be equal between the variants.

Each round replays the messages with pybatsim as it is (the baseline) and with the front-end's
fast message handling (:mod:`batsim_google.simulation.pybatsim_messages`, one ProcSet per machine), in turn, and prints the CPU
seconds of each, per message and per job event, with the ratio. ``--profile`` prints where the
baseline's time goes (cProfile, by function).

    uv run python -m bench.protocol --workload hour0.json --platform platforms/google-2011-cell.xml --horizon 3600 [--rounds 3]
    uv run python -m bench.protocol --messages messages.ndjson [--profile]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import tempfile
import time
from pathlib import Path

from batsim.batsim import Batsim
from batsim.network import NetworkHandler
from procset import ProcSet

from batsim_google.scheduling.decisions import Execute
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.frontend import FrontEndOptions
from batsim_google.simulation.googleCell import GoogleCell, complete_kill_progress
from batsim_google.simulation.run import batsim_options
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation

RECORDER = Path(__file__).with_name("recordingCell.py")
OPTIONS_FILE = "options.json"


def record(workload: Path, platform: Path, horizon: float, folder: Path, batsim: str, timeout: float) -> Path:
    """Run the default policy on ``workload`` in Batsim, recording Batsim's messages; their file."""
    messages = folder / "messages.ndjson"
    options = FrontEndOptions(
        policy=dataclasses.asdict(dataclasses.replace(PolicyConfig(), horizon=horizon)),
        platform=str(platform.resolve()),
        output=str(folder / "recorded" / "out"),
    ).to_json()
    (folder / "recorded").mkdir(parents=True, exist_ok=True)
    (folder / OPTIONS_FILE).write_text(json.dumps(options))
    simulation = Simulation(
        platform=platform,
        workloads=[workload],
        output=folder / "recorded",
        scheduler=pybatsim_scheduler(str(RECORDER), {**options, "record": str(messages)}, int(timeout * 1000)),
        energy=True,
        batsim_options=batsim_options(CellPolicy.needs, False),
        timeout=timeout,
        batsim=batsim,
    )
    started = time.perf_counter()
    run_simulation(simulation)
    print(f"recorded {workload} in {time.perf_counter() - started:.1f} s of wall time: {messages}")
    return messages


class ReplayedNetwork(NetworkHandler):
    """Batsim's side of the socket, played from a recording: pybatsim's own decoding and encoding
    run as in a real run; the answers are hashed, not sent."""

    lines: list[str] = []

    def __init__(self, socket_endpoint, timeout=2000, type=None) -> None:
        super().__init__(socket_endpoint, timeout)
        self.next = iter(self.lines)
        self.answers = hashlib.sha256()
        ReplayedNetwork.last = self

    def bind(self) -> None:
        self.connection = True

    def close(self) -> None:
        self.connection = None

    def recv_string(self, blocking: bool = False) -> str:
        return next(self.next)

    def send_string(self, msg: str) -> None:
        self.answers.update(msg.encode())


@dataclasses.dataclass
class Replay:
    cpu_seconds: float
    decision_seconds: float
    messages: int
    answers: str
    attempts: str


class PybatsimAsItIs(GoogleCell):
    """The front-end with pybatsim's message handling as it is: every message formatted for its
    log, a new ProcSet per job started (the baseline)."""

    def onAfterBatsimInit(self) -> None:
        receive = self.bs.network.recv
        self.bs.network.recv = lambda blocking=False: complete_kill_progress(receive(blocking=blocking))

    def execute(self, decision: Execute) -> None:
        job = self.bs.jobs[decision.job_id]
        job.allocation = ProcSet(decision.machine)
        self.bs.execute_job(job)


def replay(lines: list[str], options: dict, output: Path, fast: bool) -> Replay:
    """Replay the recorded ``lines`` through the front-end (``fast``) or the baseline."""
    import batsim.batsim as pybatsim_module

    ReplayedNetwork.lines = lines
    saved = pybatsim_module.NetworkHandler
    pybatsim_module.NetworkHandler = ReplayedNetwork
    try:
        output.mkdir(parents=True, exist_ok=True)
        scheduler = (GoogleCell if fast else PybatsimAsItIs)({**options, "output": str(output / "out")})
        started = time.process_time()
        bs = Batsim(scheduler, "replay", 0)
        bs.start()
        cpu = time.process_time() - started
    finally:
        pybatsim_module.NetworkHandler = saved
    attempts = hashlib.sha256()
    for name in ("out_attempts.csv", "out_tasks.csv"):
        attempts.update((output / name).read_bytes())
    return Replay(
        cpu,
        scheduler.decision_seconds,
        scheduler.messages,
        ReplayedNetwork.last.answers.hexdigest()[:16],
        attempts.hexdigest()[:16],
    )


def job_events(lines: list[str]) -> int:
    """Job submissions and completions in the recording."""
    return sum(line.count('"type":"JOB_SUBMITTED"') + line.count('"type":"JOB_COMPLETED"') for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=Path)
    parser.add_argument("--platform", type=Path, default=Path("platforms/google-2011-cell.xml"))
    parser.add_argument("--horizon", type=float, default=0.0)
    parser.add_argument("--batsim", default="batsim-patched")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--messages", type=Path, help="a recording of an earlier run (its options.json beside it)")
    parser.add_argument("--keep", type=Path, help="a folder to keep the recording in")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        messages = args.messages or record(
            args.workload, args.platform, args.horizon, folder, args.batsim, args.timeout
        )
        options = json.loads(messages.with_name(OPTIONS_FILE).read_text())
        lines = messages.read_text().splitlines()
        events = job_events(lines)
        print(f"{len(lines)} messages, {events} job events (submissions and completions)")
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            replay(lines, options, Path(scratch) / "profiled", fast=False)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
            return
        for round_ in range(args.rounds):
            for fast in (False, True):
                result = replay(lines, options, Path(scratch) / f"replay-{round_}-{fast}", fast)
                print(
                    f"round {round_ + 1} {'fast' if fast else 'pybatsim'}: {result.cpu_seconds:.2f} CPU s "
                    f"({result.cpu_seconds / len(lines) * 1e6:.0f} us a message, "
                    f"{result.cpu_seconds / events * 1e6:.0f} us a job event), in callbacks {result.decision_seconds:.2f} s; "
                    f"answers {result.answers}, attempts and tasks {result.attempts}"
                )


if __name__ == "__main__":
    main()
