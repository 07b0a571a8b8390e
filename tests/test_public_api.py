"""The package's public face: ``__all__`` resolves, lazily, and the errors form one family."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import batsim_google
from batsim_google.errors import BatsimGoogleError, InputFileError, ParameterError, SimulationError

HEAVY = ("numpy", "scipy", "polars")


@pytest.mark.parametrize("name", batsim_google.__all__)
def test_every_public_name_resolves_to_the_object_of_its_module(name):
    module = importlib.import_module(f"batsim_google.{batsim_google._MODULES[name]}")
    assert getattr(batsim_google, name) is getattr(module, name)
    assert name in dir(batsim_google)


def test_import_batsim_google_imports_no_numerical_library():
    code = f"import sys, batsim_google; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
    code = (
        f"import sys, batsim_google; batsim_google.load_model; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "numpy" in loaded  # the check above can fail: resolving a name does import its module


def test_an_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        batsim_google.no_such_name  # noqa: B018


def test_errors_are_one_family_and_keep_their_builtin_kinds(tmp_path):
    assert issubclass(ParameterError, ValueError) and issubclass(InputFileError, ValueError)
    assert issubclass(SimulationError, RuntimeError)
    with pytest.raises(ParameterError, match="unknown preset 'nope'"):
        batsim_google.preset("nope")
    with pytest.raises(BatsimGoogleError, match=r"machine count must be in 1..1000000 \(got 0\)"):
        batsim_google.google_2011_cell(0)
    log = tmp_path / "bad.swf"
    log.write_text("1 2 3\n")
    with pytest.raises(InputFileError, match=rf"{log}:1: "):
        list(batsim_google.read_swf(log, batsim_google.RowAccount(strict=True)))


def test_generate_is_the_function_even_once_the_generation_folder_is_imported():
    """No folder of the package bears a public name: importing it cannot shadow the API."""
    import batsim_google.generation.workload  # noqa: F401  (binds batsim_google.generation, not .generate)

    assert callable(batsim_google.generate)
    assert batsim_google.generate.__module__ == "batsim_google.generation.generator"
    folders = {path.name for path in Path(batsim_google.__file__).parent.iterdir() if path.is_dir()}
    assert not folders & set(batsim_google.__all__)
