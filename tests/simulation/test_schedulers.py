"""A scheduler of each kind as one value, parsed in one place; the front-end's options written and
read by one class; what a run is given (no Batsim needed)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from batsim_google.errors import ParameterError
from batsim_google.experiments.measured_run import not_restarted_line
from batsim_google.scheduling.policy_config import PolicyConfig
from batsim_google.simulation.frontend import FrontEndOptions
from batsim_google.simulation.policy_loader import load_policy_class
from batsim_google.simulation.schedulers import (
    BUILT_IN,
    PYTHON,
    Scheduler,
    built_in,
    scheduler_entry,
    scheduler_from_text,
    window_end,
    with_horizon,
)
from batsim_google.simulation.settings import RunInputs, SimulationSettings

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "policies"


def test_the_command_line_and_a_campaign_entry_give_the_same_scheduler():
    text = scheduler_from_text("command=batsched -v easy_bf -s {socket}", "{}", '{"failures": true}')
    entry = scheduler_entry(
        {"command": ["batsched", "-v", "easy_bf", "-s", "{socket}"], "needs": {"failures": True}}, "s", Path()
    )
    assert text == entry and text.target == ("batsched", "-v", "easy_bf", "-s", "{socket}")
    assert text.needs().failures
    spec = f"{EXAMPLES / 'deadline_best_fit.py'}:DeadlineBestFit"
    assert scheduler_from_text(f"python={spec}", '{"max_wait": 600}') == Scheduler(PYTHON, spec, {"max_wait": 600})


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("policy={}", "{}", "KIND one of pybatsim, command, python"),  # the built-in one is run without it
        ("command=batsched", '{"a": 1}', "unknown key\\(s\\) in --scheduler: options"),
        ("pybatsim=fillerSched", "[1]", "take a JSON object"),
    ],
)
def test_the_command_line_refuses_what_a_campaign_entry_refuses(text, options, message):
    with pytest.raises(ParameterError, match=message):
        scheduler_from_text(text, options)


def test_the_built_in_scheduler_carries_its_policy_config():
    config = PolicyConfig(energy="idle-sleep", idle_timeout=60.0)
    scheduler = Scheduler.of(config)
    assert scheduler == built_in(config) and scheduler.kind == BUILT_IN and scheduler.config is config
    assert scheduler.needs().sleep_states and not built_in().needs().sleep_states
    assert Scheduler.of("pybatsim=fillerSched").config is None
    with pytest.raises(ParameterError, match="options are for a Policy subclass"):
        Scheduler.of(config, {"x": 1})
    with pytest.raises(ParameterError, match="a scheduler is a Scheduler, a PolicyConfig"):
        Scheduler.of({"energy": "always-on"})  # never a dict


def test_a_policy_subclass_is_named_by_its_module_and_never_loaded_again():
    sys.path.insert(0, str(EXAMPLES))
    try:
        from deadline_best_fit import DeadlineBestFit
    finally:
        sys.path.remove(str(EXAMPLES))
    scheduler = Scheduler.of(DeadlineBestFit, {"max_wait": 600})
    assert scheduler == Scheduler(PYTHON, "deadline_best_fit:DeadlineBestFit", {"max_wait": 600})
    assert load_policy_class(scheduler.target) is DeadlineBestFit  # the class the caller has
    assert scheduler.needs() == DeadlineBestFit.needs


def test_a_policy_of_the_script_being_run_is_named_by_the_scripts_file(monkeypatch):
    from batsim_google.scheduling.policy_api import Policy

    script = type(sys)("__main__")
    script.__file__ = "/somewhere/my_script.py"
    policy = type("Mine", (Policy,), {"__module__": "__main__"})
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert Scheduler.of(policy).target == "/somewhere/my_script.py:Mine"
    del script.__file__  # an interactive session: no file to import it from
    with pytest.raises(ParameterError, match="defined interactively cannot be run"):
        Scheduler.of(policy)


def test_every_kind_is_measured_to_the_same_horizon():
    """As a campaign does: the built-in one stops there (unless it has its own), the others run to
    their end and are measured up to it."""
    filler = Scheduler.of("pybatsim=fillerSched")
    assert with_horizon(filler, 3600.0) == filler and window_end(filler, 3600.0) == 3600.0
    stopped = with_horizon(built_in(), 3600.0)
    assert stopped.config.horizon == 3600.0 and window_end(built_in(), 3600.0) == 3600.0
    own = built_in(PolicyConfig(horizon=600.0))
    assert with_horizon(own, 3600.0) == own and window_end(own, 3600.0) == 600.0
    assert window_end(built_in(), None) is None and window_end(filler, None) is None


def test_the_front_end_options_are_written_and_read_by_one_class():
    config = dataclasses.asdict(PolicyConfig(placement="first-fit"))
    options = FrontEndOptions(policy=config, output="out/out", events=["e.jsonl"])
    written = options.to_json()
    assert written == {"policy": config, "output": "out/out", "events": ["e.jsonl"]}  # defaults left out
    read = FrontEndOptions.from_mapping({**written, "pybatsim_own": 1})
    assert read.policy == config and read.policy_class is None and read.events == ["e.jsonl"]
    policy = read.make_policy([{"cpu_capacity": 1.0, "memory_capacity": 1.0}] * 2)
    assert policy.config == PolicyConfig(placement="first-fit") and len(policy.cluster) == 2


def test_the_settings_and_inputs_are_checked_and_frozen(tmp_path):
    with pytest.raises(ParameterError, match="frontend must be one of pybatsim, batsim-py"):
        SimulationSettings(frontend="zmq")
    with pytest.raises(ParameterError, match="batsim_log must be one of"):
        SimulationSettings(batsim_log="loud")
    with pytest.raises(ParameterError, match="workloads must be a list of files"):
        RunInputs("p.xml", "w.json")
    inputs = RunInputs("p.xml", ["w.json"], ["e.jsonl"])
    assert inputs.files() == [Path("p.xml"), Path("w.json"), Path("e.jsonl")]
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.platform = Path("q.xml")


def test_tasks_not_restarted_are_told_in_the_terms_of_their_scheduler():
    """The built-in one's options, for the built-in one only (a user's policy never had them)."""
    lost = {"not_restarted": 2}
    assert not_restarted_line(lost, built_in()) == (
        "2 task(s) stopped and not restarted (--restart immediate, --max-restarts 10): their work is lost"
    )
    mine = Scheduler(PYTHON, "policies/fcfs.py:FCFS")
    line = not_restarted_line(lost, mine)
    assert (
        line
        == "2 task(s) stopped and not restarted (the python scheduler policies/fcfs.py:FCFS restarted none of them): their work is lost"
    )
    assert "--restart" not in line and not_restarted_line({"not_restarted": 0}, mine) is None
