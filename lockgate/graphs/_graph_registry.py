"""The registry of compiled graphs a worker serves, by name and version.

Refuses two classes that claim one name and version; compiles each graph once.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from lockgate.graphs._compile import compile_graph
from lockgate.graphs._compiled import CompiledGraph
from lockgate.graphs._declare import GraphDeclarationError

__all__ = ["GraphRegistry"]


class GraphRegistry:
    """The graphs a worker serves, by name and version, each compiled once.

    Raises :class:`GraphDeclarationError` when two classes claim one name and version.
    """

    def __init__(self, graphs: Iterable[type | str | CompiledGraph] = ()) -> None:
        self._graphs: dict[str, dict[int, CompiledGraph]] = {}
        for candidate in graphs:
            self.add(candidate)

    def add(self, candidate: type | str | CompiledGraph) -> CompiledGraph:
        """Compiles and adds a graph."""
        compiled = candidate if isinstance(candidate, CompiledGraph) else compile_graph(candidate)
        versions = self._graphs.setdefault(compiled.name, {})
        existing = versions.get(compiled.version)
        if existing is not None and existing.model is not compiled.model:
            raise GraphDeclarationError(
                f"Two graphs both call themselves '{compiled.name}' (version {compiled.version}): "
                f"{existing.model.__qualname__} and {compiled.model.__qualname__}. A name is how "
                "a human and an agent both reach it, so it has one owner; bump version= for a "
                "new shape."
            )
        versions[compiled.version] = compiled
        for child in compiled.subgraphs():
            # A sub-graph runs on the worker that runs its parent.
            if child.version not in self._graphs.get(child.name, {}):
                self.add(child)
        return compiled

    def names(self) -> list[str]:
        """Graph names, sorted."""
        return sorted(self._graphs)

    def versions(self, name: str) -> dict[int, CompiledGraph]:
        """Every version of ``name`` this worker serves."""
        return dict(self._graphs.get(name, {}))

    def get(self, name: str, version: int | None = None) -> CompiledGraph:
        """The graph ``name`` at ``version`` (the newest when None)."""
        versions = self._graphs.get(name)
        if not versions:
            declared = ", ".join(self.names()) or "none"
            raise KeyError(f"No graph named '{name}'. Declared: {declared}.")
        if version is None:
            return versions[max(versions)]
        if version not in versions:
            served = ", ".join(str(v) for v in sorted(versions))
            raise KeyError(f"Graph '{name}' has no version {version} here (serving: {served}).")
        return versions[version]

    def model(self, name: str, version: int) -> type[BaseModel] | None:
        """The field model of ``name`` at ``version``, or None if it is not served here."""
        compiled = self._graphs.get(name, {}).get(version)
        return compiled.model if compiled is not None else None

    def evidence(self, name: str, version: int | None, ask: str) -> dict[str, type[BaseModel]]:
        """The evidence models of gate ``ask`` of ``name`` at ``version`` (none if not served)."""
        compiled = self._graphs.get(name, {}).get(version) if version is not None else None
        found = compiled.asks.get(ask) if compiled is not None else None
        return dict(found.evidence) if found is not None else {}

    def __iter__(self) -> typing.Iterator[CompiledGraph]:
        for name in self.names():
            yield from (self._graphs[name][v] for v in sorted(self._graphs[name]))

    def catalogue(self) -> list[dict[str, Any]]:
        """One row per graph (newest version): name, description, fields, required ones,
        inputs, gates, and every version served (``versions``)."""
        return [
            {**self.get(name).catalogue(), "versions": sorted(self._graphs[name])}
            for name in self.names()
        ]
