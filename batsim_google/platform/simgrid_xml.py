"""SimGrid platform XML for Batsim 4.2.1: one host per machine of a cell, plus one master host.

- **Zone**: a single zone with cluster routing (``routing="Cluster"``) holding explicit hosts, each
  with a private split-duplex link, and a backbone. Its memory grows linearly with the host count,
  whereas ``routing="Full"`` stores a route per host pair (more than 1 GB at 12k hosts).
- **Names**: ``m00000``, ``m00001``... zero-padded to one width. SimGrid lists hosts by name and
  Batsim numbers machines in that order, so Batsim resource ``i`` is machine ``i`` of the cell. The
  master host, ``master`` (property ``role=master``), runs Batsim itself and no job.
- **Cores and speed**: a machine of normalized CPU capacity ``c`` has ``max(1, round(24 c))``
  cores (the largest machine has 24) of 1 Gflop/s each, so its speed is proportional to its
  capacity. The 24 is a convention: the trace hides core counts. Jobs with ``delay`` profiles do
  not depend on it; a compute profile of ``f`` flops takes ``f / 1e9`` seconds on one core.
- **Properties**: ``platform_id``, ``cpu_capacity``, ``memory_capacity`` (normalized, as in the
  trace), ``machine_id`` for a cell read from a trace, and the energy model of
  :mod:`batsim_google.platform.energy`: pstate 0 computes, 1 sleeps, 2 and 3 are the virtual switch-off and
  switch-on pstates (``sleep_pstates="1:2:3"``).
- **Network**: the bandwidths of Batsim's example clusters (125 MBps per host, 2.25 GBps backbone)
  with no latency. Batsim talks to each job through the route from the master host, so with its
  examples' latencies (0.6 ms there) a burst of N jobs at one instant starts one job every 0.6 ms
  of simulated time, each a simulation step over all the jobs running; without them the burst
  starts at its instant, in half the wall time (docs/benchmarks.md).
- **SimGrid settings** (``<config>``, read by SimGrid while Batsim loads the platform, before any
  actor exists): every job is a SimGrid actor with its own stack. SimGrid's default 8 MiB stack
  and its guard page make two memory mappings per actor, so past about 32,000 jobs at once Batsim
  aborts on the kernel's ``vm.max_map_count`` (65,530). Small stacks without guard pages lift
  that cap; 16 KiB keeps them at about 1 KB of resident memory per job (64 KiB stacks cost 47 KB).
"""

from __future__ import annotations

import collections
import functools
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from xml.parsers import expat
from xml.sax.saxutils import escape, quoteattr

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.output_files import write_text
from batsim_google.parameters import MAX_MACHINES
from batsim_google.platform.energy import EnergyModel, PowerProfile

if TYPE_CHECKING:
    import polars as pl

    from batsim_google.platform.cell import Cell

FULL_MACHINE_CORES = 24
CORE_SPEED = 1e9
#: Speed (flop/s) of the sleep pstate: it never computes, but SimGrid wants a positive speed.
SLEEP_SPEED = 1e-3
SLEEP_PSTATES = "1:2:3"
MASTER = "master"
NAME_WIDTH = 5
LINK = 'bandwidth="125MBps" latency="0us" sharing_policy="SPLITDUPLEX"'
BACKBONE = 'bandwidth="2.25GBps" latency="0us"'
#: SimGrid settings every run of these platforms gets (see above); stack size in KiB.
SIMGRID_CONFIG = {"contexts/guard-size": "0", "contexts/stack-size": "16"}
#: SimGrid's speed units (``f`` or ``flops``, with an SI prefix, short or spelt out); no unit is flop/s.
_PREFIXES = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21, "Y": 1e24}
_SPELT = {
    "": "",
    "kilo": "k",
    "mega": "M",
    "giga": "G",
    "tera": "T",
    "peta": "P",
    "exa": "E",
    "zetta": "Z",
    "yotta": "Y",
}
_UNITS = {
    "": 1.0,
    **{f"{prefix}{unit}": factor for prefix, factor in _PREFIXES.items() for unit in ("f", "flops")},
    **{f"{spelt}flops": _PREFIXES[prefix] for spelt, prefix in _SPELT.items()},
}
_SPEED = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
#: The host Batsim 4.2.1 runs itself on when no host has the ``master`` role (its ``--master-host``).
BATSIM_MASTER_HOST = "master_host"
#: Elements that declare hosts, and those SimGrid had that this reader cannot expand.
HOST_ELEMENTS = ("host", "cluster", "cabinet", "peer")
REFUSED_ELEMENTS = {"include": "SimGrid 3.x's <include>: paste the included file in its place"}
#: The SimGrid Batsim 4.2.1 runs on, whose settings are below.
SIMGRID_VERSION = "3.32"
#: The settings (``<config>``'s ``<prop id=...>``) SimGrid 3.32 takes in a platform, as it lists them
#: when it aborts on one it does not know (SimGrid 3.2x's underscore names, e.g.
#: ``network/TCP_gamma``, and removed ones, e.g. ``network/coordinates``, are gone).
SIMGRID_SETTINGS = frozenset(
    """
    bmf/max-iterations bmf/precision cmonkey/host cmonkey/link cmonkey/tell cmonkey/time
    contexts/factory contexts/guard-size contexts/nthreads contexts/stack-size contexts/synchro
    cpu/maxmin-selective-update cpu/model cpu/optim cpu/solver debug/breakpoint debug/clean-atexit
    debug/verbose-exit disk/model disk/solver exception/cutpath help-nostop host/model host/solver
    maxmin/concurrency-limit maxmin/precision model-check/replay model-check/timeout network/TCP-gamma
    network/bandwidth-factor network/crosstraffic network/latency-factor network/loopback-bw
    network/loopback-lat network/maxmin-selective-update network/model network/optim network/solver
    network/weight-S ns3/TcpModel ns3/seed path plugin plugin/dvfs/governor plugin/dvfs/max-pstate
    plugin/dvfs/min-pstate plugin/dvfs/sampling-rate smpi/IB-penalty-factors smpi/async-small-thresh
    smpi/auto-shared-malloc-thresh smpi/bw-factor smpi/comp-adjustment-file smpi/cpu-threshold
    smpi/display-allocs smpi/errors-are-fatal smpi/grow-injected-times smpi/host-speed smpi/hostfile
    smpi/init smpi/iprobe smpi/iprobe-cpu-usage smpi/lat-factor smpi/list-leaks smpi/map smpi/np
    smpi/pedantic smpi/replay smpi/send-is-detached-thresh smpi/shared-malloc smpi/simulate-computation
    smpi/test smpi/trace-call-location smpi/trace-call-use-absolute-path smpi/wtime surf/precision
    tracing tracing/actor tracing/basic tracing/categorized tracing/comment tracing/comment-file
    tracing/disable-destroy tracing/disable_link tracing/disable_power tracing/filename tracing/platform
    tracing/platform/topology tracing/precision tracing/smpi tracing/smpi/computing
    tracing/smpi/display-sizes tracing/smpi/format tracing/smpi/format/ti-one-file tracing/smpi/group
    tracing/smpi/internals tracing/smpi/sleeping tracing/uncategorized tracing/vm
    """.split()
)
#: Settings SimGrid 3.32 declares only when SMPI runs (Batsim starts it for a workload of ``smpi``
#: profiles); without it, SimGrid aborts on them too.
SIMGRID_SMPI_SETTINGS = frozenset(
    """
    smpi/allgather smpi/allgatherv smpi/allreduce smpi/alltoall smpi/alltoallv smpi/barrier smpi/bcast
    smpi/coll-selector smpi/display-timing smpi/finalization-barrier smpi/gather smpi/keep-temps
    smpi/ois smpi/or smpi/os smpi/privatization smpi/privatize-libs smpi/reduce smpi/reduce_scatter
    smpi/scatter smpi/shared-malloc-blocksize smpi/shared-malloc-hugepage smpi/tmpdir
    """.split()
)


def cores(cpu: float, full_machine_cores: int = FULL_MACHINE_CORES) -> int:
    """Core count of a machine of normalized CPU capacity ``cpu`` (the rule above)."""
    return max(1, round(cpu * full_machine_cores))


def _wattages(profile: PowerProfile) -> str:
    states = [
        (profile.idle, profile.epsilon, profile.full),
        (profile.sleep,) * 3,
        (profile.switch_off_watts,) * 3,
        (profile.switch_on_watts,) * 3,
    ]
    return ", ".join(":".join(repr(watts) for watts in state) for state in states)


def _host_body(platform_id: str, cpu: float, energy: EnergyModel, full_machine_cores: int) -> tuple[str, str]:
    """(attributes after the name, properties before memory) shared by the machines of one type."""
    profile = energy.profile(platform_id, cpu)
    speeds = [CORE_SPEED, SLEEP_SPEED, 1.0 / profile.switch_off_seconds, 1.0 / profile.switch_on_seconds]
    attributes = (
        f' speed="{", ".join(f"{speed!r}f" for speed in speeds)}" core="{cores(cpu, full_machine_cores)}" pstate="0">\n'
    )
    properties = (
        f'    <prop id="wattage_per_state" value="{_wattages(profile)}"/>\n'
        f'    <prop id="wattage_off" value="{profile.off!r}"/>\n'
        f'    <prop id="sleep_pstates" value="{SLEEP_PSTATES}"/>\n'
        f'    <prop id="platform_id" value={quoteattr(platform_id)}/>\n'
        f'    <prop id="cpu_capacity" value="{cpu!r}"/>\n'
    )
    return attributes, properties


def host_names(count: int) -> pl.Series:
    """Names of ``count`` machines, zero-padded to one width so that name order is machine order."""
    import polars as pl  # here: the scheduler reads platforms (:func:`read_hosts`) without polars

    width = max(NAME_WIDTH, len(str(count - 1)))
    return pl.Series("name", [f"m{index:0{width}d}" for index in range(count)])


def write_platform(
    path: str | Path,
    cell: Cell,
    energy: EnergyModel,
    *,
    full_machine_cores: int = FULL_MACHINE_CORES,
) -> None:
    """Write the platform of ``cell`` with the power figures of ``energy`` to ``path``."""
    import polars as pl

    types = cell.machines.select("platform_id", "cpu").unique(maintain_order=True)
    unknown = sorted(set(energy.platforms) - set(types["platform_id"]))
    if unknown:
        raise ParameterError(
            f"{energy.source}: platforms.{unknown[0]}: no machine of the cell has this platform ID "
            f"(it has {', '.join(sorted(set(types['platform_id'])))})"
        )
    bodies = [_host_body(p, c, energy, full_machine_cores) for p, c in types.iter_rows()]
    types = types.with_columns(
        pl.Series("attributes", [a for a, _ in bodies]), pl.Series("properties", [p for _, p in bodies])
    )
    hosts = cell.machines.join(types, on=["platform_id", "cpu"], how="left", maintain_order="left")
    name = host_names(len(cell))
    machine_id = (
        pl.concat_str(
            pl.lit('    <prop id="machine_id" value="'), pl.col("machine_id").cast(pl.String), pl.lit('"/>\n')
        )
        if "machine_id" in cell.machines.columns
        else pl.lit("")
    )
    text = (
        hosts.with_columns(name)
        .select(
            pl.concat_str(
                pl.lit('  <host id="'),
                pl.col("name"),
                pl.lit('"'),
                pl.col("attributes"),
                pl.col("properties"),
                pl.lit('    <prop id="memory_capacity" value="'),
                pl.col("memory").cast(pl.String),
                pl.lit('"/>\n'),
                machine_id,
                pl.lit('  </host>\n  <link id="'),
                pl.col("name"),
                pl.lit(f'_link" {LINK}/>\n'),
                pl.lit('  <host_link id="'),
                pl.col("name"),
                pl.lit('" up="'),
                pl.col("name"),
                pl.lit('_link_UP" down="'),
                pl.col("name"),
                pl.lit('_link_DOWN"/>\n'),
            )
        )
        .to_series()
        .str.join("")
        .item()
    )
    header = (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        f"<!-- Written by batsim-google: {escape(cell.description)}; {len(cell)} machines.\n"
        # The old module path stays in this comment so that the shipped platforms keep their bytes;
        # batsim_google/platform/ is the folder that holds the rules now.
        f"     Energy figures: {escape(energy.source)}. See batsim_google/platform.py for the rules. -->\n"
        '<platform version="4.1">\n'
        "<config>\n"
        + "".join(f'  <prop id="{key}" value="{value}"/>\n' for key, value in SIMGRID_CONFIG.items())
        + "</config>\n"
        '<zone id="cell" routing="Cluster">\n'
    )
    footer = (
        f'  <host id="{MASTER}" speed="{CORE_SPEED!r}f">\n'
        '    <prop id="role" value="master"/>\n'
        "  </host>\n"
        f'  <link id="{MASTER}_link" {LINK}/>\n'
        f'  <host_link id="{MASTER}" up="{MASTER}_link_UP" down="{MASTER}_link_DOWN"/>\n'
        f'  <backbone id="backbone" {BACKBONE}/>\n'
        "</zone>\n"
        "</platform>\n"
    )
    write_text(path, header + text + footer)


@dataclass(frozen=True)
class PlatformHost:
    """A host as the platform file describes it: speeds (flop/s) of its pstates, cores, props."""

    name: str
    speeds: tuple[float, ...]
    cores: int
    properties: dict[str, str]

    @property
    def roles(self) -> set[str]:
        """Batsim's roles: the ``role`` property (comma-separated), and ``master`` for the host
        named ``master_host``, Batsim's default ``--master-host``."""
        roles = {role.strip() for role in self.properties.get("role", "").split(",") if role.strip()}
        return roles | {"master"} if self.name == BATSIM_MASTER_HOST else roles

    @property
    def computes(self) -> bool:
        """Whether Batsim makes it a compute machine (neither master nor storage)."""
        return not {"master", "storage"} & self.roles

    @property
    def has_power_model(self) -> bool:
        """Whether SimGrid's energy plugin has power figures for it (``wattage_per_state``)."""
        return bool(self.properties.get("wattage_per_state", "").strip())


def pstate_watts(host: PlatformHost) -> tuple[tuple[float, float, float], ...] | None:
    """(idle, epsilon, full) watts of each of the host's pstates, as SimGrid's energy plugin reads
    ``wattage_per_state`` ("idle:full" means epsilon = idle); None without one."""
    value = host.properties.get("wattage_per_state", "").strip()
    if not value:
        return None
    try:
        return _parse_watts(value)
    except ValueError:
        raise InputFileError(
            f"host {host.name}: wattage_per_state {value!r}: a pstate is not idle:full or idle:epsilon:full "
            "(finite watts >= 0)"
        ) from None


@functools.lru_cache(maxsize=64)
def _parse_watts(value: str) -> tuple[tuple[float, float, float], ...]:
    states = []
    for state in value.split(","):
        watts = [float(part) for part in state.split(":")]
        if len(watts) not in (2, 3) or not all(0 <= watt < math.inf for watt in watts):
            raise ValueError(state)
        states.append((watts[0], watts[0], watts[1]) if len(watts) == 2 else (watts[0], watts[1], watts[2]))
    return tuple(states)


def sleep_pstates(properties: Mapping[str, str]) -> tuple[int, int, int] | None:
    """A host's Batsim ``sleep_pstates`` property: (sleep, switch-off, switch-on) pstates of its
    first sleep state (Batsim takes several, comma-separated), or None."""
    value = properties.get("sleep_pstates")
    if not value:
        return None
    sleep, off, on = (int(part) for part in value.split(",")[0].split(":"))
    return sleep, off, on


def _speeds(text: str, where: str) -> tuple[float, ...]:
    speeds = []
    for part in text.split(","):
        match = _SPEED.match(part)
        if match is None or match.group(2) not in _UNITS:
            raise InputFileError(f"{where}: unreadable speed {part.strip()!r} (SimGrid's units: f, Gf, Gflops...)")
        speed = float(match.group(1)) * _UNITS[match.group(2)]
        if not math.isfinite(speed):  # 0 is a storage host's
            raise InputFileError(f"{where}: speed {part.strip()!r} must be a finite number of flop/s")
        speeds.append(speed)
    return tuple(speeds)


def parse_speed(text: str, where: str = "--speed") -> float:
    """One speed in SimGrid's notation (``1Gf``, ``2.5e9``, ``16.673E9flops``), flop/s, finite and > 0."""
    speeds = _speeds(text, where)
    if len(speeds) != 1 or not 0 < speeds[0] < math.inf:
        raise ParameterError(f"{where}: a speed must be one positive, finite number of flop/s (got {text!r})")
    return speeds[0]


def _radical(text: str, where: str) -> list[int]:
    """The numbers of a cluster's ``radical``: comma-separated numbers and ``first-last`` ranges,
    at most :data:`~batsim_google.parameters.MAX_MACHINES` of them."""
    ranges = []
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            ranges.append(range(int(first), int(last or first) + 1))
    except ValueError:
        raise InputFileError(f"{where}: unreadable radical {text!r}") from None
    count = sum(map(len, ranges))
    if count > MAX_MACHINES:
        raise InputFileError(f"{where}: radical {text!r} names {count} hosts, more than {MAX_MACHINES}")
    return [number for numbers in ranges for number in numbers]


#: Host properties that are numbers: finite and > 0 when given.
CAPACITIES = ("cpu_capacity", "memory_capacity")


def _check_capacities(properties: Mapping[str, str | None], where: str) -> None:
    for name in CAPACITIES:
        value = properties.get(name)
        if value is None:
            continue
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number > 0):
            raise InputFileError(f"{where}: {name} {value!r} must be a finite number > 0")


class _Declarations(Exception):
    """A DOCTYPE that declares entities or other things of its own."""


def _refuse_declarations(path: str | Path) -> None:
    """Refuse a platform whose DOCTYPE has declarations of its own (``<!DOCTYPE platform [...]>``):
    an entity may name a file or URL to read, or expand without bound; SimGrid reads platforms
    against its own DTD. Only the prolog is read (up to the first element); the DTD a DOCTYPE
    names (``SYSTEM "https://simgrid.org/simgrid.dtd"``) is never fetched."""
    parser = expat.ParserCreate()

    def doctype(_name: str, _system: str | None, _public: str | None, internal_subset: int) -> None:
        if internal_subset:
            raise _Declarations

    def declaration(*_: object) -> None:
        raise _Declarations

    def element(*_: object) -> None:
        raise StopIteration

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = parser.UnparsedEntityDeclHandler = declaration
    parser.StartElementHandler = element
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 16):
                parser.Parse(chunk.lstrip(b" \t\r\n") if handle.tell() <= len(chunk) else chunk, False)
    except _Declarations:
        raise InputFileError(
            f"{path}: a DOCTYPE with declarations of its own (<!ENTITY ...> or others) is refused: an entity "
            "could read another file; SimGrid reads platforms against its own DTD"
        ) from None
    except (StopIteration, expat.ExpatError):
        return  # the first element, or an error the parse proper names


def _events(path: str | Path, events: tuple[str, ...]) -> Iterator[tuple[str, ET.Element]]:
    """The platform's elements as they open or close (``events``), read as a stream; leading white
    space (before the ``<?xml`` declaration, which SimGrid skips) is skipped too. A DOCTYPE with
    declarations of its own is refused first (:func:`_refuse_declarations`)."""
    _refuse_declarations(path)
    parser = ET.XMLPullParser(events=events)
    with open(path, "rb") as handle:
        started = False
        while chunk := handle.read(1 << 16):
            if not started:
                chunk = chunk.lstrip(b" \t\r\n")
                started = bool(chunk)
            parser.feed(chunk)
            yield from parser.read_events()
        parser.close()
    yield from parser.read_events()


def _elements(path: str | Path) -> Iterator[ET.Element]:
    """The platform's elements as they close (see :func:`_events`)."""
    for _, element in _events(path, ("end",)):
        yield element


def read_hosts(path: str | Path) -> list[PlatformHost]:
    """Every host of a platform file in file order: its ``<host>`` and ``<peer>`` elements, and
    the hosts of its ``<cluster>`` and ``<cabinet>`` elements (``prefix`` + number + ``suffix``,
    the element's speeds and properties), read as a stream. What SimGrid accepts is read (zones or
    SimGrid 3's ``<AS>``, any DTD version, speeds in any of its units); what cannot be expanded is
    refused naming the element."""
    hosts = []
    try:
        for element in _elements(path):
            if element.tag in REFUSED_ELEMENTS:
                raise InputFileError(f"{path}: <{element.tag}> is not read: {REFUSED_ELEMENTS[element.tag]}")
            if element.tag not in HOST_ELEMENTS:
                continue
            name = element.get("id", "")
            where = f"{path}: {element.tag} {name!r}"
            speeds = _speeds(element.get("speed", ""), where)
            try:
                cores = int(element.get("core", "1"))
            except ValueError:
                raise InputFileError(f"{where}: unreadable core count {element.get('core')!r}") from None
            properties = {prop.get("id"): prop.get("value") for prop in element.iter("prop")}
            _check_capacities(properties, where)
            if element.tag in ("host", "peer"):
                hosts.append(PlatformHost(name, speeds, cores, properties))
            else:
                prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
                hosts += [
                    PlatformHost(f"{prefix}{number}{suffix}", speeds, cores, properties)
                    for number in _radical(element.get("radical", ""), where)
                ]
            if len(hosts) > MAX_MACHINES + 1:  # the machines and a master
                raise InputFileError(f"{path}: more than {MAX_MACHINES} hosts")
            element.clear()
    except (ET.ParseError, OSError) as error:
        raise InputFileError(f"{path}: {error}") from error
    names = collections.Counter(host.name for host in hosts)
    repeated = [name for name, count in names.items() if count > 1]
    if repeated:  # SimGrid refuses it; Batsim's resource ids would not be ours
        raise InputFileError(f"{path}: host id {repeated[0]!r} is used {names[repeated[0]]} times")
    return hosts


def simgrid_settings(path: str | Path) -> dict[str, str]:
    """The platform's SimGrid settings (``<config>``'s properties). SimGrid's DTD puts ``<config>``
    before any zone, so the reading stops at the first host."""
    settings = {}
    try:
        for element in _elements(path):
            if element.tag == "config":
                settings |= {prop.get("id", ""): prop.get("value", "") for prop in element.iter("prop")}
            elif element.tag in HOST_ELEMENTS:
                break
    except (ET.ParseError, OSError) as error:
        raise InputFileError(f"{path}: {error}") from error
    return settings


def check_simgrid_settings(path: str | Path, smpi: bool) -> None:
    """Refuse a platform whose ``<config>`` sets what SimGrid 3.32 does not know (it aborts as it
    loads the platform), ``smpi`` whether the workloads run SMPI (which declares more): renamed
    settings with their new names, then unknown ones, then SMPI's."""
    known = SIMGRID_SETTINGS | (SIMGRID_SMPI_SETTINGS if smpi else frozenset())
    spelt = {name.replace("_", "-").lower(): name for name in SIMGRID_SETTINGS | SIMGRID_SMPI_SETTINGS}
    renamed, unknown, smpi_only = [], [], []
    for name in simgrid_settings(path):
        if name in known:
            continue
        if name in SIMGRID_SMPI_SETTINGS:
            smpi_only.append(repr(name))
        elif new_name := spelt.get(name.replace("_", "-").lower()):
            renamed.append(f"{name!r} (now {new_name!r})")
        else:
            unknown.append(repr(name))
    parts = renamed + [f"{', '.join(unknown)} (no such setting{'s' if len(unknown) > 1 else ''})"] * bool(unknown)
    parts += [f"{', '.join(smpi_only)} (SMPI's: taken only with a workload of smpi profiles)"] * bool(smpi_only)
    if parts:
        raise InputFileError(
            f"{path}: <config> sets {', '.join(parts)}: SimGrid {SIMGRID_VERSION} (Batsim 4.2.1's) aborts on "
            "settings it does not know; rename or remove them"
        )


def _holds(path: str | Path, text: bytes) -> bool:
    """Whether the file holds ``text``, read in chunks."""
    with open(path, "rb") as handle:
        tail = b""
        while chunk := handle.read(1 << 20):
            if text in tail + chunk[: len(text)] or text in chunk:
                return True
            tail = chunk[-len(text) + 1 :]
    return False


def unrouted_hosts(path: str | Path) -> list[tuple[str, str]]:
    """(zone, host) of each ``<host>`` declared in a zone without routing (``routing="None"``),
    read as a stream (parsed only if the file holds a ``None`` at all: a whole cell's 12,583 hosts
    take seconds to parse, a byte search milliseconds)."""
    zones, unrouted = [], []
    if not _holds(path, b"None"):
        return unrouted
    try:
        for event, element in _events(path, ("start", "end")):
            if element.tag in ("zone", "AS"):
                if event == "start":
                    zones.append((element.get("id", ""), element.get("routing")))
                else:
                    zones.pop()
                    element.clear()
            elif event == "start" and element.tag == "host" and zones and zones[-1][1] == "None":
                unrouted.append((zones[-1][0], element.get("id", "")))
    except (ET.ParseError, OSError) as error:
        raise InputFileError(f"{path}: {error}") from error
    return unrouted


def check_simgrid_accepts(path: str | Path, smpi: bool) -> None:
    """Refuse a platform SimGrid 3.32 aborts on in a run: settings it does not know, as it loads
    the platform (:func:`check_simgrid_settings`), and hosts in a zone without routing, which it
    cannot route to, at the first job that needs a route to them (even with the Constant network
    model)."""
    check_simgrid_settings(path, smpi)
    unrouted = unrouted_hosts(path)
    if unrouted:
        zone, host = unrouted[0]
        others = sum(z == zone for z, _ in unrouted) - 1
        hosts = f"host {host!r}" + (f" and {others} other(s)" if others else "")
        raise InputFileError(
            f'{path}: zone {zone!r} has routing="None" and holds {hosts}: SimGrid {SIMGRID_VERSION} cannot route to '
            'a host there, and Batsim aborts at the first job ("There can\'t be route in an Empty zone"); give the '
            'zone a routing, e.g. routing="Full"'
        )


def check_master(path: str | Path, hosts: list[PlatformHost]) -> None:
    """Refuse a platform Batsim 4.2.1 cannot start on: it needs exactly one master host (it runs
    itself there), a host with the ``master`` role or named ``master_host``."""
    masters = [host.name for host in hosts if "master" in host.roles]
    if len(masters) > 1:
        raise InputFileError(f"{path}: {len(masters)} master hosts ({', '.join(masters)}): Batsim takes one")
    if not masters:
        like = [host.name for host in hosts if "master" in host.name.lower()]
        hint = f" ({like[0]!r} is neither)" if like else ""
        raise InputFileError(
            f"{path}: no master host{hint}: Batsim runs itself on a host named {BATSIM_MASTER_HOST!r} or with "
            '<prop id="role" value="master"/>; add one or give the role to a host'
        )


def energy_model_gap(hosts: list[PlatformHost]) -> str | None:
    """None when every compute host has power figures (Batsim's ``-E`` can measure energy), else
    what lacks them, e.g. ``'4 of 4 compute hosts (Jupiter, ...) have no wattage_per_state'``."""
    lacking = [host.name for host in hosts if host.computes and not host.has_power_model]
    if not lacking:
        for host in hosts:  # SimGrid's energy plugin aborts on a count that is not the pstates'
            figures = len(host.properties.get("wattage_per_state", "").split(","))
            if host.has_power_model and figures != len(host.speeds):
                return f"host {host.name!r} has {figures} wattage_per_state entries for {len(host.speeds)} pstates"
        return None
    computing = sum(host.computes for host in hosts)
    names = ", ".join(lacking[:3]) + (", ..." if len(lacking) > 3 else "")
    return f"{len(lacking)} of {computing} compute hosts ({names}) have no wattage_per_state"


def compute_hosts(path: str | Path) -> list[PlatformHost]:
    """The compute hosts of a platform in Batsim's resource order (by name)."""
    return in_batsim_order(read_hosts(path))


def in_batsim_order(hosts: Iterable[PlatformHost]) -> list[PlatformHost]:
    """The compute hosts among ``hosts``, in Batsim's resource order (by name)."""
    return sorted((host for host in hosts if host.computes), key=lambda host: host.name)
