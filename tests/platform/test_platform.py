"""Platform XML: parsed back, shipped files regenerated, energy overrides, loaded by real SimGrid."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO

from batsim_google.cli import main
from batsim_google.errors import InputFileError, ParameterError
from batsim_google.platform.cell import google_2011_cell
from batsim_google.platform.energy import load_energy_model
from batsim_google.platform.google_2011 import GOOGLE_2011_TYPES
from batsim_google.platform.simgrid_xml import compute_hosts, cores, read_hosts, write_platform

SHIPPED = {
    "google-2011-cell.xml": [],
    "google-2011-cell-512.xml": ["--machines", "512"],
    "google-2011-cell-64.xml": ["--machines", "64"],
}


def _platform(tmp_path, machines=None, energy=None) -> Path:
    path = tmp_path / "platform.xml"
    write_platform(path, google_2011_cell(machines), load_energy_model(energy))
    return path


def _watts(host) -> list[list[float]]:
    return [[float(w) for w in state.split(":")] for state in host.properties["wattage_per_state"].split(",")]


def test_hosts_per_type_properties_and_one_master(tmp_path):
    path = _platform(tmp_path)
    hosts = read_hosts(path)
    masters = [h for h in hosts if h.properties.get("role") == "master"]
    assert len(masters) == 1 and masters[0].name == "master"
    compute = [h for h in hosts if h.computes]
    assert len(compute) == 12_583
    found = {}
    for host in compute:
        key = (
            host.properties["platform_id"],
            float(host.properties["cpu_capacity"]),
            float(host.properties["memory_capacity"]),
        )
        found[key] = found.get(key, 0) + 1
    assert found == {(p, c, m): n for n, p, c, m in GOOGLE_2011_TYPES}
    for host in compute:
        cpu = float(host.properties["cpu_capacity"])
        assert host.cores == max(1, round(24 * cpu))
        assert host.speeds[0] == 1e9
        assert host.properties["sleep_pstates"] == "1:2:3"


def test_cluster_elements_are_read_as_their_hosts(tmp_path):
    path = tmp_path / "clusters.xml"
    path.write_text(
        '<platform version="4.1"><zone id="z" routing="Full">'
        '<cluster id="c" prefix="n-" suffix=".x" radical="0-1,4" speed="2Gf, 1f" core="8" bw="1GBps" lat="1us">'
        '<prop id="cpu_capacity" value="0.5"/></cluster>'
        '<host id="master" speed="1Gf"><prop id="role" value="master"/></host></zone></platform>'
    )
    hosts = read_hosts(path)
    assert [h.name for h in hosts] == ["n-0.x", "n-1.x", "n-4.x", "master"]
    assert all(h.speeds == (2e9, 1.0) and h.cores == 8 and h.properties == {"cpu_capacity": "0.5"} for h in hosts[:3])
    assert [h.name for h in compute_hosts(path)] == ["n-0.x", "n-1.x", "n-4.x"]
    path.write_text(path.read_text().replace('radical="0-1,4"', 'radical="0-x"'))
    with pytest.raises(ValueError, match=r"cluster 'c': unreadable radical '0-x'"):
        read_hosts(path)


def test_names_are_padded_so_resource_order_is_machine_order(tmp_path):
    path = _platform(tmp_path, machines=512)
    in_file = [h.name for h in read_hosts(path) if h.computes]
    assert in_file == sorted(in_file) == [f"m{i:05d}" for i in range(512)]
    assert [h.name for h in compute_hosts(path)] == in_file
    # The machines keep the cell's order: type blocks of the published table.
    cell = google_2011_cell(512).machines
    assert [h.properties["memory_capacity"] for h in compute_hosts(path)] == [repr(m) for m in cell["memory"]]


def test_cluster_zone_not_full_routing(tmp_path):
    root = ET.parse(_platform(tmp_path, machines=64)).getroot()
    zones = root.findall(".//zone")
    assert [z.get("routing") for z in zones] == ["Cluster"]
    hosts = [h.get("id") for h in zones[0].findall("host")]
    links = {hl.get("id"): (hl.get("up"), hl.get("down")) for hl in zones[0].findall("host_link")}
    assert set(links) == set(hosts) and len(zones[0].findall("backbone")) == 1
    declared = {link.get("id") for link in zones[0].findall("link")}
    assert all(
        up.removesuffix("_UP") in declared and down.removesuffix("_DOWN") in declared for up, down in links.values()
    )


def test_energy_values_follow_the_reference_scaled_by_cpu(tmp_path):
    energy = load_energy_model()
    reference = energy.reference
    for host in compute_hosts(_platform(tmp_path, machines=64)):
        factor = float(host.properties["cpu_capacity"]) / energy.reference_cpu
        computing, sleeping, switch_off, switch_on = _watts(host)
        assert computing == pytest.approx(
            [reference.idle * factor, reference.epsilon * factor, reference.full * factor]
        )
        assert sleeping == pytest.approx([reference.sleep * factor] * 3)
        assert switch_off == pytest.approx([reference.switch_off_watts * factor] * 3)
        assert switch_on == pytest.approx([reference.switch_on_watts * factor] * 3)
        assert float(host.properties["wattage_off"]) == pytest.approx(reference.off * factor)
        # A virtual pstate computes one flop: its speed is 1 / the switch duration.
        assert 1 / host.speeds[2] == pytest.approx(reference.switch_off_seconds)
        assert 1 / host.speeds[3] == pytest.approx(reference.switch_on_seconds)
        assert 0 < host.speeds[1] < 1


def test_energy_overrides_from_a_file(tmp_path):
    override = tmp_path / "energy.toml"
    override.write_text("[reference]\nidle = 80.0\n[platforms.C]\nfull = 500.0\nswitch_on_seconds = 10\n")
    hosts = compute_hosts(_platform(tmp_path, machines=64, energy=override))
    by_platform = {h.properties["platform_id"]: h for h in hosts}
    assert _watts(by_platform["B"])[0] == pytest.approx([80.0, 95.0, 190.738])  # other keys kept
    assert _watts(by_platform["A"])[0][0] == pytest.approx(40.0)  # scaled reference
    assert _watts(by_platform["C"])[0] == pytest.approx([160.0, 190.0, 500.0])
    assert 1 / by_platform["C"].speeds[3] == pytest.approx(10.0)
    assert 1 / by_platform["B"].speeds[3] == pytest.approx(151.52)
    as_json = tmp_path / "energy.json"
    as_json.write_text(json.dumps({"reference_cpu": 1.0}))
    assert load_energy_model(as_json).profile("B", 0.5).full == pytest.approx(190.738 / 2)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[reference]\nfull = -1\n", r"bad\.toml: reference\.full must be >= 0"),
        ("[platforms.B]\nswitch_on_seconds = 0\n", r"platforms\.B\.switch_on_seconds must be > 0"),
        ("[reference]\nwatts = 3\n", r"unknown key\(s\) in reference: watts"),
        ("reference_cpu = 'half'\n", r"reference_cpu must be a finite number"),
        ("colour = 1\n", r"unknown key\(s\): colour"),
    ],
)
def test_bad_energy_files_name_the_parameter(tmp_path, text, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_energy_model(bad)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_platforms_are_what_the_code_writes(tmp_path, name):
    result = CliRunner().invoke(main, ["platform", "-o", str(tmp_path / name), *SHIPPED[name]])
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).read_bytes() == (REPO / "platforms" / name).read_bytes(), (
        f"platforms/{name} is stale: regenerate it with "
        f"'uv run batsim-google platform -o platforms/{name} {' '.join(SHIPPED[name])}'"
    )


def test_core_rule():
    assert [cores(c) for c in (0.01, 0.25, 0.5, 1.0)] == [1, 6, 12, 24]


_LOADER = """
import json, sys
from simgrid import Engine
engine = Engine(["loader"])
engine.load_platform(sys.argv[1])
print(json.dumps([[h.name, h.core_count, [h.pstate_speed(i) for i in range(h.pstate_count)]] for h in engine.all_hosts]))
"""


def _simgrid_python() -> str:
    """An interpreter that imports SimGrid's Python bindings (Debian: python3-simgrid)."""
    for candidate in dict.fromkeys([sys.executable, "/usr/bin/python3", shutil.which("python3")]):
        if candidate and subprocess.run([candidate, "-c", "import simgrid"], capture_output=True).returncode == 0:
            return candidate
    pytest.skip("SimGrid's Python module is not installed (Debian: apt-get install python3-simgrid)")


@pytest.mark.parametrize("machines", [64, None])
def test_real_simgrid_loads_hosts_and_speeds_as_written(tmp_path, machines):
    path = _platform(tmp_path, machines=machines)
    loaded = subprocess.run([_simgrid_python(), "-c", _LOADER, str(path)], capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    simgrid_hosts = {name: (core, speeds) for name, core, speeds in json.loads(loaded.stdout)}
    written = read_hosts(path)
    assert len(simgrid_hosts) == len(written) == (machines or 12_583) + 1
    for host in written:
        core, speeds = simgrid_hosts[host.name]
        assert core == host.cores
        assert speeds == pytest.approx(list(host.speeds), rel=1e-12)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[reference]\nidle = 300.0\n", r"bad\.toml: reference\.idle \(300\.0 W\) must be <= epsilon \(95\.0 W\)"),
        (
            "[reference]\nidle = 300.0\nepsilon = 300.0\n",
            r"bad\.toml: reference\.epsilon \(300\.0 W\) must be <= full \(190\.738 W\)",
        ),
        ("[reference]\nsleep = 120.0\n", r"bad\.toml: reference\.sleep \(120\.0 W\) must be <= idle \(95\.0 W\)"),
        ("[reference]\noff = 20.0\n", r"reference\.off \(20\.0 W\) must be <= sleep \(9\.75 W\)"),
        ("[reference]\nepsilon = 90.0\n", r"reference\.idle \(95\.0 W\) must be <= epsilon \(90\.0 W\)"),
    ],
)
def test_energy_figures_out_of_order_are_refused(tmp_path, text, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(ParameterError, match=message):
        load_energy_model(bad)


def test_a_platform_override_out_of_order_is_refused_when_written(tmp_path):
    override = tmp_path / "energy.toml"
    override.write_text("[platforms.C]\nfull = 100.0\n")  # below C's scaled idle of 190 W
    with pytest.raises(
        ParameterError, match=r"energy\.toml: platforms\.C\.epsilon \(190\.0 W\) must be <= full \(100\.0 W\)"
    ):
        _platform(tmp_path, machines=64, energy=override)


def test_an_override_of_a_platform_the_cell_lacks_is_refused(tmp_path):
    override = tmp_path / "energy.toml"
    override.write_text("[platforms.Z]\nfull = 500.0\n")
    result = CliRunner().invoke(
        main, ["platform", "--machines", "64", "--energy", str(override), "-o", str(tmp_path / "p.xml")]
    )
    assert result.exit_code == 2
    assert (
        result.output
        == f"Error: {override}: platforms.Z: no machine of the cell has this platform ID (it has A, B, C)\n"
    )


def test_the_documented_energy_override_loads_as_written(tmp_path):
    text = (REPO / "docs" / "platforms.md").read_text()
    example = re.search(r"```toml\n(reference_cpu = .*?)```", text, re.S).group(1)
    (tmp_path / "energy.toml").write_text(example)
    hosts = compute_hosts(_platform(tmp_path, machines=64, energy=tmp_path / "energy.toml"))
    assert {h.properties["platform_id"] for h in hosts} == {"A", "B", "C"}


def test_a_host_id_used_twice_is_refused(tmp_path):
    platform = tmp_path / "twice.xml"
    platform.write_text(
        '<?xml version="1.0"?>\n<platform version="4.1"><zone id="z" routing="Full">\n'
        '<host id="m1" speed="1Gf"/>\n<cluster id="c" prefix="m" radical="0-1" speed="1Gf" bw="1GBps" lat="1us"/>\n'
        "</zone></platform>\n"
    )
    with pytest.raises(InputFileError, match=f"^{re.escape(str(platform))}: host id 'm1' is used 2 times$"):
        read_hosts(platform)
