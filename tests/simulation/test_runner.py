"""The process supervisor behind every simulation, with stand-in processes (no Batsim needed):
logs, failures that name their side, deadlines, and output that is not kept."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from processes import alive

from batsim_google.errors import SimulationError
from batsim_google.simulation.runner import SCHEDULER_HASH_SEED, Simulation, _supervise, seeded_environment


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_each_side_logs_to_its_file_and_a_run_returns_its_wall_time(tmp_path):
    seconds = _supervise(
        {"scheduler": python("print('hello')"), "batsim": python("print('world')")}, tmp_path, 30, None, None
    )
    assert (tmp_path / "scheduler.log").read_text() == "hello\n"
    assert (tmp_path / "batsim.log").read_text() == "world\n"
    assert 0 < seconds < 30


def test_a_failing_side_stops_the_other_and_names_itself_with_its_log_tail(tmp_path):
    started = time.monotonic()
    with pytest.raises(SimulationError, match=r"batsim exited with status 3; see .*batsim.log:\nboom"):
        _supervise(
            {
                "scheduler": python("import time; time.sleep(60)"),
                "batsim": python("print('boom'); raise SystemExit(3)"),
            },
            tmp_path,
            60,
            None,
            None,
        )
    assert time.monotonic() - started < 30  # the sleeping side was stopped, not waited for


def test_batsims_own_reason_is_its_first_critical_line_not_the_backtrace_after_it(tmp_path):
    """SimGrid, aborting on a setting it does not know, logs its reason, then 100 settings and a
    backtrace: the reason, with SimGrid's suggestion, is what the failure says."""
    log = [
        "[0.000000] [machines/INFO] Creating the machines from platform file 'p.xml'...",
        "[0.000000] ./src/xbt/exception.cpp:48: [xbt_exception/CRITICAL] Uncaught exception std::out_of_range: "
        "Bad config key: network/TCP_gamma",
        "Did you mean 'network/TCP-gamma'?",
        "Existing config keys:",
        *[f"  key/{index}: (int)0" for index in range(100)],
        "",
        "[0.000000] ./src/xbt/exception.cpp:75: [xbt_exception/CRITICAL] Current backtrace:",
        *["  ->  1# abort in batsim"] * 20,
    ]
    script = f"import sys; sys.stderr.write({chr(10).join(log)!r} + '\\n'); raise SystemExit(250)"
    with pytest.raises(SimulationError) as failed:
        _supervise({"batsim": python(script)}, tmp_path, 60, None, None)
    assert str(failed.value) == (
        f"batsim exited with status 250; see {tmp_path / 'batsim.log'}:\nCRITICAL Uncaught exception "
        "std::out_of_range: Bad config key: network/TCP_gamma (Did you mean 'network/TCP-gamma'?)"
    )


def test_the_deadline_stops_both_sides(tmp_path):
    with pytest.raises(SimulationError, match="still running after 1 s"):
        _supervise({"scheduler": python("import time; time.sleep(60)")}, tmp_path, 1, None, None)


def test_a_quiet_sides_output_is_discarded_and_its_errors_logged_and_quoted(tmp_path):
    """pybatsim's bundled schedulers print their whole queue (standard output, discarded), but a
    typo in a scheduler's name is a traceback on standard error: it is logged and quoted."""
    noisy = python("import sys; sys.stdout.write('queue\\n' * 100000)")
    _supervise({"scheduler": noisy}, tmp_path, 30, None, None, quiet={"scheduler"})
    assert (tmp_path / "scheduler.log").read_text() == ""
    failing = python("print('queue'); raise SystemExit('no scheduler named fillerSchd')")
    with pytest.raises(SimulationError) as failed:
        _supervise({"scheduler": failing}, tmp_path, 30, None, None, quiet={"scheduler"})
    assert str(failed.value) == (
        f"scheduler exited with status 1; see {tmp_path / 'scheduler.log'}:\nno scheduler named fillerSchd"
    )


def test_a_scheduler_that_exits_mid_run_ends_the_run_at_once(tmp_path):
    """Batsim waits forever for the answer of a scheduler that exited with status 0 mid-run: the
    run ends within seconds, not at its timeout, and says so."""
    started = time.monotonic()
    with pytest.raises(SimulationError, match=r"^the scheduler exited \(status 0\) before the simulation's end"):
        _supervise(
            {"scheduler": python("pass"), "batsim": python("import time; time.sleep(600)")}, tmp_path, 90, None, None
        )
    assert time.monotonic() - started < 45


def test_a_batsim_still_writing_after_its_scheduler_ended_is_left_to_finish(tmp_path):
    """At a normal end the scheduler exits first and Batsim writes its outputs, working (not waiting)."""
    busy = python("import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end: pass\nprint('written')")
    _supervise({"scheduler": python("pass"), "batsim": busy}, tmp_path, 120, None, None)
    assert (tmp_path / "batsim.log").read_text() == "written\n"


#: A scheduler that forks a child which leaves its session (setsid) and outlives it, writing its pid.
ESCAPING = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(600)
    os._exit(0)
time.sleep(1)
"""


def test_a_child_that_left_the_schedulers_session_is_ended_with_the_run(tmp_path):
    pid_file = tmp_path / "escaped.pid"
    escaping = [sys.executable, "-c", ESCAPING, str(pid_file)]
    _supervise({"scheduler": escaping}, tmp_path / "out", 60, None, None)
    escaped = int(pid_file.read_text())
    try:
        deadline = time.monotonic() + 10
        while alive(escaped) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(escaped), "the setsid child outlived its run"
    finally:
        if alive(escaped):
            os.kill(escaped, 9)


def test_every_process_runs_with_the_fixed_hash_seed_so_set_order_repeats(tmp_path):
    """pybatsim's fillerSched iterates a set of job ids: its order must be the same in every run,
    whatever hash seed the caller's environment asks for."""
    code = "import os; print(os.environ['PYTHONHASHSEED']); print(list({f'w0!{i}' for i in range(40)}))"
    orders = []
    for run, caller_seed in enumerate(("random", "12345")):
        folder = tmp_path / str(run)
        _supervise({"scheduler": python(code)}, folder, 30, {**os.environ, "PYTHONHASHSEED": caller_seed}, None)
        seed, order = (folder / "scheduler.log").read_text().splitlines()
        assert seed == SCHEDULER_HASH_SEED
        orders.append(order)
    assert orders[0] == orders[1]
    assert seeded_environment({"PATH": "/bin"}) == {"PATH": "/bin", "PYTHONHASHSEED": SCHEDULER_HASH_SEED}


def _fake_batsim(folder: Path, name: str, version: str, options: str) -> str:
    """A Batsim ``name`` that prints ``version`` and a help listing ``options``; anything else fails."""
    path = folder / name
    path.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"answers = {{'--version': {version!r}, '--help': 'Usage: batsim [options]\\n' + {options!r}}}\n"
        "sys.exit(print(answers[sys.argv[1]]) if sys.argv[1:2] and sys.argv[1] in answers else 1)\n"
    )
    path.chmod(0o755)
    return str(path)


def test_a_run_asks_batsim_to_forget_ended_jobs_only_where_the_binary_offers_it(tmp_path):
    """``--forget-ended-jobs`` goes to a patched binary whose help lists it; a binary built from an
    earlier patch, or a stock one, runs without it (a stock one is not even asked)."""
    from batsim_google.simulation.batsim_binary import FORGET_ENDED_JOBS, BatsimBinary

    forgetting = Simulation(Path("cell.xml"), [], Path("out"), lambda endpoint: [], forget_ended_jobs=True)
    remembering = Simulation(Path("cell.xml"), [], Path("out"), lambda endpoint: [])
    offering = BatsimBinary(
        _fake_batsim(tmp_path, "offering", "4.2.1+batsim-google", "  --forget-ended-jobs  Forgets"),
        "4.2.1+batsim-google",
    )
    earlier = BatsimBinary(
        _fake_batsim(tmp_path, "earlier", "4.2.1+batsim-google", "  --disable-energy-tracing"), "4.2.1+batsim-google"
    )
    stock = BatsimBinary(str(tmp_path / "no-such-batsim"), "4.2.1")
    assert FORGET_ENDED_JOBS in forgetting.batsim_command(28000, offering)
    assert FORGET_ENDED_JOBS not in remembering.batsim_command(28000, offering)
    assert FORGET_ENDED_JOBS not in forgetting.batsim_command(28000, earlier)
    assert FORGET_ENDED_JOBS not in forgetting.batsim_command(28000, stock)


def test_a_streamed_run_on_a_patched_batsim_without_the_option_is_told_to_rebuild_it(tmp_path):
    from batsim_google.simulation.run import warn_if_remembering
    from batsim_google.simulation.settings import SimulationSettings

    said: list[str] = []
    for name, version, options in (
        ("offering", "4.2.1+batsim-google", "  --forget-ended-jobs  Forgets"),
        ("stock", "4.2.1", ""),  # keeps them, as every stock run does, and is not asked
        ("earlier", "4.2.1+batsim-google", "  --disable-energy-tracing"),
    ):
        batsim = _fake_batsim(tmp_path, name, version, options)
        warn_if_remembering(SimulationSettings(batsim=batsim, warn=said.append))
    assert said == [
        f"{tmp_path / 'earlier'} has no --forget-ended-jobs (built from an earlier engine/batsim-google.patch): "
        "Batsim keeps about 0.24 KB of every job that ended; rebuild it to keep only what runs (docs/batsim.md)"
    ]
