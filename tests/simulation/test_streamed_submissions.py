"""A streamed run's bookkeeping without Batsim: the stubs hold the first submission time's jobs, later
ones are registered a submission time ahead with one wake-up, submitted once due, and their
acknowledgements told apart."""

from __future__ import annotations

import json

import polars as pl
import pytest

from batsim_google.generation.batsim_json import WorkloadWriter
from batsim_google.scheduling.wake_ups import MIN_LEAD_S
from batsim_google.simulation.streamed_submissions import StreamedSubmissions, write_stub_workloads


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "w.json"
    with WorkloadWriter(path, nb_res=5) as writer:
        writer.write(
            pl.DataFrame(
                {
                    "id": [0, 1, 2, 3, 4, 5],
                    "subtime": [0.0, 0.0, 10.0, 10.0, 10.0005, 100.0],
                    "delay": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                    "kind": ["task"] * 6,
                }
            )
        )
    return path


def ids(jobs) -> list[str]:
    return [job.job_id for job in jobs]


def test_the_stubs_hold_the_first_submission_times_jobs_with_their_profiles(tmp_path, workload):
    stub = tmp_path / "stub.json"
    write_stub_workloads([stub], [workload])
    written = json.loads(stub.read_text())
    assert written["nb_res"] == 5
    assert [job["id"] for job in written["jobs"]] == [0, 1]
    assert written["jobs"][0]["kind"] == "task"  # the job's own fields, for Batsim's JOB_SUBMITTED
    assert written["profiles"] == {"0": {"type": "delay", "delay": 1.0}, "1": {"type": "delay", "delay": 2.0}}


def test_later_jobs_are_registered_a_minute_ahead_with_one_wake_up_at_a_time(workload):
    stream = StreamedSubmissions([workload])
    jobs, wake = stream.register_ahead(0.0)  # the stubs' time-0 jobs are not streamed
    assert ids(jobs) == ["w0!2", "w0!3", "w0!4"] and wake == 10.0  # up to 10 s + REGISTER_AHEAD_S
    assert stream.register_ahead(1.0) == ([], None)  # asked already; nothing more while those wait
    assert stream.due(9.0) == []
    assert not stream.claims_call(9.0)  # a call asked by the policy: it is woken
    assert stream.claims_call(10.0 - 1e-9)  # the call asked for submissions, a rounding error short
    assert ids(stream.due(10.0 - 1e-9)) == ["w0!2", "w0!3"]
    jobs, wake = stream.register_ahead(10.0)
    assert jobs == [] and wake == pytest.approx(10.0 + MIN_LEAD_S)  # never asked at the last moment
    assert stream.claims_call(10.0 + MIN_LEAD_S) and not stream.claims_call(10.0 + MIN_LEAD_S)
    assert ids(stream.due(10.0 + MIN_LEAD_S)) == ["w0!4"]
    jobs, wake = stream.register_ahead(101.0)  # a batch past the next time: due at once, no wake-up
    assert ids(jobs) == ["w0!5"] and wake is None
    assert not stream.exhausted
    assert ids(stream.due(101.0)) == ["w0!5"] and stream.exhausted and stream.submitted == 4


def test_a_registration_window_stops_at_its_job_count_between_submission_times(workload, monkeypatch):
    import batsim_google.simulation.streamed_submissions as module

    monkeypatch.setattr(module, "REGISTER_AHEAD_JOBS", 1)
    stream = StreamedSubmissions([workload])
    assert ids(stream.register_ahead(0.0)[0]) == ["w0!2", "w0!3"]  # a submission time stays whole


def test_acknowledgements_of_registrations_are_told_apart(workload):
    stream = StreamedSubmissions([workload])
    stream.register_ahead(0.0)

    def message(*job_ids):
        return {"now": 0.0, "events": [{"type": "JOB_SUBMITTED", "data": {"job_id": job_id}} for job_id in job_ids]}

    assert stream.only_acknowledgements(message("w0!2", "w0!3"))
    assert not stream.only_acknowledgements(message("w0!2", "w0!0"))  # w0!0 is Batsim's own submission
    assert not stream.only_acknowledgements({"now": 0.0, "events": []})
    assert stream.awaits_acknowledgement("w0!2")
    assert stream.acknowledged("w0!2") and not stream.acknowledged("w0!2")
    assert not stream.acknowledged("w0!0")


def test_a_run_streams_what_it_can_and_says_why_it_loads_the_rest(tmp_path, workload):
    from batsim_google.scheduling.policy_config import PolicyConfig
    from batsim_google.simulation.run import streams
    from batsim_google.simulation.schedulers import built_in, scheduler_from_text
    from batsim_google.simulation.settings import RunInputs, SimulationSettings

    said: list[str] = []
    streaming = SimulationSettings(stream_workload=True, warn=said.append)
    platform = tmp_path / "platform.xml"
    assert streams(built_in(PolicyConfig()), RunInputs(platform, [workload]), streaming, 5)
    assert not streams(built_in(PolicyConfig()), RunInputs(platform, [workload]), SimulationSettings(), 5)
    assert not streams(scheduler_from_text("pybatsim=fillerSched"), RunInputs(platform, [workload]), streaming, 5)
    assert not said
    composed = tmp_path / "composed.json"
    profiles = {"p": {"type": "delay", "delay": 1}, "c": {"type": "composed", "seq": ["p"]}}
    jobs = [{"id": 0, "subtime": 0.0, "res": 1, "profile": "c"}]
    composed.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": profiles}))
    assert not streams(built_in(PolicyConfig()), RunInputs(platform, [workload, composed]), streaming, 5)
    assert said == [f"the workloads are loaded whole, not streamed: in {composed}, profile 'c' is composed"]


def test_a_run_left_to_choose_streams_the_workloads_that_would_not_fit_loaded(workload, monkeypatch):
    """By default (``stream_workload`` None) a run loads the workloads, unless Batsim's predicted
    peak memory with them loaded passes half the memory available: then it streams them, and says why."""
    from batsim_google.scheduling.policy_config import PolicyConfig
    from batsim_google.simulation import batsim_binary, cost_model
    from batsim_google.simulation.run import streams
    from batsim_google.simulation.schedulers import built_in
    from batsim_google.simulation.settings import RunInputs, SimulationSettings

    monkeypatch.setattr(batsim_binary, "batsim_binary", lambda name: batsim_binary.BatsimBinary(name, "4.2.1"))
    said: list[str] = []
    left = SimulationSettings(say=said.append)
    inputs = RunInputs(workload.parent / "platform.xml", [workload])
    needed = cost_model.estimate(cost_model.read_workload_cost(workload), 12583, "stock").peak_bytes
    monkeypatch.setattr(cost_model, "available_memory_bytes", lambda: needed * 2.01)
    assert not streams(built_in(PolicyConfig()), inputs, left, 12583) and not said
    monkeypatch.setattr(cost_model, "available_memory_bytes", lambda: needed * 1.99)  # over half of it
    assert streams(built_in(PolicyConfig()), inputs, left, 12583)
    assert said == [
        f"the workloads are streamed (--load-workload loads them): loaded whole, Batsim would need about "
        f"{needed / 1e9:.1f} GB of the {needed * 1.99 / 1e9:.1f} GB available"
    ]
    assert not streams(built_in(PolicyConfig()), inputs, SimulationSettings(stream_workload=False), 12583)


def test_a_wake_up_for_a_time_between_batsims_microseconds_is_asked_at_the_next_one(tmp_path):
    """Batsim prints a call's ``now`` to the microsecond: asked at 10.0000004 it would come back as
    10.000000, before the job is due; asked at 10.000001 it comes back as that, and the job is due."""
    path = tmp_path / "off-grid.json"
    times = [0.0, 10.0000004, 10.0000009, 20.0000001]
    jobs = [{"id": i, "subtime": t, "res": 1, "profile": "p"} for i, t in enumerate(times)]
    path.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 1.0}}}))
    stream = StreamedSubmissions([path])
    _, wake = stream.register_ahead(0.0)
    assert wake == 10.000001 and f"{wake:.6f}" == "10.000001" and wake >= times[1]
    assert stream.claims_call(wake) and ids(stream.due(wake)) == ["w0!1", "w0!2"]  # both within the microsecond
    _, wake = stream.register_ahead(10.000001)
    assert wake == 20.000001 and stream.claims_call(wake) and ids(stream.due(wake)) == ["w0!3"]


def test_a_streamed_run_holds_no_workload_table_while_it_simulates(tmp_path, workload, monkeypatch):
    from batsim_google.fitting import batsim_input
    from batsim_google.simulation import run
    from batsim_google.simulation.settings import RunInputs

    held: list[int] = []
    monkeypatch.setattr(
        run, "run_simulation", lambda simulation, on_poll: held.append(batsim_input._read_file.cache_info().currsize)
    )
    batsim_input.read_workload_file(workload)  # as the run's checks read it
    simulation = type("Simulation", (), {"workloads": [tmp_path / "stub.json"], "output": tmp_path})()
    run._streamed(simulation, RunInputs(tmp_path / "platform.xml", [workload]))
    assert held == [0]
    assert (tmp_path / "stub.json").exists()
