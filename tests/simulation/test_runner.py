"""The process supervisor behind every simulation, with stand-in processes (no Batsim needed):
logs, failures that name their side, deadlines, and output that is not kept."""

from __future__ import annotations

import os
import sys
import time

import pytest

from batsim_google.errors import SimulationError
from batsim_google.simulation.runner import SCHEDULER_HASH_SEED, _supervise, seeded_environment


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


def test_unlogged_output_is_discarded_and_its_failure_still_reported(tmp_path):
    noisy = python("import sys; sys.stdout.write('queue\\n' * 100000)")
    _supervise({"scheduler": noisy}, tmp_path, 30, None, None, unlogged={"scheduler"})
    assert not (tmp_path / "scheduler.log").exists()
    with pytest.raises(SimulationError, match=r"scheduler exited with status 2 \(its output was not logged\)"):
        _supervise({"scheduler": python("raise SystemExit(2)")}, tmp_path, 30, None, None, unlogged={"scheduler"})


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
