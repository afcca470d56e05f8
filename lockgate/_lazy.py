"""A face that serves its names on first use (PEP 562), listing each name once.

A face lists its names once, as the imports of its ``if TYPE_CHECKING:`` block (``from home
import Name as Name``): type checkers read them there, and :func:`lazy_exports` reads the same
block at import time to learn which module serves each name, imported the first time it is
asked for. So ``lockgate --help``, or any light module, runs without importing temporalio.

The block is read with ``io.open_code``, as the import system reads the module: inside
Temporal's workflow sandbox, which re-imports lockgate for a sandboxed workflow that uses it,
reading files with ``open`` or ``pathlib`` is refused.
"""

from __future__ import annotations

import ast
import io
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def _imported(home: str, name: str) -> Any:
    # `__import__` rather than importlib: inside Temporal's workflow sandbox it is the
    # sandbox's importer, which hands back lockgate's own (passed-through) modules.
    return getattr(__import__(home, fromlist=[name]), name)


def _homes(source: str) -> dict[str, str]:
    """Each name the module-level ``if TYPE_CHECKING:`` blocks of ``source`` import, with the
    module it comes from."""
    homes: dict[str, str] = {}
    for statement in ast.parse(source).body:
        if not (isinstance(statement, ast.If) and ast.unparse(statement.test) == "TYPE_CHECKING"):
            continue
        for node in statement.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    homes[alias.asname or alias.name] = node.module
    return homes


def _order(name: str) -> tuple[int, str]:
    # The order ruff's RUF022 keeps: SCREAMING_CASE, then CamelCase, then the rest.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def lazy_exports(
    namespace: dict[str, Any],
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of the face whose globals are
    ``namespace``: its names are those its ``if TYPE_CHECKING:`` block imports (with the names
    it already holds, such as the ones it imports at run time too), each imported from its
    module the first time it is asked for, then kept."""
    module = namespace["__name__"]
    with io.open_code(namespace["__file__"]) as file:
        homes = _homes(file.read().decode("utf-8"))
    exported = sorted(homes, key=_order)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = _imported(home, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exported})

    return __getattr__, __dir__, exported
