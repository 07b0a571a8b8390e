"""What a process loads at start-up: the command line and the scheduler leave the heavy libraries alone.

``batsim-google --help`` must not wait for scipy or polars, nor the scheduler process Batsim
launches for every simulation; each is imported in a fresh interpreter and its modules listed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("polars", "scipy", "pandas", "sklearn", "dask", "matplotlib")


def loaded_heavy_libraries(module: str) -> list[str]:
    """The libraries of :data:`HEAVY` that importing ``module`` loads, in a fresh interpreter."""
    code = f"import sys, {module}; print(' '.join(sorted({{name.split('.')[0] for name in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [library for library in HEAVY if library in done.stdout.split()]


@pytest.mark.parametrize("module", ["batsim_google.cli", "batsim_google.simulation.googleCell"])
def test_start_up_imports_no_heavy_library(module):
    assert loaded_heavy_libraries(module) == []


def test_command_line_starts_without_numpy():
    code = "import sys, batsim_google.cli; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_generating_from_the_preset_imports_no_scipy_stats(tmp_path):
    """Generation draws with numpy (scipy.stats alone takes a second to import)."""
    code = (
        "import sys; from batsim_google.cli import main; "
        f"main(['generate', '--tasks', '1000', '-o', r'{tmp_path / 'w.json'}', '--no-progress'], standalone_mode=False); "
        "print(sorted(name for name in sys.modules if name.startswith(('scipy.stats', 'scipy.optimize'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
    assert (tmp_path / "w.json").stat().st_size > 0
