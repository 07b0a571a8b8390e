"""Benchmark: what the scheduler's process costs per Batsim message, without Batsim, before and after.

A run's scheduler process reads each of Batsim's messages (JSON), hands its events to the policy
through pybatsim and this package's front-end, and answers with the decisions (JSON). This
benchmark records the messages of one real run (``--workload`` on ``--platform`` with the default
policy and ``--horizon``, the patched Batsim with energy; or ``--messages``, an earlier recording
with its ``options.json`` beside it) and replays them through the front-end in a fresh process,
without a socket, so that the process's own CPU time is measured apart from Batsim's and, as CPU
time, mostly apart from the machine's load.

Each round replays the messages with the code of ``--baseline`` (a git revision) and with this
tree's, in turn, and prints the CPU seconds of each, per message and per job event, then the best
of each and their ratio. Batsim would answer the same only to the same decisions: each replay
prints the digest of its answers and of the attempts and tasks it wrote (the tasks' rows sorted: they
are written in the order the tasks ended, in submission order before), which must be equal.

With ``--stream`` the run recorded streams its workload (``run --stream-workload``). With
``--memory S``, each replay reads the recording line by line instead of holding it, and notes every S
seconds of simulated time the process's resident memory and its peak, the memory blocks Python
has allocated (``sys.getallocatedblocks``: strings and floats too) and the objects the garbage
collector tracks (containers only), so that what grows with the run's length shows.

    uv run python -m bench.protocol --workload hour0.json --horizon 3600 [--keep DIR] [--rounds 2] [--stream]
    uv run python -m bench.protocol --messages DIR/messages.ndjson [--baseline REV] [--memory 21600]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from batsim.batsim import Batsim
from batsim.network import NetworkHandler

from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.frontend import FrontEndOptions
from batsim_google.simulation.run import batsim_options
from batsim_google.simulation.runner import Simulation, pybatsim_scheduler, run_simulation

ROOT = Path(__file__).resolve().parents[1]
RECORDER = Path(__file__).with_name("recordingCell.py")
#: The commit whose decisions are the defaults' (those of Borg's passes, dd86e42) and that knows
#: every option a recording carries (the preemption delay's spread, off by default): a change
#: since that answers Batsim otherwise changed a decision (docs/benchmarks.md).
BASELINE = "94b90e9"
OPTIONS_FILE = "options.json"
#: A recorded message's simulated time (Batsim writes it first).
NOW = re.compile(r'"now":([-+.0-9eE]+)')
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MB = 1 << 20


def record(
    workload: Path, platform: Path, horizon: float, folder: Path, batsim: str, timeout: float, stream: bool = False
) -> Path:
    """Run the default policy on ``workload`` in Batsim, recording Batsim's messages; their file.
    ``stream``: the workload streamed (``run --stream-workload``), Batsim given its stub."""
    messages = folder / "messages.ndjson"
    options = FrontEndOptions(
        policy=dataclasses.asdict(dataclasses.replace(PolicyConfig(), horizon=horizon)),
        platform=str(platform.resolve()),
        output=str(folder / "recorded" / "out"),
        stream=[str(workload.resolve())] if stream else (),
        stream_profile_uses=str(folder / "profile_uses.json") if stream else None,
    ).to_json()
    (folder / "recorded").mkdir(parents=True, exist_ok=True)
    (folder / OPTIONS_FILE).write_text(json.dumps(options))
    workloads = [workload]
    if stream:  # imported here: a replay imports this module with a baseline's package, maybe without it
        from batsim_google.simulation.streamed_submissions import write_profile_uses, write_stub_workloads

        workloads = [folder / "recorded" / "stub_w0.json"]
        write_stub_workloads(workloads, [workload.resolve()])
        write_profile_uses(folder / "profile_uses.json", [workload.resolve()])
    simulation = Simulation(
        platform=platform,
        workloads=workloads,
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

    lines: Iterable[str] = []
    #: Simulated seconds between memory samples (None: none taken).
    sample_every: float | None = None

    def __init__(self, socket_endpoint, timeout=2000, type=None) -> None:
        super().__init__(socket_endpoint, timeout)
        self.next = iter(self.lines)
        self.answers = hashlib.sha256()
        self.samples: list[tuple[float, int, int, int, int]] = []
        self._sample_at = 0.0
        ReplayedNetwork.last = self

    def bind(self) -> None:
        self.connection = True

    def close(self) -> None:
        self.connection = None

    def recv_string(self, blocking: bool = False) -> str:
        line = next(self.next)
        if self.sample_every is not None:
            now = float(NOW.search(line, 0, 100).group(1))
            if now >= self._sample_at:
                self.samples.append(memory_sample(now))
                self._sample_at = now + self.sample_every
        return line

    def send_string(self, msg: str) -> None:
        self.answers.update(msg.encode())


def memory_sample(now: float) -> tuple[float, int, int, int, int]:
    """(simulated time, resident bytes, peak resident bytes, Python's allocated blocks, objects the
    garbage collector tracks) of this process."""
    resident = int(Path("/proc/self/statm").read_text().split()[1]) * PAGE_BYTES
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(int(row.split()[1]) for row in status if row.startswith("VmHWM:")) * 1024
    return now, resident, peak, sys.getallocatedblocks(), len(gc.get_objects())


@dataclasses.dataclass
class Replay:
    """One replay: the process's CPU seconds in it, the messages, the digests of its answers and
    of the attempts and tasks it wrote, and its memory samples (:func:`memory_sample`)."""

    cpu_seconds: float
    messages: int
    answers: str
    attempts: str
    memory: list = dataclasses.field(default_factory=list)


def replay(messages: Path, output: Path, sample_every: float | None = None) -> Replay:
    """Replay the recorded ``messages`` through the front-end of the code this process imports
    (``sample_every``: the recording read line by line, memory sampled that often)."""
    import batsim.batsim as pybatsim_module

    from batsim_google.simulation.googleCell import GoogleCell

    ReplayedNetwork.sample_every = sample_every
    ReplayedNetwork.lines = messages.read_text().splitlines() if sample_every is None else messages.open()
    options = json.loads(messages.with_name(OPTIONS_FILE).read_text())
    saved = pybatsim_module.NetworkHandler
    pybatsim_module.NetworkHandler = ReplayedNetwork
    try:
        output.mkdir(parents=True, exist_ok=True)
        scheduler = GoogleCell({**options, "output": str(output / "out")})
        started = time.process_time()
        Batsim(scheduler, "replay", 0).start()
        cpu = time.process_time() - started
    finally:
        pybatsim_module.NetworkHandler = saved
    network = ReplayedNetwork.last
    if sample_every is not None:
        network.samples.append(memory_sample(math.inf))  # after the end: the outputs written
        ReplayedNetwork.lines.close()
    attempts = hashlib.sha256((output / "out_attempts.csv").read_bytes())
    header, *rows = (output / "out_tasks.csv").read_bytes().splitlines(keepends=True)
    attempts.update(header + b"".join(sorted(rows)))  # tasks in the order they ended, or submitted before
    digest = attempts.hexdigest()[:16]
    return Replay(cpu, scheduler.messages, network.answers.hexdigest()[:16], digest, network.samples)


def replay_with(code: Path, messages: Path, output: Path, sample_every: float | None = None) -> Replay:
    """:func:`replay` in a fresh process importing the package from ``code`` (a checkout's root)."""
    script = (
        "import dataclasses, json, sys; from pathlib import Path; import batsim_google; "
        "from bench.protocol import replay; every = json.loads(sys.argv[3]); "
        "result = dataclasses.asdict(replay(Path(sys.argv[1]), Path(sys.argv[2]), every)); "
        "print(json.dumps({**result, 'code': batsim_google.__file__}))"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", script, str(messages), str(output), json.dumps(sample_every)],
        env=environment,
        cwd=output.parent,  # not the repository's root, whose package would come first
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"replay with {code} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.splitlines()[-1])
    if not Path(result.pop("code")).is_relative_to(code):
        raise SystemExit(f"the replay did not import the package from {code}")
    return Replay(**result)


def checkout(revision: str, folder: Path) -> Path:
    """The package as it was at ``revision`` (git archive), under ``folder``."""
    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", revision, "batsim_google"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def job_events(messages: Path) -> int:
    """Job submissions and completions in the recording."""
    with messages.open() as lines:
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
    parser.add_argument("--stream", action="store_true", help="record the workload streamed, not loaded")
    parser.add_argument("--baseline", default=BASELINE, help="the git revision whose code is the baseline")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--memory", type=float, metavar="S", help="sample the memory every S simulated seconds")
    args = parser.parse_args()
    if not (args.workload or args.messages):
        parser.error("give --workload (recorded here) or --messages (an earlier recording)")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        folder = args.keep or scratch
        messages = args.messages or record(
            args.workload, args.platform, args.horizon, folder, args.batsim, args.timeout, args.stream
        )
        count = sum(1 for _ in messages.open())
        events = job_events(messages)
        print(f"{count} messages, {events} job events (submissions and completions)")
        codes = {f"baseline {args.baseline}": checkout(args.baseline, scratch / "baseline"), "this tree": ROOT}
        seconds: dict[str, list[float]] = {name: [] for name in codes}
        digests = set()
        for round_ in range(args.rounds):
            for name, code in codes.items():
                folder = scratch / f"replay-{round_}-{len(seconds[name])}-{hash(name)}"
                result = replay_with(code, messages, folder, args.memory)
                seconds[name].append(result.cpu_seconds)
                digests.add((result.answers, result.attempts))
                print(
                    f"round {round_ + 1}, {name:>17}: {result.cpu_seconds:6.2f} CPU s, "
                    f"{result.cpu_seconds / count * 1e6:4.0f} us a message, "
                    f"{result.cpu_seconds / events * 1e6:4.0f} us a job event; "
                    f"answers {result.answers}, attempts and tasks {result.attempts}"
                )
                for now, resident, peak, blocks, objects in result.memory:
                    print(
                        f"  at {'the end' if now == math.inf else f'{now:,.0f} s':>11}: resident {resident / MB:5.0f} MB, "
                        f"peak {peak / MB:5.0f} MB, {blocks:,} blocks allocated, {objects:,} objects tracked"
                    )
        best = {name: min(values) for name, values in seconds.items()}
        base, this = best[f"baseline {args.baseline}"], best["this tree"]
        print(f"best of {args.rounds}: baseline {base:.2f} CPU s, this tree {this:.2f} CPU s: {this / base:.2f}x")
        print(f"same answers and attempts: {len(digests) == 1}")


if __name__ == "__main__":
    main()
