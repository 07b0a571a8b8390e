"""run's progress bar: simulated time against the workload's horizon (no Batsim needed)."""

from __future__ import annotations

import json

from batsim_google.simulation.cost_model import estimate, read_workload_cost
from batsim_google.simulation.progress_bar import ProgressBar, progress_horizon


def _workload(path):
    jobs = [{"id": i, "subtime": 10.0 * i, "res": 1, "profile": "p"} for i in range(5)]
    path.write_text(json.dumps({"nb_res": 8, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 100.0}}}))
    return path


def test_horizon_is_the_last_submission_or_the_schedulers_when_earlier(tmp_path):
    cost = read_workload_cost(_workload(tmp_path / "w.json"))
    assert progress_horizon(cost) == 40.0
    assert progress_horizon(cost, horizon=25.0) == 25.0
    assert progress_horizon(cost, horizon=100.0) == 40.0


def test_bar_counts_simulated_seconds_to_the_horizon(tmp_path, capsys):
    workload, progress = _workload(tmp_path / "w.json"), tmp_path / "progress.txt"
    with ProgressBar(progress, 8, [workload], enabled=True) as bar:
        assert bar.bar.total == 40.0
        bar.follow()  # no file yet: nothing shown
        assert bar.bar.n == 0
        progress.write_text("25.5\n")
        bar.follow()
        assert bar.bar.n == 25.5
        progress.write_text("90\n")  # the jobs still running after the last submission
        bar.follow()
        assert bar.bar.n == 40.0
    shown = capsys.readouterr().err
    assert "40/40 s" in shown
    assert "left ~" in shown


def test_left_is_the_estimate_at_the_start(tmp_path):
    workload = _workload(tmp_path / "w.json")
    predicted = estimate(read_workload_cost(workload), 8).wall_seconds
    with ProgressBar(tmp_path / "progress.txt", 8, [workload], enabled=True) as bar:
        shown = [f"left ~{left // 60:02d}:{left % 60:02d}" for left in (int(predicted), int(predicted) - 1)]
        assert bar.bar.postfix in shown  # a second may pass while the bar starts


def test_a_hidden_bar_reads_no_workload(tmp_path):
    with ProgressBar(tmp_path / "progress.txt", 8, [tmp_path / "missing.json"], enabled=False) as bar:
        bar.follow()
        assert bar.bar.total is None


def test_the_progress_file_is_written_once_a_period_and_at_the_end(tmp_path):
    from batsim_google.simulation.frontend import ProgressFile

    path = tmp_path / "progress.txt"
    progress = ProgressFile(path)
    progress.report(10.0)
    progress.report(20.0)  # within the period: not written
    assert path.read_text() == "10.0\n"
    progress.report(30.0, final=True)
    assert path.read_text() == "30.0\n"
