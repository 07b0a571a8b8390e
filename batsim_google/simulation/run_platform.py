"""The platform a run simulated, recorded in its folder, so that its metrics are never computed
against another one.

Given the platform of another run (``metrics DIR --platform OTHER.xml``), the utilization came out
a hundred times too small, with no error: the capacities divided by were another cell's. A run
writes its compute hosts' names and CPU capacities to :data:`PLATFORM_RECORD`; the readers of a run
compare the platform they are given with it, or, for a folder without the record (another tool's
run), with the machine count Batsim wrote (``out_schedule.csv``).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from batsim_google.errors import InputFileError
from batsim_google.output_files import write_text
from batsim_google.platform.simgrid_xml import PlatformHost

#: The record's file name in a run's folder.
PLATFORM_RECORD = "platform.json"
#: Batsim's summary of a run, which counts its machines.
SCHEDULE_FILE = "out_schedule.csv"


def _hosts(hosts: Sequence[PlatformHost]) -> list[list]:
    return [[host.name, float(host.properties.get("cpu_capacity", 1.0))] for host in hosts]


def record_platform(folder: Path, platform: Path, hosts: Sequence[PlatformHost]) -> None:
    """Write the compute ``hosts`` of ``platform`` (names, CPU capacities) into a run's ``folder``."""
    record = {"platform": str(Path(platform).resolve()), "hosts": _hosts(hosts)}
    write_text(Path(folder) / PLATFORM_RECORD, json.dumps(record) + "\n")


def _recorded(folder: Path) -> dict | None:
    path = Path(folder) / PLATFORM_RECORD
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputFileError(f"{path}: not the record of a run's platform ({error})") from None


def _batsim_machines(folder: Path) -> int | None:
    path = Path(folder) / SCHEDULE_FILE
    try:
        with path.open(newline="") as handle:
            return int(next(csv.DictReader(handle))["nb_computing_machines"])
    except (OSError, StopIteration, KeyError, ValueError):
        return None


def check_run_platform(folder: Path, platform: Path, hosts: Sequence[PlatformHost]) -> None:
    """Refuse ``platform`` (its compute ``hosts``) for the run in ``folder`` if the run simulated
    another one: an InputFileError naming both and the first difference."""
    record = _recorded(folder)
    given = _hosts(hosts)
    if record is None:
        machines = _batsim_machines(folder)
        if machines is not None and machines != len(given):
            raise InputFileError(
                f"{platform}: {len(given)} compute hosts, but the run in {folder} simulated {machines} machines "
                f"({SCHEDULE_FILE}): give the platform it simulated"
            )
        return
    ran = [[str(name), float(capacity)] for name, capacity in record.get("hosts", [])]
    if ran == given:
        return
    if len(ran) != len(given):
        difference = f"{len(given)} compute hosts, the run's {len(ran)}"
    else:
        index = next(i for i, (a, b) in enumerate(zip(ran, given, strict=True)) if a != b)
        difference = f"host {index} is {given[index][0]} of cpu_capacity {given[index][1]:g}, the run's {ran[index][0]} of {ran[index][1]:g}"
    raise InputFileError(
        f"{platform}: not the platform the run in {folder} simulated ({record.get('platform')}): {difference}"
    )
