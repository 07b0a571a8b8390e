"""The one atomic-write path: a file is replaced whole or not at all, never over an input."""

from __future__ import annotations

import os

import pytest

from batsim_google.errors import ParameterError
from batsim_google.output_files import (
    TEMPORARY_PREFIX,
    AtomicFile,
    check_output_file,
    check_output_folder,
    output_folder,
    write_text,
)


def leftovers(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(TEMPORARY_PREFIX))


def test_a_complete_write_replaces_the_file(tmp_path):
    target = tmp_path / "w.json"
    target.write_text("old")
    with AtomicFile(target) as temporary:
        assert temporary.parent == tmp_path and temporary.suffix == ".json"
        temporary.write_text("new")
        assert target.read_text() == "old"
    assert target.read_text() == "new"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("interruption", [ValueError("bad grain"), KeyboardInterrupt(), SystemExit(143)])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, interruption):
    target = tmp_path / "w.json"
    target.write_text('{"keep":1}')
    with pytest.raises(type(interruption)):
        with AtomicFile(target) as temporary:
            temporary.write_text("half")
            raise interruption
    assert target.read_text() == '{"keep":1}'
    assert leftovers(tmp_path) == []


def test_the_file_gets_the_usual_permissions(tmp_path):
    write_text(tmp_path / "a.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_an_output_that_is_an_input_is_refused_naming_both(tmp_path):
    source = tmp_path / "p.csv"
    source.write_text("1,2\n")
    os.link(source, tmp_path / "hard.csv")
    (tmp_path / "link.csv").symlink_to(source)
    for output in (source, tmp_path / "sub" / ".." / "p.csv", tmp_path / "hard.csv", tmp_path / "link.csv"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(ParameterError, match=f"{output}: the output would replace the input {source}"):
            check_output_file(output, [None, source])
    assert source.read_text() == "1,2\n"


def test_an_existing_file_of_an_input_folder_is_refused_a_new_name_there_is_not(tmp_path):
    trace = tmp_path / "trace"
    (trace / "task_events").mkdir(parents=True)
    part = trace / "task_events" / "part-00000-of-00001.csv.gz"
    part.write_bytes(b"data")
    with pytest.raises(ParameterError, match="would replace a file of the input folder"):
        check_output_file(part, [trace])
    with pytest.raises(ParameterError, match="would replace the input"):
        check_output_folder(trace, [trace])
    check_output_file(trace / "converted.json", [trace])
    check_output_folder(trace / "plots", [trace])
    check_output_file(tmp_path / "w.json", [trace])
    assert part.read_bytes() == b"data"


def test_a_missing_folder_or_a_folder_in_the_way_is_named(tmp_path):
    with pytest.raises(ParameterError, match=f"^{tmp_path}/nodir/w.json: no such folder {tmp_path}/nodir$"):
        AtomicFile(tmp_path / "nodir" / "w.json")
    with pytest.raises(ParameterError, match="is a folder, not a file"):
        check_output_file(tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(ParameterError, match=f"{tmp_path}/file is a file, not a folder"):
        output_folder(tmp_path / "file" / "plots")
    assert output_folder(tmp_path / "a" / "b").is_dir()
