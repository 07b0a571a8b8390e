"""Hostile inputs through the real command line: each ends in exit status 2 and one line
``Error: ...`` naming the file (or option), the job, host or line, and the field; never a
traceback, never a silent wrong result.

Each case is (id, files to write, command line, words the error must hold); ``{d}`` in a file's
content or the command line is the case's folder.
"""

from __future__ import annotations

import gzip
import json
import re
import time
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from trace_files import event, seconds_us

from batsim_google.cli import main
from batsim_google.trace.schema import TaskEvent as E

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLATFORM = FIXTURES / "cell4_energy.xml"
#: Far less than what a bad input that is not refused at once runs for.
AT_ONCE_S = 60


def workload(jobs: list | str, profiles: dict | str | None = None, head: str = '"nb_res": 4, ') -> str:
    """A Batsim workload's text; ``jobs`` and ``profiles`` as JSON values or raw text."""
    jobs = jobs if isinstance(jobs, str) else json.dumps(jobs)
    profiles = profiles if isinstance(profiles, str) else json.dumps(profiles or {"p": {"type": "delay", "delay": 10}})
    return "{" + head + f'"jobs": {jobs}, "profiles": {profiles}' + "}"


def job(**fields) -> dict:
    return {"id": 0, "subtime": 0, "res": 1, "profile": "p", **fields}


def fit(path: str) -> list[str]:
    return ["fit", path, "-o", "{d}/model.toml", "--no-fidelity", "--no-jobs"]


def run(path: str, *options: str, platform: str = str(PLATFORM)) -> list[str]:
    return ["run", "--platform", platform, "--workload", path, "-o", "{d}/out", "--timeout", "20", *options]


W = "{d}/w.json"
GOOD_WORKLOAD = workload([job()])
MODEL_SNIPPET = (Path(__file__).resolve().parents[2] / "batsim_google" / "data" / "google-2011-cell.toml").read_text()
SWF_HEADER = "; MaxNodes: 4\n; MaxProcs: 4\n"
SWF_JOB = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"


def trace(cpu: str = "0.0625", memory: str = "0.05") -> bytes:
    lines = [
        event(seconds_us(t), 1, 0, code, cpu=cpu, memory=memory)
        for t, code in [(0, E.SUBMIT), (1, E.SCHEDULE), (101, E.FINISH)]
    ]
    return gzip.compress(("\n".join(lines) + "\n").encode())


TRACE_PART = "trace/task_events/part-00000-of-00001.csv.gz"


def campaign(platforms: str = "cell4 = {cell = 4}", workloads: str = 'g = {preset = "google", tasks = 10}') -> str:
    return f'[platforms]\n{platforms}\n[workloads]\n{workloads}\n[policies.borg]\nrestart = "none"\n'


def platform_xml(cluster: str = 'radical="0-3"', props: str = "", doctype: str = "") -> str:
    return (
        "<?xml version='1.0'?>\n"
        + (doctype or '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n')
        + '<platform version="4.1"><zone id="z" routing="Full">\n'
        + f'<cluster id="c" prefix="m" suffix="" {cluster} speed="1Gf" bw="1GBps" lat="0us">{props}</cluster>\n'
        + '<host id="master_host" speed="1Gf"/>\n'
        + "</zone></platform>\n"
    )


CASES = [
    # --- Batsim workloads: the reader that fit, run, estimate and metrics share ---
    ("jobs-integer-fit", {"w.json": workload([1])}, fit(W), ["w.json", "jobs[0]", "not a JSON object"]),
    ("jobs-null-run", {"w.json": workload([job(), None])}, run(W), ["w.json", "jobs[1]", "not a JSON object"]),
    (
        "two-jobs-keys",
        {"w.json": '{"nb_res": 4, "jobs": [], "profiles": {"p": {"type": "delay", "delay": 1}}, "jobs": []}'},
        fit(W),
        ["w.json", "'jobs'", "twice"],
    ),
    (
        "profile-twice",
        {"w.json": workload([job()], '{"p": {"type": "delay", "delay": 10}, "p": {"type": "delay", "delay": 10}}')},
        fit(W),
        ["w.json", "profile 'p'", "twice"],
    ),
    (
        "job-key-twice",
        {"w.json": workload('[{"id": 0, "subtime": 0, "subtime": 5, "res": 1, "profile": "p"}]')},
        run(W),
        ["w.json", "'subtime'", "twice"],
    ),
    ("nested-brackets", {"w.json": "[" * 100_000 + "]" * 100_000}, fit(W), ["w.json", "nested more than"]),
    ("nested-in-jobs", {"w.json": workload("[" + "[" * 50_000 + "]" * 50_000 + "]")}, run(W), ["w.json", "nested"]),
    ("res-string", {"w.json": workload([job(res="2")])}, run(W), ["w.json", "job 0", "res", "'2'"]),
    ("res-fraction", {"w.json": workload([job(res=2.5)])}, fit(W), ["w.json", "job 0", "res", "2.5", "integer"]),
    ("cpu-negative-run", {"w.json": workload([job(cpu=-10)])}, run(W), ["w.json", "job 0", "cpu", "-10"]),
    ("memory-negative-fit", {"w.json": workload([job(memory=-0.5)])}, fit(W), ["w.json", "job 0", "memory", "-0.5"]),
    ("cpu-string", {"w.json": workload([job(cpu="lots")])}, run(W), ["w.json", "job 0", "cpu", "'lots'"]),
    (
        "subtime-string",
        {"w.json": workload([job(subtime="10")])},
        run(W),
        ["w.json", "job 0", "subtime", "'10'", "not a number"],
    ),
    ("subtime-2^42", {"w.json": workload([job(subtime=2**42)])}, run(W), ["w.json", "job 0", "subtime", "2^42"]),
    (
        "priority-string",
        {"w.json": workload([job(priority="high")])},
        fit(W),
        ["w.json", "job 0", "priority", "'high'"],
    ),
    (
        "composed-cycle",
        {
            "w.json": workload(
                [job(profile="a")], {"a": {"type": "composed", "seq": ["b"]}, "b": {"type": "composed", "seq": ["a"]}}
            )
        },
        run(W),
        ["w.json", "profile 'a'", "contains itself"],
    ),
    (
        "scheduling-class-some",
        {"w.json": workload([job(scheduling_class=1), job(id=1)])},
        fit(W),
        ["w.json", "job 1", "scheduling_class", "job 0"],
    ),
    ("big-integer-job", {"w.json": workload([job(subtime=10**30)])}, run(W), ["w.json", "integer"]),
    ("jobs-not-array", {"w.json": workload('{"a": 1}')}, fit(W), ["w.json", "jobs", "array"]),
    (
        "nb-res-string",
        {"w.json": workload([job()], head='"nb_res": "4", ')},
        run(W),
        ["w.json", "nb_res '4'", "integer"],
    ),
    (
        "nb-res-negative",
        {"w.json": workload([job()], head='"nb_res": -3, ')},
        fit(W),
        ["w.json", "nb_res -3", "integer"],
    ),
    (
        "nb-res-fraction",
        {"w.json": workload([job()], head='"nb_res": 2.5, ')},
        run(W),
        ["w.json", "nb_res 2.5", "integer"],
    ),
    # --- parameter files: models, energy figures, campaigns ---
    (
        "model-huge-integer",
        {"m.json": '{"classes": 1' + "0" * 400 + "}"},
        ["generate", "--model", "{d}/m.json", "--tasks", "5", "-o", W],
        ["m.json", "too large"],
    ),
    (
        "model-huge-integer-toml",
        {"m.toml": MODEL_SNIPPET.replace("period = 604800.0", "period = 1" + "0" * 400, 1)},
        ["generate", "--model", "{d}/m.toml", "--tasks", "5", "-o", W],
        ["m.toml", "arrival_profile.period", "finite number"],
    ),
    (
        "model-nested",
        {"m.json": "[" * 5000 + "]" * 5000},
        ["generate", "--model", "{d}/m.json", "--tasks", "5", "-o", W],
        ["m.json", "nested more than"],
    ),
    (
        "model-key-twice",
        {"m.json": '{"classes": [], "classes": []}'},
        ["generate", "--model", "{d}/m.json", "--tasks", "5", "-o", W],
        ["m.json", "'classes'", "twice"],
    ),
    (
        "energy-switch-1e300",
        {"e.toml": "[reference]\nswitch_off_seconds = 1e300\n"},
        ["platform", "--machines", "4", "--energy", "{d}/e.toml", "-o", "{d}/p.xml"],
        ["e.toml", "reference.switch_off_seconds", "at most"],
    ),
    (
        "energy-watts-1e300",
        {"e.toml": "[reference]\nfull = 1e300\n"},
        ["platform", "--machines", "4", "--energy", "{d}/e.toml", "-o", "{d}/p.xml"],
        ["e.toml", "reference.full", "at most"],
    ),
    (
        "campaign-seed-2^64",
        {"c.toml": campaign(workloads='g = {preset = "google", tasks = 10, seeds = [18446744073709551616]}')},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "workloads.g.seeds", "18446744073709551616"],
    ),
    (
        "campaign-seed-negative",
        {"c.toml": campaign(workloads='g = {preset = "google", tasks = 10, seeds = [-1]}')},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "workloads.g.seeds", "-1"],
    ),
    (
        "campaign-cell-1e8",
        {"c.toml": campaign(platforms="big = {cell = 100000000}")},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "platforms.big.cell", "1000000"],
    ),
    (
        "campaign-name-escapes",
        {"c.toml": campaign(platforms='"../up" = {cell = 4}')},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "platforms.../up", "names are"],
    ),
    (
        "campaign-name-absolute",
        {"c.toml": campaign(workloads='"/tmp/x" = {preset = "google", tasks = 10}')},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "workloads./tmp/x", "names are"],
    ),
    (
        "campaign-key-twice-json",
        {"c.json": '{"platforms": {"a": {"cell": 4}}, "platforms": {}}'},
        ["compare", "{d}/c.json", "-o", "{d}/out"],
        ["c.json", "'platforms'", "twice"],
    ),
    (
        "campaign-tasks-1e13",
        {"c.toml": campaign(workloads='g = {preset = "google", tasks = 10000000000000}')},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "workloads.g.tasks", "at most"],
    ),
    (
        "campaign-duration-1e300",
        {"c.toml": campaign(workloads='g = {preset = "google", duration = 1e300}')},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "workloads.g.duration", "at most"],
    ),
    (
        "campaign-arrival-scale-1e300",
        {"c.toml": campaign(workloads='g = {preset = "google", tasks = 10, arrival_scale = 1e300}')},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "workloads.g.arrival_scale", "at most"],
    ),
    (
        "campaign-timeout-1e300",
        {"c.toml": "timeout = 1e300\n" + campaign()},
        ["compare", "{d}/c.toml", "-o", "{d}/out"],
        ["c.toml", "timeout", "at most"],
    ),
    ("run-timeout-huge", {"w.json": GOOD_WORKLOAD}, run(W, "--timeout", "1e300"), ["--timeout", "1e+300"]),
    # --- options at their type's limits ---
    (
        "trace-convert-seed-2^64",
        {TRACE_PART: trace()},
        ["trace", "convert", "{d}/trace", "--seed", "18446744073709551616", "-o", W],
        ["--seed", "18446744073709551616"],
    ),
    ("generate-seed-2^64", {}, ["generate", "--tasks", "5", "--seed", "18446744073709551616", "-o", W], ["--seed"]),
    ("fit-seed-2^70", {"w.json": GOOD_WORKLOAD}, [*fit(W), "--seed", str(2**70)], ["--seed"]),
    ("walltime-1e300", {}, ["generate", "--tasks", "5", "--walltime", "1e300", "-o", W], ["--walltime", "1e+300"]),
    (
        "walltime-1e-300-kills",
        {},
        ["generate", "--tasks", "5", "--walltime", "1e-300", "--walltime-kills", "-o", W],
        ["--walltime", "1e-300"],
    ),
    ("walltime-nan", {}, ["generate", "--tasks", "5", "--walltime", "nan", "-o", W], ["--walltime", "nan"]),
    (
        "swf-walltime-1e300",
        {"x.swf": SWF_HEADER + SWF_JOB},
        ["swf", "convert", "{d}/x.swf", "--walltime", "1e300", "-o", W],
        ["--walltime"],
    ),
    ("horizon-1e-9", {"w.json": GOOD_WORKLOAD}, run(W, "--horizon", "1e-9"), ["--horizon", "1e-09"]),
    ("overcommit-nan", {"w.json": GOOD_WORKLOAD}, run(W, "--overcommit", "nan"), ["--overcommit", "nan"]),
    ("timeout-inf", {"w.json": GOOD_WORKLOAD}, run(W, "--timeout", "inf"), ["--timeout", "inf"]),
    ("reclaim-rate-inf", {"w.json": GOOD_WORKLOAD}, run(W, "--reclaim-rate", "inf"), ["--reclaim-rate", "inf"]),
    ("max-restarts-huge", {"w.json": GOOD_WORKLOAD}, run(W, "--max-restarts", str(2**70)), ["--max-restarts"]),
    (
        "arrival-scale-inf",
        {},
        ["generate", "--tasks", "5", "--arrival-scale", "inf", "-o", W],
        ["--arrival-scale", "inf"],
    ),
    (
        "machines-1e8",
        {},
        ["platform", "--machines", "100000000", "-o", "{d}/p.xml"],
        ["--machines", "100000000", "1000000"],
    ),
    ("nb-res-huge", {}, ["generate", "--tasks", "5", "--nb-res", str(2**70), "-o", W], ["--nb-res"]),
    (
        "swf-start-nan",
        {"x.swf": SWF_HEADER + SWF_JOB},
        ["swf", "convert", "{d}/x.swf", "--start", "nan", "-o", W],
        ["--start", "nan"],
    ),
    (
        "per-core-jobs-cores-huge",
        {},
        ["per-core-jobs", str(FIXTURES / "run4"), "--cores", str(2**70), "-o", "{d}/x.csv"],
        ["--cores"],
    ),
    (
        "failures-mtbf-nan",
        {},
        ["failures", str(PLATFORM), "--horizon", "100", "--mtbf", "nan", "-o", "{d}/f.jsonl"],
        ["mtbf", "nan"],
    ),
    (
        "validate-replay-start-1e15",
        {TRACE_PART: trace()},
        ["validate-replay", "{d}/trace", "--start", "1e15", "--end", "2e15", "-o", "{d}/out"],
        ["--start", "1000000000000000.0", "range"],
    ),
    (
        "trace-stats-bin-tiny",
        {TRACE_PART: trace()},
        ["trace", "stats", "{d}/trace", "--bin", "1e-300"],
        ["--bin 1e-300", "samples"],
    ),
    # --- platforms (SimGrid XML) ---
    (
        "radical-huge",
        {"p.xml": platform_xml('radical="0-999999999"'), "w.json": GOOD_WORKLOAD},
        run(W, platform="{d}/p.xml"),
        ["p.xml", "radical", "1000000"],
    ),
    (
        "xml-external-entity",
        {
            "p.xml": platform_xml(
                props='<prop id="note" value="&x;"/>',
                doctype='<!DOCTYPE platform [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n',
            ),
            "w.json": GOOD_WORKLOAD,
        },
        run(W, platform="{d}/p.xml"),
        ["p.xml", "ENTITY"],
    ),
    (
        "xml-internal-entity",
        {
            "p.xml": platform_xml(
                props='<prop id="note" value="&x;"/>', doctype='<!DOCTYPE platform [<!ENTITY x "abc">]>\n'
            ),
            "w.json": GOOD_WORKLOAD,
        },
        ["metrics", str(FIXTURES / "run4"), "--platform", "{d}/p.xml"],
        ["p.xml", "ENTITY"],
    ),
    (
        "host-cpu-nan",
        {"p.xml": platform_xml(props='<prop id="cpu_capacity" value="nan"/>'), "w.json": GOOD_WORKLOAD},
        run(W, platform="{d}/p.xml"),
        ["p.xml", "cluster 'c'", "cpu_capacity", "nan"],
    ),
    (
        "host-cpu-negative",
        {"p.xml": platform_xml(props='<prop id="cpu_capacity" value="-1"/>'), "w.json": GOOD_WORKLOAD},
        run(W, platform="{d}/p.xml"),
        ["p.xml", "cluster 'c'", "cpu_capacity", "-1"],
    ),
    (
        "host-memory-inf",
        {"p.xml": platform_xml(props='<prop id="memory_capacity" value="inf"/>')},
        ["metrics", str(FIXTURES / "run4"), "--platform", "{d}/p.xml"],
        ["p.xml", "cluster 'c'", "memory_capacity", "inf"],
    ),
    (
        "host-speed-inf",
        {"p.xml": platform_xml().replace('speed="1Gf"', 'speed="1e400f"', 1), "w.json": GOOD_WORKLOAD},
        run(W, platform="{d}/p.xml"),
        ["p.xml", "cluster 'c'", "speed", "1e400f"],
    ),
    # --- task tables ---
    (
        "table-job-id-2^64",
        {"t.csv": "subtime,makespan,kind,priority,job_id\n0,10,task,0.5,18446744073709551617\n1,10,task,0.5,1\n"},
        [*fit("{d}/t.csv"), "--strict"],
        ["t.csv:1", "job_id"],
    ),
    (
        "table-subtime-2^63",
        {"t.csv": "subtime,makespan,kind,priority\n0,10,task,0.5\n9223372036854775808,10,task,0.5\n"},
        [*fit("{d}/t.csv"), "--strict"],
        ["t.csv:2", "subtime"],
    ),
    (
        "model-interarrival-median",
        {
            "m.toml": re.sub(
                r"\[interarrival\].*?\n(?=\[)",
                '[interarrival]\nlaw = "exponential"\nrate = 1e-300\n',
                MODEL_SNIPPET,
                count=1,
                flags=re.DOTALL,
            )
        },
        ["generate", "--model", "{d}/m.toml", "--tasks", "5", "-o", W],
        ["m.toml", "interarrival", "median"],
    ),
    (
        "fit-speed-inf",
        {"w.json": GOOD_WORKLOAD},
        [*fit(W), "--speed", "1e400"],
        ["--speed", "finite"],
    ),
    (
        "table-makespan-1e300",
        {"t.csv": "subtime,makespan,kind,priority\n0,1e300,task,0.5\n"},
        [*fit("{d}/t.csv"), "--strict"],
        ["t.csv:1", "makespan", "2^42"],
    ),
    (
        "table-width-huge",
        {"t.csv": "subtime,makespan,kind,priority,width\n0,10,task,0.5,1e300\n"},
        [*fit("{d}/t.csv"), "--strict"],
        ["t.csv:1", "width"],
    ),
    (
        "table-cpu-request-negative",
        {"t.csv": "subtime,makespan,kind,priority,cpu_request\n0,10,task,0.5,-5\n"},
        [*fit("{d}/t.csv"), "--strict"],
        ["t.csv:1", "cpu_request"],
    ),
    # --- SWF logs ---
    (
        "swf-maxprocs-1e23",
        {"x.swf": "; MaxProcs: 1e23\n" + SWF_JOB},
        ["swf", "convert", "{d}/x.swf", "-o", W],
        ["x.swf", "MaxProcs", "1e23"],
    ),
    (
        "swf-fraction-procs",
        {"x.swf": SWF_HEADER + SWF_JOB.replace(" 4 -1 -1 4 ", " 2.5 -1 -1 2.5 ")},
        ["swf", "convert", "{d}/x.swf", "--strict", "-o", W],
        ["x.swf:3", "a fraction of a count"],
    ),
    ("swf-bom", {"x.swf": "\ufeff; MaxProcs: 4\n" + SWF_JOB}, ["swf", "convert", "{d}/x.swf", "-o", W], None),
    (
        "swf-run-time-1e15",
        {"x.swf": SWF_HEADER + SWF_JOB.replace(" 10 100 4 ", " 10 1000000000000000 4 ")},
        ["swf", "convert", "{d}/x.swf", "--strict", "-o", W],
        ["x.swf:3", "a time past 2^42 s"],
    ),
    # --- traces ---
    (
        "trace-convert-cpu-negative",
        {TRACE_PART: trace(cpu="-0.5")},
        ["trace", "convert", "{d}/trace", "--strict", "-o", W],
        ["part-00000-of-00001.csv.gz:1", "value out of range (cpu_request)"],
    ),
    (
        "requests-cpu-negative",
        {TRACE_PART: trace(cpu="-0.5")},
        ["requests", "{d}/trace", "--strict", "-o", "{d}/r.json"],
        ["part-00000-of-00001.csv.gz:1", "value out of range (cpu_request)"],
    ),
]


def _write(folder: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{d}", str(folder)), encoding="utf-8")


@pytest.mark.parametrize("files, command, words", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_bad_input_ends_in_one_error_line_naming_it(tmp_path, files, command, words):
    _write(tmp_path, files)
    started = time.monotonic()
    with warnings.catch_warnings():  # a warning on the way (numpy's overflows) is noise before the line
        warnings.simplefilter("error", RuntimeWarning)
        result = CliRunner().invoke(main, [part.replace("{d}", str(tmp_path)) for part in command])
    assert time.monotonic() - started < AT_ONCE_S
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    output = result.output
    assert "Traceback" not in output
    if words is None:  # not an error: a case read right
        assert result.exit_code == 0, output
        return
    assert result.exit_code == 2, output
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, output
    missing = [word for word in words if word not in errors[0]]
    assert not missing, f"{missing} not in {errors[0]!r}"


def test_a_negative_request_in_a_trace_is_a_counted_skip_not_a_job(tmp_path):
    (tmp_path / TRACE_PART).parent.mkdir(parents=True)
    (tmp_path / TRACE_PART).write_bytes(trace(cpu="-0.5"))
    result = CliRunner().invoke(main, ["trace", "convert", str(tmp_path / "trace"), "-o", str(tmp_path / "w.json")])
    assert "skipped 3 (value out of range: 3)" in result.output, result.output
    assert not (tmp_path / "w.json").exists() or json.loads((tmp_path / "w.json").read_text())["jobs"] == []


def test_a_utf8_byte_order_mark_does_not_hide_an_swf_header(tmp_path):
    (tmp_path / "x.swf").write_text("\ufeff; MaxProcs: 4\n" + SWF_JOB, encoding="utf-8")
    result = CliRunner().invoke(main, ["swf", "convert", str(tmp_path / "x.swf"), "-o", str(tmp_path / "w.json")])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "w.json").read_text())
    assert written["nb_res"] == 4 and len(written["jobs"]) == 1


def test_a_symlink_loop_is_named_as_one(tmp_path):
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace/task_events").symlink_to(tmp_path / "trace/task_events")
    result = CliRunner().invoke(main, ["trace", "stats", str(tmp_path / "trace")])
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert "task_events" in errors[0] and "symbolic links" in errors[0] and "no task_events/ folder" not in errors[0]


def test_parts_missing_between_two_given_ones_are_said(tmp_path):
    for part in (0, 2):
        path = tmp_path / f"trace/task_events/part-0000{part}-of-00500.csv.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(trace())
    result = CliRunner().invoke(main, ["trace", "convert", str(tmp_path / "trace"), "-o", str(tmp_path / "w.json")])
    assert "part(s) 1 missing between part 0 and part 2" in result.output, result.output


def test_a_replay_window_shorter_than_a_minute_is_refused_as_such(tmp_path):
    (tmp_path / TRACE_PART).parent.mkdir(parents=True)
    (tmp_path / TRACE_PART).write_bytes(trace())
    command = ["validate-replay", str(tmp_path / "trace"), "--start", "100", "--end", "100.000001"]
    result = CliRunner().invoke(main, [*command, "-o", str(tmp_path / "out")])
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert "must last at least 60 s" in errors[0] and "horizon" not in errors[0]


@pytest.mark.parametrize("watts", ["nan:100", "100:inf", "-5:100"])
def test_a_pstate_of_watts_that_are_no_power_is_refused_naming_the_host(watts):
    from batsim_google.errors import InputFileError
    from batsim_google.platform.simgrid_xml import PlatformHost, pstate_watts

    with pytest.raises(InputFileError, match=f"host m0: wattage_per_state '{watts}'"):
        pstate_watts(PlatformHost("m0", (1e9,), 1, {"wattage_per_state": watts}))
