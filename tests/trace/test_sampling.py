"""Scaled replays: the trace's tasks of a sample of machines, at the real cell's load per machine."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from batsim_google.errors import ParameterError
from batsim_google.trace.convert import Selection, convert_trace
from batsim_google.trace.row_accounting import RowAccount
from batsim_google.trace.sampling import MachineSample, hashed_uniforms

START, END = 7000.0, 8000.0
MACHINES = 2048
SCALE = 12583 / MACHINES


def test_the_hash_is_uniform_reproducible_and_seeded():
    ids = np.random.default_rng(5).integers(1, 2**32, 12583)  # machine IDs are large integers
    first = hashed_uniforms(ids, 1)
    assert np.array_equal(first, hashed_uniforms(ids, 1))
    assert stats.kstest(first, "uniform").pvalue > 0.01
    assert stats.kstest(first**1.1, "uniform").pvalue < 0.01  # a skewed law fails the same test
    other = hashed_uniforms(ids, 2)
    assert np.mean((first < 0.2) == (other < 0.2)) < 0.75  # another seed, another sample
    kept = np.mean(first < MACHINES / 12583)
    assert abs(kept - MACHINES / 12583) < 3 * np.sqrt(kept * (1 - kept) / len(ids))


def test_a_sampled_cell_has_1_to_12583_machines():
    with pytest.raises(ParameterError, match="1 to 12583 machines"):
        MachineSample(0)
    with pytest.raises(ParameterError, match="1 to 12583 machines"):
        MachineSample(12584)


def _load(data: dict) -> dict[str, float]:
    """Running tasks at the start and CPU/memory requested then, and CPU requested by the tasks
    alive (as in the trace: submitted, waited, ran) at points of the window."""
    jobs = data["jobs"]

    def lifetime(job):
        delay = job["walltime"] if job["kind"] == "service" else data["profiles"][job["profile"]]["delay"]
        begin = 0 if job.get("initial") else job["subtime"] + (job["wait"] or 0)
        return begin, begin + delay

    running = [job for job in jobs if job.get("initial") == "running"]
    load = {
        "running": len(running),
        "cpu": sum(job["cpu"] for job in running),
        "memory": sum(job["memory"] for job in running),
    }
    ran = [job for job in jobs if not job["never_scheduled"]]  # the others never ran in the trace
    for t in (250, 500, 750):
        load[f"cpu at {t} s"] = sum(job["cpu"] for job in ran if lifetime(job)[0] <= t < lifetime(job)[1])
    return load


def _convert(folder, path, sample):
    selection = Selection(start=START, end=END, initial_state=True, sample=sample)
    account = convert_trace([folder], path, selection, RowAccount(), nb_res=sample.machines if sample else 12583)
    return json.loads(path.read_text()), account


def test_a_sampled_cell_carries_the_real_cells_load_per_machine(google_2011, tmp_path):
    whole = _load(_convert(google_2011, tmp_path / "whole.json", None)[0])
    first, account = _convert(google_2011, tmp_path / "s1.json", MachineSample(MACHINES, seed=1))
    _, again = _convert(google_2011, tmp_path / "s1-again.json", MachineSample(MACHINES, seed=1))
    assert (tmp_path / "s1.json").read_bytes() == (tmp_path / "s1-again.json").read_bytes()
    assert first["nb_res"] == MACHINES and first["meta"]["sample"] == {"machines": MACHINES, "seed": 1}
    assert account.excluded["machine sampled out"] > 0 and account.records == again.records
    second, _ = _convert(google_2011, tmp_path / "s2.json", MachineSample(MACHINES, seed=2))
    assert first["jobs"] != second["jobs"]
    for sampled in (first, second):
        load = _load(sampled)
        for name, value in whole.items():
            assert load[name] * SCALE == pytest.approx(value, rel=0.05), name
