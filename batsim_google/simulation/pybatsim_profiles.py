"""pybatsim's table of job profiles, kept as numbers: a profile is read when its job is submitted.

pybatsim 3.2.1 keeps every profile it hears of, each as the dict Batsim sent: a loaded workload's
are all in the first message (SIMULATION_BEGINS), a streamed workload's and the restarts' come as
they are registered. A generated workload has a profile per task, ``{"type": "delay", "delay":
153.48}``, about 400 bytes of Python objects each: 90 MB of the scheduler's process for three days
of a 1,024-machine cell, for a number the front-end reads once, when the job is submitted. Here a
delay profile is kept as its delay and given back as the same dict whenever read; any other
profile is kept as it came. The first message is decoded so from the start, so that the whole
table is never held as dicts, even for a moment.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping

DELAY = "delay"


def _as_number(value: dict) -> object:
    """A JSON object as :func:`json.loads` gives it, or a delay profile as its delay (a float)."""
    if len(value) == 2 and value.get("type") == DELAY and type(value.get(DELAY)) is float:
        return value[DELAY]
    return value


class Profiles(MutableMapping):
    """One workload's profiles by name: a delay profile stored as its delay."""

    __slots__ = ("_stored",)

    def __init__(self, stored: dict | None = None) -> None:
        """``stored``: profiles by name, a delay profile's as its delay (a float), adopted as is."""
        self._stored: dict[str, object] = {} if stored is None else stored

    def __getitem__(self, name: str) -> object:
        stored = self._stored[name]
        return {"type": DELAY, DELAY: stored} if type(stored) is float else stored

    def __setitem__(self, name: str, profile: object) -> None:
        if type(profile) is dict and profile.keys() == {"type", DELAY} and profile["type"] == DELAY:
            delay = profile[DELAY]
            self._stored[name] = delay if type(delay) is float else profile
        else:
            self._stored[name] = profile

    def __delitem__(self, name: str) -> None:
        del self._stored[name]

    def __contains__(self, name: object) -> bool:
        return name in self._stored

    def __iter__(self) -> Iterator[str]:
        return iter(self._stored)

    def __len__(self) -> int:
        return len(self._stored)


class ProfileTables(dict):
    """pybatsim's ``profiles``: workload name -> :class:`Profiles` (a table pybatsim adds is one too)."""

    def __setitem__(self, workload: str, profiles: dict) -> None:
        if not isinstance(profiles, Profiles):
            given, profiles = profiles, Profiles()
            profiles.update(given)
        super().__setitem__(workload, profiles)


def decode(text: str) -> dict:
    """A Batsim message, as :func:`json.loads` gives it but for the profiles of SIMULATION_BEGINS,
    which come as :class:`ProfileTables` (the delay profiles numbers from the start)."""
    if '"SIMULATION_BEGINS"' not in text[:200]:
        return json.loads(text)
    message = json.loads(text, object_hook=_as_number)
    for event in message.get("events", []):
        if event.get("type") == "SIMULATION_BEGINS":
            data = event["data"]
            tables = data.get("profiles", {})
            data["profiles"] = ProfileTables()
            for workload, stored in tables.items():  # delay profiles already floats: adopted, not copied
                dict.__setitem__(data["profiles"], workload, Profiles(stored))
    return message
