"""Energy from Batsim's power-state changes, against sums done by hand (the real-Batsim check
against ``-E`` is in tests/integration/test_patched_batsim.py)."""

from __future__ import annotations

import polars as pl
import pytest

from batsim_google.errors import InputFileError
from batsim_google.experiments.outputs import RunOutputs
from batsim_google.experiments.pstate_energy import pstate_energy_records, read_pstate_changes
from batsim_google.experiments.window import energy_between
from batsim_google.platform.simgrid_xml import compute_hosts

# Two hosts, 4 cores: pstate 0 computes (100 W idle), 1 sleeps (10 W), 2 switches off (50 W),
# 3 switches on (60 W idle, 80 W full: a switch computes on one core of four, 65 W). m0 switches
# off in 1 s (1 flop at 1 flop/s), m1 in 2 s; both switch on in 4 s.
PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
  <host id="m0" speed="1f, 0.001f, 1f, 0.25f" core="4" pstate="0">
    <prop id="wattage_per_state" value="100:200, 10:10, 50:50, 60:60:80"/>
    <prop id="sleep_pstates" value="1:2:3"/>
  </host>
  <host id="m1" speed="1f, 0.001f, 0.5f, 0.25f" core="4" pstate="0">
    <prop id="wattage_per_state" value="100:200, 10:10, 50:50, 60:60:80"/>
    <prop id="sleep_pstates" value="1:2:3"/>
  </host>
  <host id="master_host" speed="1f"><prop id="role" value="master"/></host>
</zone></platform>
"""


@pytest.fixture
def hosts(tmp_path):
    path = tmp_path / "platform.xml"
    path.write_text(PLATFORM)
    return compute_hosts(path)


def _changes(tmp_path, lines):
    path = tmp_path / "out_pstate_changes.csv"
    path.write_text("time,machine_id,new_pstate\n" + "".join(f"{line}\n" for line in lines))
    return path


def test_changes_read_batsim_interval_sets_machine_by_machine(tmp_path):
    path = _changes(tmp_path, ["0,0-3 7 9-10,0", "5,2,1"])
    changes = read_pstate_changes(path, machines=11)
    assert changes["machine"].to_list() == [0, 1, 2, 2, 3, 7, 9, 10]
    assert changes.filter(pl.col("machine") == 2)["pstate"].to_list() == [0, 1]
    with pytest.raises(InputFileError, match="machine 10, but the platform has 10 compute hosts"):
        read_pstate_changes(path, machines=10)


def test_each_host_is_billed_its_pstates_and_switches_over_its_own_switch_time(tmp_path, hosts):
    # Both asked to sleep at 10; the group's target is written when the slower one (m1) is done, at
    # 12; m1 alone is woken at 20 and back in pstate 0 at 24.
    path = _changes(tmp_path, ["0,0-1,0", "10,0-1,-2", "12,0-1,1", "20,1,-1", "24,1,0"])
    records = pstate_energy_records(path, hosts, 30.0)
    m0 = 100 * 10 + 50 * 1 + 10 * 19  # m0 asleep from 11, not from the group's record at 12
    m1 = 100 * 10 + 50 * 2 + 10 * 8 + 65 * 4 + 100 * 6
    assert records["energy"][-1] == pytest.approx(m0 + m1)
    assert records["time"][-1] == 30.0
    # Between two records the energy is linear: what a window reads from them is exact.
    assert energy_between(records, 11.0, 12.0) == pytest.approx(10 + 50)
    assert energy_between(records, 0.0, 10.0) == pytest.approx(2000)


def test_a_switch_not_finished_at_the_end_is_billed_up_to_the_end(tmp_path, hosts):
    path = _changes(tmp_path, ["0,0-1,0", "10,1,-2"])
    records = pstate_energy_records(path, hosts, 11.0)
    assert records["energy"][-1] == pytest.approx(100 * 11 + 100 * 10 + 50 * 1)


def test_changes_on_a_machine_the_platform_lacks_are_refused(tmp_path, hosts):
    path = _changes(tmp_path, ["0,0-2,0"])
    with pytest.raises(InputFileError, match="out_pstate_changes.csv: machine 2, but the platform has 2 compute hosts"):
        pstate_energy_records(path, hosts, 1.0)


def test_a_run_without_the_energy_sweep_reads_its_energy_from_the_power_states(tmp_path, hosts):
    _changes(tmp_path, ["0,0-1,0", "10,0,-2", "11,0,1"])
    (tmp_path / "out_jobs.csv").write_text(
        "job_id,workload_name,submission_time,requested_number_of_resources,final_state,starting_time,"
        "execution_time,finish_time,waiting_time\n1,w0,0,1,COMPLETED_SUCCESSFULLY,0,15,15,0\n"
    )
    outputs = RunOutputs(tmp_path)
    assert outputs.energy() is None  # no platform, no energy
    assert outputs.energy(hosts) == pytest.approx(100 * 15 + 100 * 10 + 50 + 10 * 4)
    (tmp_path / "out_consumed_energy.csv").write_text("time,energy,event_type,wattmin,epower\n15,42,e,0,NA\n")
    assert outputs.energy(hosts) == 42  # Batsim's own figure, when it wrote one
