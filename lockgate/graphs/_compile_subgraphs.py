"""Compiling a node that runs another declared graph as a child workflow.

The child is compiled with its parent (a graph that includes itself, at any depth, is refused),
and what passes between them is derived from their fields: the fields both declare go down
at the start and come back at the end, and the child's ``outcome`` field, typed by an enum,
routes the parent.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from lockgate.gates._limits import MAX_SUBGRAPH_DEPTH
from lockgate.graphs._compiled import CompiledGraph, CompiledNode
from lockgate.graphs._declare import GraphDeclarationError, Subgraph, graph_spec

__all__ = ["MAX_NESTING", "check_outcomes_routed", "compile_subgraph"]

MAX_NESTING = MAX_SUBGRAPH_DEPTH
"""How deep sub-graphs may nest: a graph may run a child that runs a child... ten levels."""


def compile_subgraph(
    where: str,
    declared: Subgraph,
    parent: type[BaseModel],
    compiling: list[type],
    compile_graph: Callable[[type], CompiledGraph],
) -> tuple[CompiledNode, dict[type[enum.Enum], list[str]]]:
    """The node running ``declared``'s graph, and the enum its outcome routes on.

    Args:
        where: ``Graph <class name>``, which every refusal starts with.
        declared: The sub-graph node as declared.
        parent: The parent graph's field model.
        compiling: The graph classes being compiled, outermost first.
        compile_graph: Compiles the child.
    """
    child_class = declared.graph
    if graph_spec(child_class) is None or not isinstance(child_class, type):
        raise GraphDeclarationError(
            f"{where}: Subgraph({getattr(child_class, '__name__', child_class)!r}) names no "
            "declared graph: give it a @graph class."
        )
    if child_class in compiling:
        chain = " → ".join(cls.__name__ for cls in [*compiling, child_class])
        raise GraphDeclarationError(
            f"{where} includes itself ({chain}): a graph that runs itself as a sub-graph never "
            "ends. Break the cycle."
        )
    child = compile_graph(child_class)
    if child.nesting + 1 > MAX_NESTING:
        raise GraphDeclarationError(
            f"{where}: Subgraph({child_class.__name__}) nests {child.nesting + 2} graphs deep; "
            f"sub-graphs nest at most {MAX_NESTING} levels."
        )
    shared = tuple(name for name in child.fields if name in parent.model_fields)
    missing = [name for name in child.required if name not in parent.model_fields]
    if missing:
        raise GraphDeclarationError(
            f"{where}: Subgraph({child_class.__name__}) needs the field(s) "
            f"{', '.join(missing)} to start, which this graph does not declare: a child starts "
            "with the fields both graphs declare. Declare them here."
        )
    enums: dict[type[enum.Enum], list[str]] = {}
    if declared.outcome is not None:
        field = child.model.model_fields.get(declared.outcome)
        if field is None:
            raise GraphDeclarationError(
                f"{where}: Subgraph({child_class.__name__}, outcome='{declared.outcome}') names a "
                f"field {child_class.__name__} does not declare."
            )
        found = _enum_types(field.annotation)
        if len(found) != 1:
            raise GraphDeclarationError(
                f"{where}: Subgraph({child_class.__name__}, outcome='{declared.outcome}'): that "
                "field is not typed by one enum, so it cannot route this graph. Type it "
                "`SomeOutcome | None`."
            )
        enums[found[0]] = [declared.outcome]
    state = child.name.rsplit(":", 1)[-1]
    node = CompiledNode(
        state=state,
        tool=child.name,
        definition=None,
        reads=shared,
        writes=tuple(name for name in shared if name != declared.outcome),
        decides_on=None,
        route_enum=None,
        route_cases=MappingProxyType({}),
        # Whoever drives the parent here drives the child: what its first node needs, so a
        # gate's answer that leads here is judged for it (later nodes judge themselves).
        needs=child.nodes[child.start].needs if child.start in child.nodes else (),
        subgraph=child,
    )
    return node, enums


def check_outcomes_routed(
    where: str,
    nodes: Mapping[str, CompiledNode],
    enums_of: Mapping[str, Mapping[type[enum.Enum], list[str]]],
    routes: Mapping[str, object],
) -> None:
    """Refuses a sub-graph whose declared outcome no Route takes: it would be dropped."""
    for state, node in nodes.items():
        if node.subgraph is not None and enums_of.get(state) and state not in routes:
            (outcome,) = enums_of[state]
            raise GraphDeclarationError(
                f"{where}: the sub-graph '{state}' ({node.tool}) declares an outcome, "
                f"{outcome.__name__}, that no Route takes: route each of its cases, or drop "
                "outcome=."
            )


def _enum_types(annotation: Any) -> list[type[enum.Enum]]:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [annotation]
    return [found for argument in typing.get_args(annotation) for found in _enum_types(argument)]
