"""Our patched Batsim is the same simulator as the stock 4.2.1: the same cases run through both,
the same jobs, machine states and energy (the patched one's computed from its power-state changes,
with its energy sweep off).

The binaries: ``$BATSIM_STOCK`` (else ``batsim``) must print a stock version and
``$BATSIM_PATCHED`` (else ``batsim-patched``) a patched one (docs/batsim.md builds both); skipped
with the reason when either is missing or is the other build.
"""

from __future__ import annotations

import json
import sys

import polars as pl
import pytest
from click.testing import CliRunner

from batsim_google.cli import main
from batsim_google.errors import SimulationError
from batsim_google.simulation.batsim_binary import BatsimBinary, batsim_binary, binary_name

pytestmark = pytest.mark.batsim
MACHINES = 64
#: The energies must agree within this share (they agree far closer: Batsim writes power-state
#: times with six digits, so a switch may be placed up to that rounding off).
ENERGY_TOLERANCE = 1e-3
#: How far a job's start and finish may be, seconds. A stock delay is a model action, which SimGrid
#: ends once what is left of it is under the solver's precision; the patched timer ends exactly.
#: The 512-machine hour replay differed by 22 us at most over 30,000 s (bench/whole_cell.py).
TIME_TOLERANCE_S = 1e-4
#: How far the machines' mean count in each state may be, as a share of the machines. Events that
#: fell at one instant in one run and microseconds apart in the other reach the scheduler in one
#: pass or in two, so it may place the same jobs of a burst on other machines (the 512-machine
#: hour: 286 of 7,412 jobs, all started in one burst), and Batsim labels the machines accordingly.
STATE_TOLERANCE = 0.01


def _find(kind: str) -> tuple[BatsimBinary | None, str]:
    """The ``kind`` build (docs/batsim.md names them), or None and why not."""
    name = binary_name(kind)
    try:
        binary = batsim_binary(name)
    except SimulationError as error:
        return None, str(error)
    if binary.kind != kind:
        return None, f"'{name}' is {binary.describe()}, not the {kind} build"
    return binary, ""


@pytest.fixture(scope="module")
def binaries() -> tuple[str, str]:
    (stock, stock_why), (patched, patched_why) = _find("stock"), _find("patched")
    if stock is None or patched is None:
        pytest.skip(f"needs a stock and a patched Batsim 4.2.1: {stock_why or patched_why}")
    return stock.path, patched.path


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = tmp_path_factory.mktemp("cell") / "cell.xml"
    _invoke(["platform", "--machines", MACHINES, "-o", path])
    return path


def _mean_machine_states(run) -> dict[str, float]:
    """The time-weighted mean number of machines in each state of ``out_machine_states.csv``."""
    states = pl.read_csv(run / "out_machine_states.csv", schema_overrides={"time": pl.Float64})
    durations = states["time"].diff().shift(-1).fill_null(0.0)
    span = float(durations.sum()) or 1.0
    return {name: float((states[name] * durations).sum()) / span for name in states.columns if name != "time"}


def _both(binaries, platform, workload, folder, options=()) -> tuple[dict, dict]:
    """Run the case with each binary; check the outputs match; the two runs' metrics."""
    runs = {}
    for name, binary in zip(("stock", "patched"), binaries):
        output = folder / name
        printed = _invoke(
            ["run", "--platform", platform, "--workload", workload, "-o", output, "--batsim", binary]
            + ["--timeout", 600, "--no-progress", *options]
        )
        (described,) = [line for line in printed.splitlines() if line.startswith("Batsim 4.2.1")]
        assert ("(patched" in described) == (name == "patched")
        runs[name] = output
    stock, patched = runs["stock"], runs["patched"]
    assert (stock / "out_consumed_energy.csv").exists() and not (patched / "out_consumed_energy.csv").exists()
    jobs = [
        pl.read_csv(run / "out_jobs.csv", schema_overrides={"job_id": pl.String})
        .select("job_id", "final_state", "starting_time", "finish_time")
        .sort("job_id")
        for run in (stock, patched)
    ]
    assert jobs[0]["job_id"].to_list() == jobs[1]["job_id"].to_list()
    assert jobs[0]["final_state"].to_list() == jobs[1]["final_state"].to_list()
    for column in ("starting_time", "finish_time"):
        gaps = (jobs[0][column] - jobs[1][column]).abs()
        assert (gaps.fill_null(0.0) <= TIME_TOLERANCE_S).all() and gaps.null_count() == jobs[0][column].null_count()
    states = [_mean_machine_states(run) for run in (stock, patched)]
    for state in states[0]:
        assert states[1][state] == pytest.approx(states[0][state], abs=STATE_TOLERANCE * MACHINES)
    metrics = [json.loads((run / "metrics.json").read_text()) for run in (stock, patched)]
    assert metrics[0]["batsim_energy_j"] > 0
    assert metrics[1]["batsim_energy_j"] == pytest.approx(metrics[0]["batsim_energy_j"], rel=ENERGY_TOLERANCE)
    assert metrics[1]["energy_j"] == pytest.approx(metrics[0]["energy_j"], rel=ENERGY_TOLERANCE)
    return metrics[0], metrics[1]


def test_a_sampled_replay_with_its_initial_state_runs_the_same(tmp_path, binaries, platform, google_2011):
    workload = tmp_path / "window.json"
    _invoke(
        ["trace", "convert", google_2011, "-o", workload, "--start", 0, "--end", 600]
        + ["--sample-cell", MACHINES, "--seed", 1]
    )
    stock, _ = _both(binaries, platform, workload, tmp_path, ["--horizon", 600])
    assert stock["tasks"] > 300


def test_a_generated_workload_with_kills_and_failures_runs_the_same(tmp_path, binaries, platform):
    workload, failures, kills = tmp_path / "w.json", tmp_path / "failures.jsonl", tmp_path / "kills.jsonl"
    _invoke(
        ["generate", "--preset", "google", "--tasks", 400, "--seed", 3, "--nb-res", MACHINES]
        + ["--arrival-scale", 12583 / MACHINES, "-o", workload]
    )
    _invoke(["failures", platform, "--horizon", 3000, "--seed", 3, "--mtbf", 20000, "--mttr", 300, "-o", failures])
    killed = [job["id"] for job in json.loads(workload.read_text())["jobs"][10:400:40]]
    kills.write_text(
        "".join(
            json.dumps({"type": "user_kill", "timestamp": 50.0 + i, "job_id": f"w0!{j}"}) + "\n"
            for i, j in enumerate(killed)
        )
    )
    stock, _ = _both(
        binaries, platform, workload, tmp_path, ["--events", failures, "--events", kills, "--horizon", 3000]
    )
    assert stock["failure_kills"] > 0 and stock["killed_by_user"] > 0


def test_idle_sleep_energy_is_the_same(tmp_path, binaries, platform):
    workload = tmp_path / "w.json"
    _invoke(
        ["generate", "--preset", "google", "--tasks", 300, "--seed", 4, "--nb-res", MACHINES]
        + ["--arrival-scale", 12583 / MACHINES / 4, "-o", workload]
    )
    stock, patched = _both(
        binaries, platform, workload, tmp_path, ["--energy", "idle-sleep", "--idle-timeout", 60, "--horizon", 3000]
    )
    changes = pl.read_csv(tmp_path / "patched" / "out_pstate_changes.csv")
    assert (changes["new_pstate"] == -2).any() and (changes["new_pstate"] == -1).any()  # it slept and woke


def test_a_streamed_run_with_failures_runs_the_same_when_the_patched_batsim_forgets_its_ended_jobs(
    tmp_path, binaries, platform
):
    """A streamed run registers every job and its profile, and the scheduler the restarts of the
    tasks a failure killed; the patched binary is told to forget them once ended
    (--forget-ended-jobs), the stock one keeps them: the same jobs, states and energy."""
    workload, failures = tmp_path / "w.json", tmp_path / "failures.jsonl"
    _invoke(
        ["generate", "--preset", "google", "--tasks", 400, "--seed", 5, "--nb-res", MACHINES]
        + ["--arrival-scale", 12583 / MACHINES, "-o", workload]
    )
    _invoke(["failures", platform, "--horizon", 3000, "--seed", 5, "--mtbf", 20000, "--mttr", 300, "-o", failures])
    stock, _ = _both(
        binaries, platform, workload, tmp_path, ["--stream-workload", "--events", failures, "--horizon", 3000]
    )
    assert stock["completed"] > 100 and stock["failure_kills"] > 0 and stock["resubmissions"] > 0


#: A scheduler that registers and runs a job, ``dyn!1`` on profile ``p``, and a second after it ended
#: (one call later, by when Batsim has deleted the first): ``sys.argv[2]`` on profile ``sys.argv[3]``;
#: it finishes the registrations once the second ended.
REREGISTERING = """
import json, sys, zmq
socket = zmq.Context().socket(zmq.REP)
socket.bind(sys.argv[1])
jobs = [("dyn!1", "p"), (sys.argv[2], sys.argv[3])]
while True:
    message = json.loads(socket.recv())
    now, events, kinds = message["now"], [], [event["type"] for event in message["events"]]
    if "SIMULATION_BEGINS" in kinds or "REQUESTED_CALL" in kinds:
        job_id, profile = jobs.pop(0)
        events = [
            {"timestamp": now, "type": "REGISTER_PROFILE", "data": {"workload_name": "dyn",
             "profile_name": profile, "profile": {"type": "delay", "delay": 10}}},
            {"timestamp": now, "type": "REGISTER_JOB", "data": {"job_id": job_id,
             "job": {"id": job_id, "res": 1, "profile": profile, "subtime": now}}},
            {"timestamp": now, "type": "EXECUTE_JOB", "data": {"job_id": job_id, "alloc": "0"}},
        ]
    elif "JOB_COMPLETED" in kinds and jobs:
        events = [{"timestamp": now, "type": "CALL_ME_LATER", "data": {"timestamp": now + 1}}]
    elif "JOB_COMPLETED" in kinds:
        events = [{"timestamp": now, "type": "NOTIFY", "data": {"type": "registration_finished"}}]
    socket.send_string(json.dumps({"now": now, "events": events}))
    if "SIMULATION_ENDS" in kinds:
        break
"""


@pytest.mark.parametrize(
    "again, refusal",
    [(("dyn!1", "q"), "already exists"), (("dyn!2", "p"), "already existed")],
    ids=["job id", "profile name"],
)
def test_the_patched_batsim_forgets_an_ended_jobs_id_and_profile_name_only_when_told(
    tmp_path, binaries, platform, again, refusal
):
    """Batsim 4.2.1 keeps an ended job's id and its freed profile's name to the end, to refuse them
    if registered again; told --forget-ended-jobs, the patched one forgets them (its memory then
    follows the jobs not yet ended), and the same registration runs."""
    from batsim_google.simulation.runner import Simulation, run_simulation

    scheduler = tmp_path / "scheduler.py"
    scheduler.write_text(REREGISTERING)

    def run(binary: str, *options: str):
        output = tmp_path / f"{binary.replace('/', '_')}{''.join(options)}"
        output.mkdir()
        simulation = Simulation(
            platform,
            [],
            output,
            lambda endpoint: [sys.executable, str(scheduler), endpoint, *again],
            batsim=binary,
            batsim_options=["--enable-dynamic-jobs", *options],
            timeout=60,
        )
        return run_simulation(simulation).output

    stock, patched = binaries
    for binary in (stock, patched):
        with pytest.raises(SimulationError, match=refusal):
            run(binary)
    jobs = pl.read_csv(run(patched, "--forget-ended-jobs") / "out_jobs.csv", infer_schema_length=0)
    assert jobs.select("workload_name", "job_id", "profile", "starting_time", "final_state").rows() == [
        ("dyn", "1", "p", "0.000000", "COMPLETED_SUCCESSFULLY"),
        ("dyn", again[0].split("!")[1], again[1], "11.000000", "COMPLETED_SUCCESSFULLY"),
    ]
