"""lockgate's modules as the tests that hold its architecture read them: each module's file, and
what it imports, from its syntax tree (nothing is imported)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.support import REPOSITORY

PACKAGE = REPOSITORY / "lockgate"


def module_name(path: Path) -> str:
    """The dotted name of the module in ``path``."""
    parts = path.relative_to(REPOSITORY).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of lockgate, by name."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def within(module: str, packages: list[str]) -> bool:
    """Whether ``module`` is one of ``packages`` or a module under one."""
    return any(module == package or module.startswith(package + ".") for package in packages)


def imports(path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """Each module of lockgate that ``path`` imports (anywhere: at the top, in a function, under
    ``TYPE_CHECKING``), or, in a face that serves names lazily, names as a name's home; with its
    line."""
    text = path.read_text()
    lazy = "lazy_names(" in text
    for node in ast.walk(ast.parse(text, str(path))):
        named: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            named = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        elif isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif lazy and isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = [node.value] if node.value in known else []
        for name in named:
            found = _known(name, known)
            if found is not None:
                yield getattr(node, "lineno", 0), found
                break


def _known(name: str, known: dict[str, Path]) -> str | None:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None
