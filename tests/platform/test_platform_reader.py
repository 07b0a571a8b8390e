"""The platform reader takes what SimGrid takes (Batsim's platform shapes) and refuses the rest in
one line naming the element."""

from __future__ import annotations

from pathlib import Path

import pytest

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.platform.simgrid_xml import (
    check_master,
    check_simgrid_accepts,
    check_simgrid_settings,
    compute_hosts,
    energy_model_gap,
    parse_speed,
    read_hosts,
    simgrid_settings,
    sleep_pstates,
    unrouted_hosts,
)

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "batsim_shapes" / "platforms"


def test_leading_blank_lines_before_the_declaration_are_skipped_as_simgrid_does():
    hosts = read_hosts(SHAPES / "cluster_energy.xml")  # starts with a blank line
    assert [h.name for h in hosts] == ["node0", "node1", "node2", "node3", "master_host0"]
    assert [h.name for h in compute_hosts(SHAPES / "cluster_energy.xml")] == ["node0", "node1", "node2", "node3"]
    assert hosts[0].speeds == (1e9, 5e8, 1e-3, 0.1, 0.01)
    old = read_hosts(SHAPES / "old_dtd_energy.xml")  # two blank lines, version 4, <AS>
    assert [h.name for h in old] == ["master_host", "host0", "host1"]


def test_the_host_named_master_host_is_batsims_master_without_a_role():
    hosts = read_hosts(SHAPES / "hosts_full_routing.xml")
    assert [h.name for h in hosts if not h.computes] == ["master_host"]
    assert [h.name for h in compute_hosts(SHAPES / "hosts_full_routing.xml")] == ["Alpha", "Beta", "Delta", "Gamma"]
    check_master(SHAPES / "hosts_full_routing.xml", hosts)  # no error


def test_storage_and_master_roles_by_property():
    hosts = read_hosts(SHAPES / "storage.xml")
    assert {h.name: sorted(h.roles) for h in hosts if h.roles} == {
        "head": ["master"],
        "pfs_host": ["storage"],
        "nfs_host": ["storage"],
    }
    assert [h.name for h in compute_hosts(SHAPES / "storage.xml")] == ["c1", "c2"]


def test_nested_zones_long_units_and_cores():
    hosts = {h.name: h for h in read_hosts(SHAPES / "nested_zones.xml")}
    assert sorted(hosts) == ["big1", "big2", "master_host", "node-0.lab", "node-1.lab", "node-2.lab", "node-3.lab"]
    assert hosts["node-2.lab"].speeds == (2.5e9,) and hosts["node-2.lab"].cores == 4
    assert hosts["big1"].speeds == hosts["big2"].speeds == (5e9,) and hosts["big1"].properties == {"mem": "256"}


def test_cabinets_are_hosts_and_a_platform_without_master_is_refused_in_one_line():
    path = SHAPES / "cabinets_no_master.xml"
    hosts = read_hosts(path)
    assert len(hosts) == 9 and all(h.computes for h in hosts) and hosts[0].name == "left10"
    with pytest.raises(InputFileError) as refused:
        check_master(path, hosts)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{path}: no master host ('master_host0' is neither)")
    assert "role" in message and "'master_host'" in message


def test_two_masters_are_refused(tmp_path):
    path = tmp_path / "two.xml"
    path.write_text(
        '<platform version="4.1"><zone id="z" routing="Full"><host id="master_host" speed="1Gf"/>'
        '<host id="h" speed="1Gf"><prop id="role" value="master"/></host></zone></platform>'
    )
    with pytest.raises(InputFileError, match=r"2 master hosts \(master_host, h\): Batsim takes one"):
        check_master(path, read_hosts(path))


@pytest.mark.parametrize(
    ("text", "speed"),
    [("1Gf", 1e9), ("16.673E9flops", 16.673e9), ("5gigaflops", 5e9), ("100Mf", 1e8), ("0.5kf", 500.0), ("42", 42.0)],
)
def test_simgrid_speed_units(text, speed):
    assert parse_speed(text) == pytest.approx(speed)


def test_unreadable_speeds_and_elements_are_refused_naming_them(tmp_path):
    with pytest.raises(ParameterError, match=r"--speed: a speed must be one positive, finite number"):
        parse_speed("0f")
    with pytest.raises(InputFileError, match=r"--speed: unreadable speed '3 parsecs'"):
        parse_speed("3 parsecs")
    path = tmp_path / "p.xml"
    path.write_text('<platform version="4.1"><zone id="z" routing="Full"><host id="a" speed="1Gz"/></zone></platform>')
    with pytest.raises(InputFileError, match=r"p.xml: host 'a': unreadable speed '1Gz'"):
        read_hosts(path)
    path.write_text('<platform version="3"><include file="other.xml"/></platform>')
    with pytest.raises(InputFileError, match=r"p.xml: <include> is not read"):
        read_hosts(path)


def test_an_energy_model_is_power_figures_on_every_compute_host():
    assert energy_model_gap(read_hosts(SHAPES / "cluster_energy.xml")) is None
    assert energy_model_gap(read_hosts(SHAPES / "old_dtd_energy.xml")) is None
    assert (
        energy_model_gap(read_hosts(SHAPES / "hosts_full_routing.xml"))
        == "4 of 4 compute hosts (Alpha, Beta, Gamma, ...) have no wattage_per_state"
    )


def test_power_figures_that_do_not_match_the_pstates_are_no_energy_model(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(
        '<platform version="4.1"><zone id="z" routing="Full"><host id="master_host" speed="1Gf"/>'
        '<host id="a" speed="1Gf, 2Gf"><prop id="wattage_per_state" value="95:190"/></host></zone></platform>'
    )
    assert energy_model_gap(read_hosts(path)) == "host 'a' has 1 wattage_per_state entries for 2 pstates"


def test_several_sleep_states_give_the_first():
    assert sleep_pstates({"sleep_pstates": "3:4:5, 6:7:8"}) == (3, 4, 5)
    assert sleep_pstates({"sleep_pstates": "1:2:3"}) == (1, 2, 3)


def test_settings_simgrid_332_does_not_know_are_refused_in_one_line_with_what_to_do():
    path = SHAPES / "old_settings.xml"
    assert simgrid_settings(path)["network/TCP_gamma"] == "4194304" and len(simgrid_settings(path)) == 5
    with pytest.raises(InputFileError) as refused:
        check_simgrid_settings(path, smpi=False)
    assert str(refused.value) == (
        f"{path}: <config> sets 'network/TCP_gamma' (now 'network/TCP-gamma'), 'network/coordinates' (no such "
        "setting), 'smpi/os' (SMPI's: taken only with a workload of smpi profiles): SimGrid 3.32 (Batsim 4.2.1's) "
        "aborts on settings it does not know; rename or remove them"
    )
    with pytest.raises(InputFileError) as refused:  # with SMPI running, smpi/os is one of its settings
        check_simgrid_settings(path, smpi=True)
    assert "smpi/os" not in str(refused.value) and "'network/coordinates' (no such setting)" in str(refused.value)


def test_the_settings_simgrid_332_takes_pass():
    for name in ("cluster_energy", "old_dtd_energy", "hosts_full_routing"):  # contexts/..., or no <config>
        check_simgrid_settings(SHAPES / f"{name}.xml", smpi=False)


def test_a_host_in_a_zone_without_routing_is_refused_in_one_line_naming_the_zone():
    path = SHAPES / "unrouted_master.xml"
    assert unrouted_hosts(path) == [("head", "master_host")]  # not the zone of properties only
    with pytest.raises(InputFileError) as refused:
        check_simgrid_accepts(path, smpi=False)
    assert str(refused.value) == (
        f"{path}: zone 'head' has routing=\"None\" and holds host 'master_host': SimGrid 3.32 cannot route to a "
        'host there, and Batsim aborts at the first job ("There can\'t be route in an Empty zone"); give the zone '
        'a routing, e.g. routing="Full"'
    )
    for name in ("nested_zones", "hosts_full_routing", "cabinets_no_master", "storage"):
        assert unrouted_hosts(SHAPES / f"{name}.xml") == []


def test_hosts_without_routes_are_counted_per_zone(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(
        '<platform version="4.1"><AS id="top" routing="Full"><AS id="flat" routing="None">'
        '<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/><host id="c" speed="1Gf"/></AS>'
        '<host id="master_host" speed="1Gf"/></AS></platform>'
    )
    assert unrouted_hosts(path) == [("flat", "a"), ("flat", "b"), ("flat", "c")]
    with pytest.raises(InputFileError, match="zone 'flat' has routing=\"None\" and holds host 'a' and 2 other"):
        check_simgrid_accepts(path, smpi=False)
