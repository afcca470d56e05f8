"""The layers: imports point down only, the pure ones never reach temporalio, none goes through a
package kept for compatibility."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.support import REPOSITORY

PACKAGE = REPOSITORY / "lockgate"

BASE = {"lockgate.errors", "lockgate.contracts", "lockgate._defaults", "lockgate._renamed"}
"""What every layer may import: the roots of the error tree, the JSON shapes, the defaults, and
how an old spelling warns."""

# Each layer and what its modules may import besides themselves and the base, bottom first.
MAY_IMPORT = {
    "lockgate.identity": set(),
    "lockgate.tools": {"lockgate.identity"},
    "lockgate.gates": {"lockgate.identity", "lockgate.tools"},
    "lockgate.graphs": {"lockgate.identity", "lockgate.tools", "lockgate.gates"},
    "lockgate.activities": {
        "lockgate.identity",
        "lockgate.tools",
        "lockgate.gates",
        "lockgate.graphs",
    },
    "lockgate.workflows": {
        "lockgate.identity",
        "lockgate.tools",
        "lockgate.gates",
        "lockgate.graphs",
        "lockgate.activities",
    },
    "lockgate.clients": {
        "lockgate.identity",
        "lockgate.tools",
        "lockgate.gates",
        "lockgate.graphs",
        "lockgate.activities",
        "lockgate.workflows",
    },
}

PURE = ["lockgate.identity", "lockgate.tools", "lockgate.gates", "lockgate.graphs"]
"""The layers that run in process, inside activities and inside the workflow sandbox alike."""

FACADES: list[str] = []
"""Packages that re-export what moved out of them, for their users; lockgate never imports them."""


def _private_modules(package: str) -> list[Path]:
    folder = REPOSITORY / package.replace(".", "/")
    return sorted(path for path in folder.glob("_*.py") if path.name != "__init__.py")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPOSITORY).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _lockgate_imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """Each import of lockgate in ``path``: its line, the module, and the names taken from it."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "lockgate":
                yield node.lineno, node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "lockgate":
                    yield node.lineno, alias.name, []


def _layer_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_the_table_lists_every_package_layer_and_each_may_import_only_layers_below() -> None:
    layers = list(MAY_IMPORT)

    for index, layer in enumerate(layers):
        assert MAY_IMPORT[layer] == set(layers[:index])


@pytest.mark.parametrize("layer", list(MAY_IMPORT))
def test_each_layer_imports_only_itself_the_layers_below_and_the_base(layer: str) -> None:
    allowed = {layer, *MAY_IMPORT[layer], *BASE}

    upward = [
        f"{path.relative_to(REPOSITORY)}:{line} imports {module}"
        for path in _private_modules(layer)
        for line, module, _ in _lockgate_imports(path)
        if _layer_of(module) not in allowed
    ]

    assert upward == []


@pytest.mark.parametrize("layer", PURE)
def test_a_pure_layer_imports_no_temporalio(layer: str) -> None:
    modules = [_module_name(path) for path in _private_modules(layer)]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'temporalio'))\n"
    )

    shown = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
        timeout=60,
    )

    assert modules
    assert shown.stdout.splitlines()[-1] == "[]"


def _own_modules() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        # The examples are written as a user writes them, through the faces the README teaches.
        if "examples" not in path.relative_to(PACKAGE).parts and _module_name(path) not in FACADES
    )


def test_every_module_of_lockgate_belongs_to_a_layer_or_sits_above_them() -> None:
    # A new package under lockgate/ is placed in the table above, or listed here as a surface
    # that sits above every layer.
    above = {
        "adapters",
        "cli",
        "encryption",
        "examples",
        "inbox",
        "serving",
        "telemetry",
    }
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}

    assert packages - above == {layer.split(".")[1] for layer in MAY_IMPORT}
