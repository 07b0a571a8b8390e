"""``run -o DIR`` into the folder of an earlier run: the earlier run's files go first, nothing else."""

from __future__ import annotations

import pytest

from batsim_google.errors import ParameterError
from batsim_google.simulation.run import clear_earlier_run, earlier_run_files

RUN_FILES = [
    "out_jobs.csv",
    "out_schedule.csv",
    "out_machine_states.csv",
    "out_consumed_energy.csv",
    "out_attempts.csv",
    "out_tasks.csv",
    "out_accounting.json",
    "progress.txt",
    "batsim_peak_rss",
    "batsim.log",
    "scheduler.log",
    "batsim-py.log",
    "metrics.json",
    "INCOMPLETE",
]
USER_FILES = ["notes.txt", "my.log", "output_jobs.csv", "platform.xml"]


def test_only_the_files_a_run_writes_are_cleared(tmp_path):
    for name in RUN_FILES + USER_FILES:
        (tmp_path / name).write_text("earlier")
    (tmp_path / "out_figures").mkdir()
    assert [path.name for path in earlier_run_files(tmp_path)] == sorted(RUN_FILES)
    clear_earlier_run(tmp_path, [tmp_path / "platform.xml"])
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([*USER_FILES, "out_figures", "INCOMPLETE"])
    assert (tmp_path / "INCOMPLETE").read_text() != "earlier"  # marks the new run, until it ends well


def test_an_input_among_them_is_refused_and_nothing_cleared(tmp_path):
    for name in RUN_FILES:
        (tmp_path / name).write_text("earlier")
    with pytest.raises(ParameterError, match="out_jobs.csv: the output would replace the input"):
        clear_earlier_run(tmp_path, [tmp_path / "out_jobs.csv"])
    assert len(earlier_run_files(tmp_path)) == len(RUN_FILES)


def test_a_new_folder_has_nothing_to_clear(tmp_path):
    assert earlier_run_files(tmp_path / "results") == []
