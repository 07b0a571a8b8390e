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


#: Most parameters a function outside ``cli/`` may take: more are settings threaded loose, which
#: belong in a parameter object (a ``SimulationSettings``, a ``ModelCheck``, ...).
MAX_PARAMETERS = 9


def long_signatures(root: Path = PACKAGE) -> list[str]:
    """``folder/module.py:function`` of every function outside ``cli/`` with more than
    :data:`MAX_PARAMETERS` parameters (``self`` and ``cls`` not counted)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args
                names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
                count = len(names) + bool(arguments.vararg) + bool(arguments.kwarg) - (names[:1] in (["self"], ["cls"]))
                if count > MAX_PARAMETERS:
                    found.append(f"{relative.as_posix()}:{node.name}")
    return found


def test_no_function_outside_the_command_line_takes_ten_parameters_or_more():
    assert long_signatures() == []


def test_the_parameter_count_finds_a_long_signature(tmp_path):
    fake = tmp_path / "batsim_google"
    (fake / "simulation").mkdir(parents=True)
    (fake / "cli").mkdir()
    many = ", ".join(f"p{i}" for i in range(10))
    (fake / "simulation" / "long.py").write_text(f"def run(self, {many[:-5]}): pass\ndef wide({many}): pass\n")
    (fake / "cli" / "command.py").write_text(f"def command({many}): pass\n")
    assert long_signatures(fake) == ["simulation/long.py:wide"]


#: The names of the energy policies and of the scheduler kinds, and the one module that spells each.
NAMES = {
    "scheduling/policy_config.py": ("always-on", "idle-sleep"),
    "simulation/schedulers.py": ("policy", "pybatsim", "command", "python"),
}


def spelled_names(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Name -> the modules that spell it as a string: an energy policy anywhere, a scheduler kind
    where it is compared (``scheduler.kind == "python"``, ``kind in ("policy", ...)``): "policy"
    is also the name of a campaign's label column, a kind only when compared with one.)"""
    energy = set(NAMES["scheduling/policy_config.py"])
    kinds = set(NAMES["simulation/schedulers.py"])
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        compared = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    parts = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                    compared |= {id(part) for part in parts}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in energy or (node.value in kinds and id(node) in compared):
                    found.setdefault(node.value, set()).add(path.relative_to(root).as_posix())
    return found


def test_each_energy_policy_and_scheduler_kind_is_spelled_in_one_module():
    spelled = spelled_names()
    for module, names in NAMES.items():
        for name in names:
            assert spelled.get(name, {module}) == {module}, name


def test_the_spelling_check_finds_a_second_spelling(tmp_path):
    fake = tmp_path / "batsim_google"
    (fake / "experiments").mkdir(parents=True)
    (fake / "experiments" / "bad.py").write_text(
        '"""Docstrings may say "always-on"."""\nLABEL = "policy"\n'
        'def f(s, c, t):\n    return s.kind == "python" or c.energy != "idle-sleep" or t["policy"] == 1\n'
        'def g(s):\n    return s.kind in ("command", "x")\n'
    )
    assert spelled_names(fake) == {
        "python": {"experiments/bad.py"},
        "idle-sleep": {"experiments/bad.py"},
        "command": {"experiments/bad.py"},
    }
