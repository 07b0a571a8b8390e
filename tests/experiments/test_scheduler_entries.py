"""Campaign ``[schedulers.NAME]`` entries: each kind parsed, each refusal with its reason; none of
it starts Batsim (tests/integration/test_scheduler_kinds_batsim.py does)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from batsim_google.errors import ParameterError
from batsim_google.experiments.campaign import load_campaign
from batsim_google.experiments.plan import plan_campaign
from batsim_google.simulation.run import batsim_options
from batsim_google.simulation.schedulers import Scheduler

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
#: A campaign's head: a platform without sleep states or an energy model, and a small workload.
PLAIN_CELL = f"""
        [platforms]
        plain = {{file = "{FIXTURES / "cluster8.xml"}"}}
        [workloads]
        google = {{preset = "google", tasks = 10}}
    """
HEAD = """
    [platforms]
    small = {cell = 8}
    [workloads]
    google = {preset = "google", tasks = 10}
"""
FAILURES = """
    [failures]
    drawn = {mtbf = 20000, mttr = 600, horizon = 7200, seeds = [5]}
"""


def load(tmp_path: Path, text: str, head: str = HEAD):
    path = tmp_path / "campaign.toml"
    path.write_text(textwrap.dedent(head) + textwrap.dedent(text))
    return load_campaign(path)


def test_each_kind_is_parsed_beside_the_policies(tmp_path):
    (tmp_path / "mine.py").write_text(
        "from batsim_google.scheduling.policy_api import Policy\nclass Mine(Policy):\n    pass\n"
    )
    campaign = load(
        tmp_path,
        """
        [policies.google]
        energy = "always-on"
        [schedulers.built-in]
        policy = {energy = "idle-sleep", idle_timeout = 60}
        [schedulers.filler]
        pybatsim = "fillerSched"
        options = {verbose = 0}
        [schedulers.easy]
        command = ["batsched", "-v", "easy_bf", "-s", "{socket}"]
        [schedulers.mine]
        python = "mine.py:Mine"
        options = {awake = 3}
        """,
    )
    schedulers = dict(campaign.all_schedulers())
    assert list(schedulers) == ["google", "built-in", "filler", "easy", "mine"]
    assert schedulers["built-in"].kind == "policy" and schedulers["built-in"].config.idle_timeout == 60
    assert schedulers["filler"] == Scheduler("pybatsim", "fillerSched", {"verbose": 0})
    assert schedulers["easy"].target == ("batsched", "-v", "easy_bf", "-s", "{socket}")
    assert schedulers["mine"].target == f"{tmp_path / 'mine.py'}:Mine"  # relative to the campaign file
    assert schedulers["mine"].options == {"awake": 3}
    runs = plan_campaign(campaign, tmp_path / "out")
    assert [run.policy for run in runs] == list(schedulers)
    assert len({run.fingerprint for run in runs}) == 5
    assert runs[0].config is not None and runs[2].config is None


def test_a_pybatsim_file_is_taken_from_the_campaigns_folder(tmp_path):
    campaign = load(tmp_path, '[schedulers.mine]\npybatsim = "schedulers/mySched.py"\n')
    assert campaign.schedulers[0][1].target == str(tmp_path / "schedulers" / "mySched.py")


def test_declared_needs_give_batsims_options(tmp_path):
    campaign = load(
        tmp_path,
        """
        [schedulers.shared]
        command = ["my-scheduler", "--bind={socket}"]
        needs = {compute_sharing = true, dynamic_jobs = true, failures = true}
        """
        + FAILURES,
    )
    (name, scheduler), *_ = campaign.schedulers
    assert batsim_options(scheduler.needs(), has_events=True) == [
        "--enable-compute-sharing",
        "--enable-dynamic-jobs",
        "--acknowledge-dynamic-jobs",
        "--enable-profile-reuse",
    ]
    # streamed, every job registers a profile of its own, which Batsim frees once the job ended,
    # and no Pajé trace keeps a name per job
    streamed = batsim_options(scheduler.needs(), has_events=True, streamed=True)
    assert "--enable-profile-reuse" not in streamed and "--disable-schedule-tracing" in streamed


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('pybatsim = "fillerSched"\ncommand = ["x", "{socket}"]', "exactly one of policy, pybatsim, command, python"),
        ("options = {}", "exactly one of policy, pybatsim, command, python \\(got none\\)"),
        ('command = ["batsched", "-v", "easy_bf"]', "put '\\{socket\\}' in one argument"),
        ('command = "batsched"', "command must be a non-empty list of strings"),
        ('command = ["x", "{socket}"]\noptions = {a = 1}', "unknown key\\(s\\) in schedulers.s: options"),
        ('python = "x:Y"\nneeds = {failures = true}', "unknown key\\(s\\) in schedulers.s: needs"),
        ('pybatsim = "fillerSched"\nneeds = {sharing = true}', "schedulers.s.needs: unknown key 'sharing'"),
        ('pybatsim = "fillerSched"\nneeds = {failures = 1}', "failures must be true or false"),
        ('python = "nowhere.py:Policy"', "no such file"),
        ('python = "batsim_google.scheduling.tasks:Task"', "not a subclass"),
        ('policy = {restart = "sometimes"}', "schedulers.s.policy: restart must be one of"),
    ],
)
def test_malformed_entries_are_refused_naming_the_entry(tmp_path, entry, message):
    with pytest.raises(ParameterError, match=message):
        load(tmp_path, "[schedulers.s]\n" + entry + "\n")


def test_a_name_in_both_tables_is_refused(tmp_path):
    with pytest.raises(ParameterError, match="both in \\[policies\\] and \\[schedulers\\]: a"):
        load(tmp_path, '[policies.a]\nenergy = "always-on"\n[schedulers.a]\npybatsim = "fillerSched"\n')


@pytest.mark.parametrize(
    "entry",
    [
        'pybatsim = "fillerSched"',  # bundled, known to run jobs on failed machines
        'command = ["batsched", "-v", "easy_bf", "-s", "{socket}"]',  # undeclared: not trusted
        f'python = "{REPO}/examples/policies/power_capped_fcfs.py:PowerCappedFCFS"',  # its own needs
    ],
)
def test_a_scheduler_that_cannot_take_failures_is_refused_with_a_failure_scenario(tmp_path, entry):
    with pytest.raises(ParameterError, match="schedulers.s on platforms.small with failures.drawn refused: .*failures"):
        load(tmp_path, "[schedulers.s]\n" + entry + "\n" + FAILURES)


def test_schedulers_that_take_failures_are_accepted_with_a_failure_scenario(tmp_path):
    campaign = load(
        tmp_path,
        f"""
        [schedulers.events]
        pybatsim = "fillerSchedWithEvents"
        [schedulers.fcfs]
        python = "{REPO}/examples/policies/whole_machine_fcfs.py:WholeMachineFCFS"
        [schedulers.declared]
        command = ["batsched", "-s", "{{socket}}"]
        needs = {{failures = true}}
        """
        + FAILURES,
    )
    assert len(campaign.schedulers) == 3


def test_a_sleeping_scheduler_is_refused_on_a_platform_without_sleep_states(tmp_path):
    head = PLAIN_CELL
    with pytest.raises(ParameterError, match="schedulers.s on platforms.plain refused: .*without sleep_pstates"):
        load(tmp_path, '[schedulers.s]\npybatsim = "fcfsSchedSleep"\n', head)
    with pytest.raises(ParameterError, match="schedulers.s on platforms.plain refused: .*without sleep_pstates"):
        load(tmp_path, '[schedulers.s]\npolicy = {energy = "idle-sleep"}\n', head)


def test_a_sleeping_scheduler_is_refused_without_energy_outputs(tmp_path):
    with pytest.raises(ParameterError, match="refused: .*energy plugin"):
        load(tmp_path, '[schedulers.s]\npybatsim = "fcfsSchedSleep"\n', "energy_outputs = false\n" + HEAD)


def test_a_campaign_horizon_ends_the_built_in_kind_and_the_metrics_of_every_kind(tmp_path):
    campaign = load(
        tmp_path,
        """
        [schedulers.built-in]
        policy = {energy = "always-on"}
        [schedulers.own-horizon]
        policy = {horizon = 3600}
        [schedulers.filler]
        pybatsim = "fillerSched"
        """,
        head="horizon = 7200\n" + textwrap.dedent(HEAD),
    )
    schedulers = dict(campaign.schedulers)
    assert schedulers["built-in"].config.horizon == 7200.0
    assert schedulers["own-horizon"].config.horizon == 3600.0
    assert schedulers["filler"] == Scheduler("pybatsim", "fillerSched")  # another kind: runs to its end
    # ... but every kind is measured over the campaign's window (a policy's own horizon is its own)
    runs = plan_campaign(campaign, tmp_path / "out")
    assert {run.policy: run.window_end for run in runs} == {"built-in": 7200.0, "own-horizon": 3600.0, "filler": 7200.0}
    without = load(tmp_path, '[schedulers.filler]\npybatsim = "fillerSched"\n')
    assert [run.window_end for run in plan_campaign(without, tmp_path / "out2")] == [None]  # the whole run


def test_a_generated_workload_takes_a_walltime_mode(tmp_path):
    import json

    campaign = load(
        tmp_path,
        '[schedulers.filler]\npybatsim = "fillerSched"\n',
        head=HEAD.replace("tasks = 10}", 'tasks = 10, walltime = "exact"}'),
    )
    (run,) = plan_campaign(campaign, tmp_path / "out")
    written = json.loads(run.workload_file.read_text())
    assert written["walltime"]["mode"] == "exact"
    assert all(job["walltime"] > 0 for job in written["jobs"])
    with pytest.raises(ParameterError, match="workloads.google.walltime: requested is for SWF logs"):
        load(
            tmp_path,
            '[schedulers.f]\npybatsim = "fillerSched"\n',
            HEAD.replace("tasks = 10}", 'tasks = 10, walltime = "requested"}'),
        )
    with pytest.raises(ParameterError, match="workloads.google.walltime"):
        load(
            tmp_path,
            '[schedulers.f]\npybatsim = "fillerSched"\n',
            HEAD.replace("tasks = 10}", 'tasks = 10, walltime = "often"}'),
        )


def test_a_trace_window_is_replayed_on_each_platforms_machines(tmp_path):
    """``trace = [...]``: the window converted once per platform size and seed (a scaled replay),
    with the walltime mode asked; its errors name the entry."""
    import json

    from trace_files import event, seconds_us, write_part

    from batsim_google.trace.schema import TaskEvent as E

    write_part(
        tmp_path / "trace",
        [
            event(seconds_us(1), 1, 0, E.SUBMIT),
            event(seconds_us(2), 1, 0, E.SCHEDULE),
            event(seconds_us(30), 1, 0, E.FINISH),
        ],
    )
    (part,) = sorted((tmp_path / "trace").rglob("*.csv.gz"))
    head = f"""
    [platforms]
    small = {{cell = 8}}
    large = {{cell = 16}}
    [workloads]
    window = {{trace = ["{part}"], start = 0, end = 20, seeds = [1, 2], walltime = "2"}}
    """
    campaign = load(tmp_path, '[schedulers.f]\npybatsim = "fillerSched"\n', head)
    runs = plan_campaign(campaign, tmp_path / "out")
    files = {(run.platform, run.workload_seed): run.workload_file for run in runs}
    assert len(set(files.values())) == 4
    for (platform, _), path in files.items():
        written = json.loads(path.read_text())
        assert written["nb_res"] == {"small": 8, "large": 16}[platform]
        assert written["walltime"] == {"mode": "2", "kills": False}
        assert written["meta"]["sample"]["machines"] == written["nb_res"]
    with pytest.raises(ParameterError, match=r"workloads.window.end \(5\) must come after start \(10\)"):
        load(
            tmp_path,
            '[schedulers.f]\npybatsim = "fillerSched"\n',
            head.replace("start = 0, end = 20", "start = 10, end = 5"),
        )


def test_skip_refused_runs_a_scheduler_only_where_it_can(tmp_path):
    text = '[policies.cell]\nenergy = "always-on"\n[schedulers.filler]\npybatsim = "fillerSched"\n'
    failures = FAILURES + "    none = {}\n"
    with pytest.raises(ParameterError, match="schedulers.filler on platforms.small with failures.drawn refused"):
        load(tmp_path, text, HEAD + failures)
    campaign = load(tmp_path, text, "skip_refused = true\n" + textwrap.dedent(HEAD + failures))
    assert campaign.skipped == {("filler", "small", "drawn")}
    runs = plan_campaign(campaign, tmp_path / "out")
    assert sorted((run.policy, run.failures) for run in runs) == [
        ("cell", "drawn"),
        ("cell", "none"),
        ("filler", "none"),
    ]


def test_a_declared_needs_table_takes_no_failures_unless_it_says_so(tmp_path):
    text = '[schedulers.sleeper]\ncommand = ["x", "{socket}"]\nneeds = {sleep_states = true}\n'
    with pytest.raises(ParameterError, match="schedulers.sleeper on platforms.small with failures.drawn refused"):
        load(tmp_path, text, HEAD + FAILURES)
    trusted = text.replace("sleep_states = true", "sleep_states = true, failures = true")
    assert dict(load(tmp_path, trusted, HEAD + FAILURES).schedulers)["sleeper"].needs().failures


def test_a_command_with_long_arguments_is_planned(tmp_path):
    options = '{"' + "x" * 300 + '": 1}'
    campaign = load(
        tmp_path, f'[schedulers.long]\ncommand = ["batsched", "--variant_options", \'{options}\', "-s", "{{socket}}"]\n'
    )
    assert len(plan_campaign(campaign, tmp_path / "out")) == 1


def test_energy_outputs_are_refused_on_a_platform_without_an_energy_model(tmp_path):
    head = PLAIN_CELL
    entry = '[schedulers.s]\npybatsim = "fillerSched"\n'
    with pytest.raises(ParameterError, match=r"platforms.plain: .*cluster8.xml has no energy model \(8 of 8 compute"):
        load(tmp_path, entry, head)
    assert len(load(tmp_path, entry, "energy_outputs = false\n" + head).platforms) == 1
