"""The package's folders stand in pipeline order: no module imports from a later folder.

The order is the one the README's map gives: parameters and errors at the bottom, then the model,
the platform, generating, the trace, fitting, scheduling, simulation, experiments and the command
line. Read from the source with ``ast``, so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "batsim_google"
LAYERS = [
    "errors",
    "output_files",
    "units",
    "parameters",
    "model",
    "platform",
    "generation",
    "trace",
    "fitting",
    "scheduling",
    "simulation",
    "experiments",
    "cli",
]


def layer_of(module: str) -> str | None:
    """The folder (or bottom module) of ``batsim_google.X.Y``; None for the package itself and ``data``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``batsim_google`` import in a file of the package at ``root``."""
    package = ["batsim_google", *path.relative_to(root).parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("batsim_google.")]


def upward_imports(root: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = "batsim_google." + ".".join(path.relative_to(root).with_suffix("").parts)
        mine = layer_of(module)
        for line, name in imported_modules(path, root):
            theirs = layer_of(name)
            if mine and theirs and LAYERS.index(theirs) > LAYERS.index(mine):
                problems.append(f"{path.relative_to(root.parent)}:{line}: {mine} imports {name} ({theirs} comes later)")
    return problems


def test_no_module_imports_a_later_folder():
    assert upward_imports() == []


def test_every_folder_of_the_package_is_a_known_layer():
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and not path.name.startswith("__")}
    assert folders - {"data"} <= set(LAYERS)


def test_the_check_finds_an_upward_import(tmp_path):
    """The check itself: a model module importing the scheduler is reported."""
    fake = tmp_path / "batsim_google"
    (fake / "model").mkdir(parents=True)
    (fake / "model" / "bad.py").write_text("from batsim_google.scheduling.policy import CellPolicy\n")
    (fake / "model" / "good.py").write_text("from ..parameters import require\n")
    assert upward_imports(fake) == [
        "batsim_google/model/bad.py:1: model imports batsim_google.scheduling.policy.CellPolicy (scheduling comes later)"
    ]
