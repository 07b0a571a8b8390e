"""batsched's energy variants get their power figures from the platform
(:mod:`batsim_google.simulation.batsched_energy`): derived as the platform states them, a user's
checked against it, and the real batsched accepts them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from batsim_google.errors import ParameterError
from batsim_google.platform.cell import google_2011_cell
from batsim_google.platform.energy import load_energy_model
from batsim_google.platform.simgrid_xml import compute_hosts, write_platform
from batsim_google.simulation.batsched_energy import (
    POWER_FIELDS,
    TRACE_FILE,
    check_energy_command,
    power_figures,
    variant_options,
    with_power_figures,
)
from batsim_google.simulation.schedulers import Scheduler

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CELL4 = FIXTURES / "cell4_energy.xml"  # m0, m1: 100:200 W; m2, m3: 60:120 W; pstates 1 sleep (10 W, 6 W), 2-3 switch
#: The cell's platform B (CPU 0.5) from batsim_google/data/energy.toml, switching energy =
#: seconds x watts (examples/baselines-campaign.toml once spelt them by hand, rounded).
PLATFORM_B = {
    "power_compute": 190.738,
    "power_idle": 95.0,
    "power_sleep": 9.75,
    "pstate_compute": 0,
    "pstate_sleep": 1,
    "time_switch_on": 151.52,
    "time_switch_off": 6.1,
    "energy_switch_on": 151.52 * 125.1743848996832,
    "energy_switch_off": 6.1 * 100.99672131147543,
}
#: The figures as the campaign spelt them: 18966.4 J for 18966.42 J.
HAND_WRITTEN = {**PLATFORM_B, "energy_switch_on": 18966.4, "energy_switch_off": 616.08}


def _command(variant: str, *extra: str) -> list[str]:
    return ["batsched", "-v", variant, *extra, "-s", "{socket}"]


def test_the_figures_are_what_the_platform_says():
    # cell4: 2 machines of each type, m0's first: pstate 0 computes (100 idle, 200 full), 1 sleeps
    # at 10 W, switches (pstates 2 and 3) at 0.1 flop/s: 10 s at 150 W (idle = full: the core count
    # does not matter)
    assert power_figures(compute_hosts(CELL4)) == {
        "power_compute": 200.0,
        "power_idle": 100.0,
        "power_sleep": 10.0,
        "pstate_compute": 0,
        "pstate_sleep": 1,
        "time_switch_on": 10.0,
        "time_switch_off": 10.0,
        "energy_switch_on": 1500.0,
        "energy_switch_off": 1500.0,
    }


def test_a_generated_cell_gives_its_most_common_machines_figures(tmp_path):
    platform = tmp_path / "cell.xml"
    write_platform(platform, google_2011_cell(16), load_energy_model())
    figures = power_figures(compute_hosts(platform))
    assert set(figures) == set(POWER_FIELDS)
    assert figures == pytest.approx(PLATFORM_B, rel=1e-9)
    check_energy_command(
        _command("energy_bf", "--variant_options", json.dumps(HAND_WRITTEN)), platform
    )  # rounded: accepted


def test_the_idle_sleeper_gets_its_power_figures_and_its_files_in_the_run_folder(tmp_path):
    options = variant_options(_command("energy_bf_idle_sleeper"), CELL4, tmp_path)
    assert {name: options[name] for name in POWER_FIELDS} == power_figures(compute_hosts(CELL4))
    # the built-in scheduler's idle_timeout by default, batsched's files in the run's folder
    assert options["monitoring_period"] == options["idle_time_to_sedate"] == 300.0
    assert options["output_dir"] == str(tmp_path)
    assert options["trace_output_filename"] == str(tmp_path / TRACE_FILE)
    assert len(options) == 13
    assert set(variant_options(_command("energy_bf"), CELL4, tmp_path)) == set(POWER_FIELDS)


def test_the_command_carries_the_options_and_a_users_other_options_are_kept(tmp_path):
    given = json.dumps({"monitoring_period": 60, "power_idle": 60.0})  # m2's idle watts: a machine of the platform
    command = with_power_figures(_command("energy_bf_idle_sleeper", "--variant_options", given), CELL4, tmp_path)
    options = json.loads(command[command.index("--variant_options") + 1])
    assert options["monitoring_period"] == 60 and options["power_idle"] == 60.0
    assert options["power_sleep"] == 10.0  # derived (the most common type's, m0's)
    inline = with_power_figures(
        ["batsched", "-v", "energy_bf", f"--variant_options={given}", "-s", "x"], CELL4, tmp_path
    )
    assert json.loads(inline[3].partition("=")[2])["power_idle"] == 60.0
    # another batsched algorithm, or another program, is left as it is
    assert with_power_figures(_command("easy_bf"), CELL4, tmp_path) == tuple(_command("easy_bf"))


def test_figures_that_are_no_machines_of_the_platform_are_refused_in_one_line(tmp_path):
    wrong = json.dumps({"power_idle": 95.0, "power_compute": 190.738})  # platform B's, not cell4's
    with pytest.raises(ParameterError) as error:
        check_energy_command(_command("energy_bf", "--variant_options", wrong), CELL4)
    message = str(error.value)
    assert "\n" not in message
    assert "power_idle 95.0 (platform: 100.0)" in message and "power_compute 190.738 (platform: 200.0)" in message
    # figures of a machine, but of two different ones (m0's idle, m2's full): no machine's
    with pytest.raises(ParameterError, match="no machine's"):
        check_energy_command(
            _command("energy_bf", "--variant_options", '{"power_idle": 100, "power_compute": 120}'), CELL4
        )
    with pytest.raises(ParameterError, match="must be a number"):
        check_energy_command(_command("energy_bf", "--variant_options", '{"power_idle": "100"}'), CELL4)
    with pytest.raises(ParameterError, match="not JSON"):
        check_energy_command(_command("energy_bf", "--variant_options", "{power"), CELL4)


def test_options_in_a_file_are_checked_and_the_file_used_as_it_is(tmp_path):
    options = tmp_path / "options.json"
    options.write_text(json.dumps({"power_idle": 95.0}))
    command = _command("energy_bf", "--variant_options_filepath", str(options))
    with pytest.raises(ParameterError, match=r"power_idle 95.0 \(platform: 100.0\)"):
        check_energy_command(command, CELL4)
    options.write_text(json.dumps({"power_idle": 100.0}))
    with pytest.raises(ParameterError, match="no power_compute, power_sleep"):
        check_energy_command(command, CELL4)
    options.write_text(json.dumps(power_figures(compute_hosts(CELL4))))
    assert with_power_figures(command, CELL4, tmp_path) == tuple(command)
    options.write_text("[1]")
    with pytest.raises(ParameterError, match="must hold a JSON object"):
        check_energy_command(command, CELL4)


def test_a_platform_without_sleep_states_is_refused(tmp_path):
    platform = tmp_path / "no_sleep.xml"
    platform.write_text(CELL4.read_text().replace('<prop id="sleep_pstates" value="1:2:3"/>', ""))
    with pytest.raises(ParameterError, match="need wattage_per_state and sleep_pstates"):
        check_energy_command(_command("energy_bf_idle_sleeper"), platform)


def test_an_energy_variant_needs_sleep_states_without_saying_so():
    assert Scheduler("command", tuple(_command("energy_bf_idle_sleeper"))).needs().sleep_states
    assert not Scheduler("command", tuple(_command("easy_bf"))).needs().sleep_states


@pytest.mark.skipif(
    not (Path("/work/BATSIM_READY").exists() and shutil.which("batsched")),
    reason="needs batsched on PATH (docs/batsim.md)",
)
def test_the_real_batsched_runs_the_idle_sleeper_with_the_derived_figures(tmp_path):
    from batsim_google.experiments.metrics import run_metrics
    from batsim_google.experiments.outputs import RunOutputs
    from batsim_google.simulation.run import run_scheduler
    from batsim_google.simulation.settings import RunInputs, SimulationSettings

    workload = tmp_path / "w.json"
    jobs = [{"id": i, "subtime": 100 * i, "res": 1, "walltime": 200, "profile": "p"} for i in range(6)]
    workload.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 50}}}))
    output = tmp_path / "run"
    run_scheduler(
        Scheduler("command", tuple(_command("energy_bf_idle_sleeper"))),
        RunInputs(CELL4, [workload]),
        output,
        SimulationSettings(timeout=60),
    )
    metrics = run_metrics(RunOutputs(output), CELL4)
    assert metrics["jobs_completed"] == 6
    assert (output / TRACE_FILE).is_file()
