"""The ledger streamed to its files as the run goes: the same rows as a ledger written whole at the
end, with only the tasks not ended kept in memory, and nothing in place before the run ends."""

from __future__ import annotations

import csv

import numpy as np
from fake_batsim import FakeBatsim

from batsim_google.output_files import TEMPORARY_PREFIX
from batsim_google.scheduling.ledger_files import LedgerWriter, write_ledger
from batsim_google.scheduling.policy import CellPolicy
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.scheduling.tasks import JobRequest, TaskState


def run_cell(prefix, stream: bool, seed: int = 7) -> tuple[FakeBatsim, list[tuple[int, int, int]]]:
    """A calibrated cell of 3 machines under 120 random tasks (evictions, restarts, reclaims,
    failures, a horizon): the ledger streamed to ``prefix`` from the start, or written whole at the
    end. Also (tasks held, tasks not ended, attempts held) after each submission."""
    rng = np.random.default_rng(seed)
    config = PolicyConfig(horizon=4000.0, reclaim_rate=300.0, restart="delayed", restart_delay=60.0)
    sim = FakeBatsim(CellPolicy(np.array([1.0, 0.5, 0.5]), np.array([1.0, 0.5, 0.25]), config))
    ledger = sim.policy.ledger
    if stream:
        ledger.stream_to(LedgerWriter(prefix))
    held = []
    for index in range(120):
        sim.advance(sim.now + float(rng.exponential(30.0)))
        if sim.running and rng.random() < 0.5:
            sim.complete(sorted(sim.running)[int(rng.integers(len(sim.running)))])
        if index == 60:
            sim.policy.machines_unavailable(sim.now, [1])
            sim.step()
        if index == 80:
            sim.policy.machines_available(sim.now, [1])
            sim.step()
        priority, cpu, memory = rng.choice([0.1, 0.4, 0.9]), rng.uniform(0.05, 0.6), rng.uniform(0.05, 0.4)
        sim.submit(JobRequest(f"w0!{index}", sim.now, "task", priority, cpu, memory, float(rng.exponential(200.0))))
        held.append((len(ledger.tasks), ledger.open, len(ledger.attempts)))
    sim.advance(5000.0)
    sim.policy.no_more_jobs = True
    sim.step()
    assert sim.finished and ledger.balanced()
    return sim, held


def rows(path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_a_streamed_ledger_writes_the_rows_of_one_written_whole(tmp_path):
    whole, _ = run_cell(tmp_path / "whole", stream=False)
    summary = write_ledger(whole.policy.ledger, tmp_path / "whole")
    streamed, held = run_cell(tmp_path / "streamed", stream=True)
    assert not (tmp_path / "streamed_tasks.csv").exists()  # in place only once complete
    assert write_ledger(streamed.policy.ledger, tmp_path / "streamed") == summary
    assert summary["attempts"] > summary["submitted"] == 120 and summary["outcomes"]["censored"] > 0
    assert (tmp_path / "streamed_attempts.csv").read_bytes() == (tmp_path / "whole_attempts.csv").read_bytes()
    header, *by_end = rows(tmp_path / "streamed_tasks.csv")
    whole_header, *by_submission = rows(tmp_path / "whole_tasks.csv")
    assert header == whole_header and sorted(by_end) == sorted(by_submission) != by_end
    ended = [float(row[header.index("ended")]) for row in by_end]
    assert ended == sorted(ended)  # in the order the tasks got their outcome
    assert [row[0] for row in by_submission] == [f"w0!{i}" for i in range(120)]
    assert not list(tmp_path.glob(f"{TEMPORARY_PREFIX}*"))


def test_a_streamed_ledger_keeps_only_the_tasks_not_ended(tmp_path):
    sim, held = run_cell(tmp_path / "out", stream=True)
    ledger = sim.policy.ledger
    assert all(tasks == still_open and attempts == 0 for tasks, still_open, attempts in held)
    assert max(tasks for tasks, _, _ in held) < 100 and min(still_open for _, still_open, _ in held[60:]) < 30
    assert not ledger.tasks and ledger.tasks_written == 120 and ledger.attempt_count > 120
    assert all(task.state is not TaskState.ENDED for task in ledger.tasks.values())
    write_ledger(ledger, tmp_path / "out")


def test_a_ledger_stream_cut_short_leaves_the_earlier_files(tmp_path):
    (tmp_path / "out_tasks.csv").write_text("an earlier run\n")
    writer = LedgerWriter(tmp_path / "out")
    sim, _ = run_cell(tmp_path / "unused", stream=False)
    sim.policy.ledger.stream_to(writer)
    assert len(list(tmp_path.glob(f"{TEMPORARY_PREFIX}*"))) == 2
    writer.discard()
    assert (tmp_path / "out_tasks.csv").read_text() == "an earlier run\n"
    assert not (tmp_path / "out_attempts.csv").exists() and not list(tmp_path.glob(f"{TEMPORARY_PREFIX}*"))
