"""pybatsim's profiles kept as numbers: every profile read back as Batsim sent it."""

from __future__ import annotations

import json
import sys

from batsim_google.simulation.pybatsim_profiles import Profiles, ProfileTables, decode

PROFILES = {
    "w0": {
        "0": {"type": "delay", "delay": 153.480328},
        "service": {"type": "delay", "delay": 3.0e9},
        "1": {"type": "delay", "delay": 10},  # an integer: kept as it came
        "2": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0.0},
        "3": {"type": "composed", "repeat": 2, "seq": ["0", "2"]},
    },
    "other": {},
}


def begins(profiles: dict) -> str:
    event = {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {"nb_resources": 2, "profiles": profiles}}
    return json.dumps({"now": 0.0, "events": [event]})


def test_the_first_message_gives_every_profile_back_as_sent():
    decoded = decode(begins(PROFILES))
    profiles = decoded["events"][0]["data"]["profiles"]
    assert isinstance(profiles, ProfileTables) and all(isinstance(t, Profiles) for t in profiles.values())
    assert {workload: dict(table) for workload, table in profiles.items()} == PROFILES
    assert decoded["events"][0]["data"]["nb_resources"] == 2
    assert type(profiles["w0"]._stored["0"]) is float and type(profiles["w0"]._stored["1"]) is dict


def test_other_messages_are_decoded_as_json_loads_does():
    text = json.dumps({"now": 3.5, "events": [{"type": "JOB_SUBMITTED", "data": {"job_id": "w0!1"}}]})
    assert decode(text) == json.loads(text)


def test_profiles_registered_later_are_kept_as_numbers_and_read_back():
    tables = ProfileTables()
    tables["resubmit"] = {}  # as pybatsim creates a workload it did not know
    tables["resubmit"]["w0_1#1"] = {"type": "delay", "delay": 12.5}
    tables["resubmit"]["odd"] = {"type": "delay", "delay": "12"}
    assert isinstance(tables["resubmit"], Profiles) and "w0_1#1" in tables["resubmit"]
    assert tables["resubmit"]["w0_1#1"] == {"type": "delay", "delay": 12.5}
    assert tables["resubmit"]["odd"] == {"type": "delay", "delay": "12"}
    del tables["resubmit"]["odd"]
    assert list(tables["resubmit"]) == ["w0_1#1"] and len(tables["resubmit"]) == 1


def test_a_delay_profile_takes_a_fraction_of_its_dict():
    as_dict = {"type": "delay", "delay": 153.480328}
    size = sys.getsizeof(as_dict) + sys.getsizeof(as_dict["type"]) + sys.getsizeof(as_dict["delay"])
    stored = decode(begins({"w0": {"0": as_dict}}))["events"][0]["data"]["profiles"]["w0"]._stored["0"]
    assert sys.getsizeof(stored) * 5 < size
