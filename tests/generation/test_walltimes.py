"""Walltimes (``--walltime`` of generate, trace convert and swf convert): each mode on the jobs it
writes, the rule that a walltime never shortens a job unless asked, the mode recorded in the file,
and the users' over-estimate law against the log it was fitted on."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import plain_swf_jobs
from scipy import stats
from trace_files import event, seconds_us, write_part

from batsim_google.cli import main
from batsim_google.generation.walltime import MARGIN_S, NO_WALLTIME, parse_walltime_mode
from batsim_google.model.laws import LogNormal
from batsim_google.model.walltime_law import WalltimeLaw, load_walltime_law
from batsim_google.trace.schema import TaskEvent as E


def _invoke(*arguments: str) -> str:
    result = CliRunner().invoke(main, [*arguments])
    assert result.exit_code == 0, result.output
    return result.output


def _generated(tmp_path, mode: str, *extra: str, tasks: int = 3000) -> dict:
    out = tmp_path / f"w-{mode}{'-'.join(extra)}.json"
    _invoke(
        "generate", "--tasks", str(tasks), "--seed", "4", "--nb-res", "16", "--walltime", mode, *extra, "-o", str(out)
    )
    return json.loads(out.read_text())


def _tasks(data: dict) -> tuple[np.ndarray, np.ndarray]:
    """Delays (as written in the profiles) and walltimes of the file's tasks (not services)."""
    tasks = [job for job in data["jobs"] if job["kind"] == "task"]
    delay = np.array([data["profiles"][job["profile"]]["delay"] for job in tasks])
    return delay, np.array([job["walltime"] for job in tasks])


def test_none_is_todays_workload_and_is_recorded(tmp_path):
    data = _generated(tmp_path, "none", tasks=500)
    _, walltime = _tasks(data)
    assert np.all(walltime == NO_WALLTIME)
    assert data["walltime"] == {"mode": "none", "kills": False}


def test_exact_is_the_duration_plus_the_margin_batsim_needs_not_to_kill(tmp_path):
    for extra in ((), ("--grain", "60")):  # with a grain, the written (rounded) delay
        delay, walltime = _tasks(_generated(tmp_path, "exact", *extra, tasks=800))
        np.testing.assert_allclose(walltime, delay + MARGIN_S, atol=1e-6)
        assert np.all(walltime > delay)


def test_services_keep_their_lifetime_as_walltime_in_every_mode(tmp_path):
    lifetimes = []
    for mode in ("none", "2"):
        data = _generated(tmp_path, mode, tasks=800)
        services = [job for job in data["jobs"] if job["kind"] == "service"]
        assert services
        lifetimes.append([job["walltime"] for job in services])
    assert lifetimes[0] == lifetimes[1]


def test_a_factor_never_shortens_a_job_unless_walltime_kills(tmp_path):
    delay, walltime = _tasks(_generated(tmp_path, "1.5", tasks=800))
    np.testing.assert_allclose(walltime, np.maximum(1.5 * delay, delay + MARGIN_S), atol=1e-6)
    delay, walltime = _tasks(_generated(tmp_path, "0.5", tasks=800))
    np.testing.assert_allclose(walltime, delay + MARGIN_S, atol=1e-6)
    data = _generated(tmp_path, "0.5", "--walltime-kills", tasks=800)
    delay, walltime = _tasks(data)
    np.testing.assert_allclose(walltime, 0.5 * delay, atol=1e-6)
    assert data["walltime"] == {"mode": "0.5", "kills": True}


def test_user_estimate_follows_the_law_and_leaves_the_jobs_as_they_were(tmp_path):
    plain, estimated = _generated(tmp_path, "none"), _generated(tmp_path, "user-estimate")
    assert [(j["subtime"], j["profile"]) for j in plain["jobs"]] == [
        (j["subtime"], j["profile"]) for j in estimated["jobs"]
    ]
    delay, walltime = _tasks(estimated)
    assert np.all(walltime > delay)
    law = load_walltime_law()
    factor = walltime / delay
    fitted = stats.kstest(factor, law.cdf).statistic
    assert fitted < 0.03
    wrong = WalltimeLaw(LogNormal(law.excess.mu, law.excess.sigma / 2), law.at_run_time, law.max_factor, {})
    assert stats.kstest(factor, wrong.cdf).statistic > 0.1
    assert estimated["walltime"]["mode"] == "user-estimate"
    assert estimated["walltime"]["law"]["excess"] == law.excess.to_mapping()


def test_generate_refuses_the_requested_mode_and_unknown_modes(tmp_path):
    out = tmp_path / "w.json"
    result = CliRunner().invoke(main, ["generate", "--tasks", "10", "--walltime", "requested", "-o", str(out)])
    assert result.exit_code == 2 and "requested times (SWF logs only)" in result.output
    assert not out.exists()
    for bad in ("sometimes", "0", "-2", "nan"):
        result = CliRunner().invoke(main, ["generate", "--tasks", "10", "--walltime", bad, "-o", str(out)])
        assert result.exit_code == 2 and "--walltime" in result.output, bad


def _small_swf(path):
    """Four jobs: run 100 s asking 300 s; run 50 s asking 40 s (ran past it); run 10 s, request
    unknown; run 20 s asking 20 s."""
    lines = [
        "; MaxProcs: 8",
        "1 0 0 100 2 -1 -1 2 300 -1 1 1 1 -1 -1 -1 -1 -1",
        "2 5 0 50 1 -1 -1 1 40 -1 1 1 1 -1 -1 -1 -1 -1",
        "3 9 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1",
        "4 12 0 20 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1",
    ]
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")


def test_swf_convert_uses_the_logs_requested_time_by_default(tmp_path):
    log = tmp_path / "small.swf.gz"
    _small_swf(log)
    walltimes = {}
    for name, extra in (("default", ()), ("kills", ("--walltime-kills",)), ("exact", ("--walltime", "exact"))):
        out = tmp_path / f"{name}.json"
        _invoke("swf", "convert", str(log), "-o", str(out), *extra)
        data = json.loads(out.read_text())
        walltimes[name] = [job["walltime"] for job in data["jobs"]]
        assert data["walltime"]["mode"] == ("exact" if name == "exact" else "requested")
    assert walltimes["default"] == [300, 50 + MARGIN_S, NO_WALLTIME, 20 + MARGIN_S]
    assert walltimes["kills"] == [300, 40, NO_WALLTIME, 20]
    assert walltimes["exact"] == [100 + MARGIN_S, 50 + MARGIN_S, 10 + MARGIN_S, 20 + MARGIN_S]


def test_trace_convert_writes_the_chosen_walltimes(tmp_path):
    trace = tmp_path / "trace"
    write_part(
        trace,
        [
            event(seconds_us(1), 1, 0, E.SUBMIT),
            event(seconds_us(2), 1, 0, E.SCHEDULE),
            event(seconds_us(3), 1, 1, E.SUBMIT),
            event(seconds_us(4), 1, 1, E.SCHEDULE),
            event(seconds_us(14), 1, 1, E.FINISH),
            event(seconds_us(32), 1, 0, E.FINISH),
        ],
    )
    out = tmp_path / "w.json"
    _invoke("trace", "convert", str(trace), "-o", str(out), "--walltime", "2")
    data = json.loads(out.read_text())
    assert sorted(job["walltime"] for job in data["jobs"]) == [20, 60]
    assert data["walltime"] == {"mode": "2", "kills": False}


def test_parse_walltime_mode_names_the_mode():
    assert parse_walltime_mode("exact").label == "exact"
    assert parse_walltime_mode("2.5", kills=True).factor == 2.5
    with pytest.raises(ValueError, match="--walltime"):
        parse_walltime_mode("often")


def test_the_shipped_law_is_the_fit_of_the_kth_log(kth):
    """Refitted from the log (a plain parse here), the law is the one shipped, and fits it: the KS
    distance of the log-normal to the excess factors is small, a gamma's and an exponential's large."""
    from batsim_google.fitting.walltime_fit import fit_walltime_law

    shipped = load_walltime_law()
    refit = fit_walltime_law(kth)
    assert refit.to_mapping() == shipped.to_mapping()
    plain = np.array([line for line in plain_swf_jobs(kth) if line[10] == 1 and line[3] > 0 and line[8] > 0])
    factor = plain[:, 8] / plain[:, 3]
    assert shipped.provenance["jobs_used"] == len(factor)
    assert shipped.at_run_time == pytest.approx(np.mean(factor <= 1))
    excess = factor[factor > 1] - 1
    assert stats.kstest(excess, shipped.excess.cdf).statistic < 0.05
    assert stats.kstest(excess, stats.expon(scale=excess.mean()).cdf).statistic > 0.5
    assert stats.kstest(excess, stats.gamma(*stats.gamma.fit(excess, floc=0)).cdf).statistic > 0.2
    # drawn factors follow the log's whole distribution of factors (the cap and the mass at 1 included)
    drawn = shipped.factors(20_000, np.random.default_rng(1))
    assert stats.ks_2samp(drawn, np.maximum(factor, 1.0)).statistic < 0.06
