"""Compiling a declared graph: everything derived from types, everything doubtful refused.

Every refusal is a :class:`GraphDeclarationError` naming the class and what to declare, raised
when the worker starts, never on the first request in production.
"""

from __future__ import annotations

import enum
import importlib
import typing
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from lockgate.graphs._compile_agents import compile_agent
from lockgate.graphs._compile_asks import check_deadline_takes, compile_ask
from lockgate.graphs._compile_shape import check_every_case_routed, check_no_ungated_cycle
from lockgate.graphs._compile_subgraphs import check_outcomes_routed, compile_subgraph
from lockgate.graphs._compiled import (
    END_STATE,
    CompiledAsk,
    CompiledGraph,
    CompiledNode,
    Transition,
    case_code,
)
from lockgate.graphs._declare import (
    Appends,
    Ask,
    Because,
    EndOfRun,
    GraphDeclarationError,
    GraphSpec,
    Node,
    Subgraph,
    Target,
    graph_spec,
)
from lockgate.graphs._declare_agents import AgentStep
from lockgate.identity._canonical import to_jsonable
from lockgate.tools._tool import ToolDefinition, definition_of, is_tool

__all__ = ["compile_graph"]


def _label(item: object) -> str:
    if isinstance(item, type):
        return item.__name__
    return str(getattr(item, "__qualname__", item))


class _Compiler:
    def __init__(self, cls: type, spec: GraphSpec) -> None:
        self.cls = cls
        self.spec = spec
        self.where = f"Graph {cls.__name__}"
        self.node_states: dict[str, CompiledNode] = {}
        self.state_of_node: dict[Node, str] = {}
        self.asks: dict[type[enum.Enum], CompiledAsk] = {}

    def fail(self, sentence: str) -> GraphDeclarationError:
        return GraphDeclarationError(f"{self.where}{sentence}")

    # Fields ----------------------------------------------------------------------------------

    def fields(self) -> tuple[type[BaseModel], dict[str, Any]]:
        cls = self.cls
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            raise self.fail(
                " is not a pydantic model: the model IS the state. Declare the fields the "
                "nodes read and write as fields of a BaseModel."
            )
        private = sorted(getattr(cls, "__private_attributes__", {}) or {})
        if private:
            raise self.fail(
                f" declares the field '{private[0]}', a name kept for what the engine writes: "
                "a leading underscore is the engine's. Rename it."
            )
        if not cls.model_fields:
            raise self.fail(" declares no fields: its model has no fields.")
        facts: dict[str, Any] = {
            "appends": {},
            "target": None,
            "descriptions": {},
            "required": [],
            "defaults": {},
        }
        for name, info in cls.model_fields.items():
            for marker in info.metadata:
                if isinstance(marker, Appends):
                    facts["appends"][name] = marker.of
                elif isinstance(marker, Target):
                    if facts["target"] is not None:
                        raise self.fail(
                            f" marks both '{facts['target']}' and '{name}' as Target(): a run is "
                            "named by one field."
                        )
                    facts["target"] = name
                elif isinstance(marker, Because):
                    facts["descriptions"][name] = marker.purpose
            if info.description and name not in facts["descriptions"]:
                facts["descriptions"][name] = info.description
            if info.is_required():
                facts["required"].append(name)
            else:
                try:
                    default = info.get_default(call_default_factory=True)
                except Exception as error:  # the graph author's own factory
                    raise self.fail(
                        f": the default_factory of field '{name}' raised "
                        f"{type(error).__name__}: {error}, so no run could start."
                    ) from None
                try:
                    jsonable = to_jsonable(default)
                except TypeError:
                    raise self.fail(
                        f": the default of field '{name}' is not JSON data, so a run cannot "
                        "carry it. Give it a JSON default."
                    ) from None
                # A default_factory's value is made per run (when the run's start is checked,
                # and recorded), never once for every run of this process.
                if info.default_factory is None:
                    facts["defaults"][name] = jsonable
        for name, source in facts["appends"].items():
            if source not in cls.model_fields:
                raise self.fail(
                    f": field '{name}' appends '{source}', which is not a field of this graph."
                )
        return cls, facts

    # Nodes -------------------------------------------------------------------------------------

    def node(self, candidate: object, role: str = "node") -> str:
        """The state of a node, compiling it on first sight."""
        if isinstance(candidate, EndOfRun):
            raise self.fail(
                f": the {role} is END, which is not a node: END is only where a Route leads "
                "when its case ends the run."
            )
        if isinstance(candidate, Subgraph):
            return self._subgraph(candidate)
        if isinstance(candidate, AgentStep):
            return self._agent(candidate)
        if not callable(candidate) or not is_tool(candidate):
            raise self.fail(
                f": {role} {_label(candidate)} is not a usable tool: decorate it with "
                "@tool(name, description), or name an options enum that an Ask offers."
            )
        if candidate in self.state_of_node:
            return self.state_of_node[candidate]
        definition = definition_of(candidate)
        state = definition.name.rsplit(":", 1)[-1]
        self._not_the_end(state, f"the tool {definition.name}")
        other = self.node_states.get(state)
        if other is not None and (
            other.definition is None or other.definition.handler is not definition.handler
        ):
            raise self.fail(
                f": two nodes compile to the same state '{state}' ({other.tool} and "
                f"{definition.name}). Tool names must differ after the last colon."
            )
        if definition.confirm:
            raise self.fail(
                f": node '{state}' declares confirm=True, and this compiler cannot yet insert the "
                "consent pause it asks for. Put an Ask before it, or drop confirm."
            )
        fields = self.model.model_fields
        for parameter in definition.parameters:
            if parameter not in fields:
                raise self.fail(
                    f": node '{state}' reads `{parameter}`, which is not a field of this graph. "
                    "Declare it as a field of the graph's model, or the node would receive "
                    "nothing and nobody would notice."
                )
        writes, decides_candidates = self._outputs(state, definition)
        compiled = CompiledNode(
            state=state,
            tool=definition.name,
            definition=definition,
            reads=definition.parameters,
            writes=writes,
            decides_on=None,
            route_enum=None,
            route_cases=MappingProxyType({}),
            needs=tuple(sorted(definition.scopes)),
        )
        self.node_states[state] = compiled
        self.state_of_node[candidate] = state
        self._enums_of[state] = decides_candidates
        return state

    def _subgraph(self, declared: Subgraph) -> str:
        if declared in self.state_of_node:
            return self.state_of_node[declared]
        node, enums = compile_subgraph(self.where, declared, self.model, _COMPILING, _compile_class)
        return self._add_node(declared, node, enums)

    def _agent(self, declared: AgentStep) -> str:
        if declared in self.state_of_node:
            return self.state_of_node[declared]
        return self._add_node(
            declared, compile_agent(self.where, declared, self.model, self.target), {}
        )

    def _add_node(
        self, declared: Node, node: CompiledNode, enums: dict[type[enum.Enum], list[str]]
    ) -> str:
        self._not_the_end(node.state, node.tool)
        if node.state in self.node_states:
            raise self.fail(
                f": two nodes compile to the same state '{node.state}' "
                f"({self.node_states[node.state].tool} and {node.tool})."
            )
        self.node_states[node.state] = node
        self.state_of_node[declared] = node.state
        self._enums_of[node.state] = enums
        return node.state

    def _not_the_end(self, state: str, what: str) -> None:
        if state == END_STATE:
            raise self.fail(
                f": {what} compiles to the state '{END_STATE}', the state of a run that has "
                "ended (END). Rename it."
            )

    def _outputs(
        self, state: str, definition: ToolDefinition
    ) -> tuple[tuple[str, ...], dict[type[enum.Enum], list[str]]]:
        returns = definition.returns
        origin = typing.get_origin(returns)
        if origin is typing.Annotated:
            returns = typing.get_args(returns)[0]
        enums: dict[type[enum.Enum], list[str]] = {}
        if isinstance(returns, type) and issubclass(returns, enum.Enum):
            enums[returns] = [""]
            return (), enums
        if not (isinstance(returns, type) and issubclass(returns, BaseModel)):
            return (), enums
        writes: list[str] = []
        for name, info in returns.model_fields.items():
            if name not in self.model.model_fields:
                raise self.fail(
                    f": node '{state}' returns {returns.__name__}, whose field '{name}' is not a "
                    "field of this graph. Declare it, or the value would be dropped and "
                    "nobody would notice."
                )
            writes.append(name)
            for annotation in _enum_types(info.annotation):
                enums.setdefault(annotation, []).append(name)
        return tuple(writes), enums

    # Whole graph -------------------------------------------------------------------------------

    def compile(self) -> CompiledGraph:
        spec = self.spec
        self.model, facts = self.fields()
        self._enums_of: dict[str, dict[type[enum.Enum], list[str]]] = {}

        for declared_ask in spec.asks:
            self._ask(declared_ask)

        if spec.start is None:
            raise self.fail(" declares no start: name the node it begins at (start=...).")
        if isinstance(spec.start, EndOfRun):
            raise self.fail(
                " starts at END, so a run would end before anything ran: start at a node or a "
                "gate. END is only where a Route leads when its case ends the run."
            )
        # Every node first, so that the producers of each routing enum are known.
        declared: list[tuple[object, str]] = [(spec.start, "start")]
        for edge in spec.edges:
            declared += [(edge.source, "edge source"), (edge.target, "edge target")]
        for route in spec.routes:
            if not isinstance(route.to, EndOfRun):
                declared.append((route.to, "route target"))
            if route.from_ is not None:
                declared.append((route.from_, "route origin (from_)"))
        for candidate, role in declared:
            if isinstance(candidate, EndOfRun) and role == "edge target":
                continue  # refused below, with the Edge it ends
            if not (isinstance(candidate, type) and issubclass(candidate, enum.Enum)):
                self.node(candidate, role)
        start = self.target(spec.start, "start")

        edges: dict[str, Transition] = {}
        routes: dict[str, dict[str, Transition]] = {}
        route_enums: dict[str, type[enum.Enum]] = {}

        for edge in spec.edges:
            if isinstance(edge.source, type) and issubclass(edge.source, enum.Enum):
                raise self.fail(
                    f": Edge({edge.source.__name__}, ...) leaves a gate; a gate's options leave "
                    "through Routes, one per option."
                )
            source = self.node(edge.source, "edge source")
            if isinstance(edge.target, EndOfRun):
                raise self.fail(
                    f": Edge({source}, END) says what a node with no edge out already does: it "
                    "ends the run after it runs. Drop the Edge; END is for Routes."
                )
            to = self.target(edge.target, "edge target")
            if source in edges:
                raise self.fail(
                    f": node '{source}' has two edges ('{edges[source].to}' and '{to}'): one "
                    "node, one unconditional way out. Route on an enum to branch."
                )
            edges[source] = Transition(to, to)

        for route in spec.routes:
            case = route.when
            if not isinstance(case, enum.Enum):
                raise self.fail(
                    f": Route(when={case!r}) must name an enum case (Verdict.PASSED): the cases "
                    "are the edges."
                )
            enum_type = type(case)
            origin = self._origin(route, enum_type)
            if origin in route_enums and route_enums[origin] is not enum_type:
                raise self.fail(
                    f": state '{origin}' routes on two different enums "
                    f"({route_enums[origin].__name__} and {enum_type.__name__}). One decision, "
                    "one enum."
                )
            route_enums[origin] = enum_type
            code = case_code(case)
            if isinstance(route.to, EndOfRun):
                if route.at_most is not None or route.then_ask is not None:
                    raise self.fail(
                        f": route '{code}' leads to END with a budget (at_most, then_ask); a "
                        "route that ends the run is taken once, so its budget never runs out. "
                        "Drop the budget."
                    )
                to = END_STATE
            else:
                to = self.target(route.to, "route target")
            then_ask = self._budget(route, code)
            table = routes.setdefault(origin, {})
            if code in table:
                raise self.fail(
                    f": state '{origin}' declares two routes for case {case.name}; one case, one "
                    "way."
                )
            table[code] = Transition(code, to, route.at_most, then_ask)

        for state in routes:
            if state in edges:
                raise self.fail(
                    f": node '{state}' has an edge and routes: one decision, one way out. Drop "
                    "the Edge, or the Routes."
                )

        nodes = self._with_decisions(route_enums)
        asks = {ask.state: ask for ask in self.asks.values()}
        check_every_case_routed(self.where, route_enums, routes)
        for ask in asks.values():
            if ask.state not in routes:
                raise self.fail(
                    f": Ask({ask.options_enum.__name__}) offers options that no Route takes; "
                    "route every option."
                )
        check_no_ungated_cycle(self.where, edges, routes, asks)
        check_deadline_takes(self.where, asks, routes, nodes)
        check_outcomes_routed(self.where, nodes, self._enums_of, routes)
        used = {start} | {t.to for t in edges.values()}
        used |= {t.to for table in routes.values() for t in table.values()}
        used |= {t.then_ask for table in routes.values() for t in table.values() if t.then_ask}
        used |= {node.agent.then_ask for node in nodes.values() if node.agent is not None}
        for ask in asks.values():
            if ask.state not in used:
                raise self.fail(
                    f": Ask({ask.options_enum.__name__}) is declared, but no edge, route or "
                    "budget leads to it. Lead something to it, or drop it."
                )
        terminals = frozenset(
            state for state in nodes if state not in edges and state not in routes
        )
        budgets = {
            t.code: t.at_most
            for table in routes.values()
            for t in table.values()
            if t.at_most is not None
        }
        return CompiledGraph(
            name=spec.name,
            description=spec.description,
            version=spec.version,
            model=self.model,
            fields=tuple(self.model.model_fields),
            required=tuple(facts["required"]),
            defaults=facts["defaults"],
            descriptions=facts["descriptions"],
            appends=facts["appends"],
            target=facts["target"],
            start=start,
            nodes=nodes,
            asks=asks,
            edges=edges,
            routes=routes,
            terminals=terminals,
            budgets=budgets,
            allow_unsigned_start=spec.allow_unsigned_start,
            nesting=max(
                (node.subgraph.nesting + 1 for node in nodes.values() if node.subgraph),
                default=0,
            ),
        )

    def _ask(self, ask: Ask) -> None:
        options = ask.options
        if not (isinstance(options, type) and issubclass(options, enum.Enum)):
            raise self.fail(f": Ask names {_label(options)}, which is not an enum.")
        if options in self.asks:
            raise self.fail(f": two Asks offer {options.__name__}; one gate per options enum.")
        if not ask.of:
            raise self.fail(
                f": Ask({options.__name__}) names no role (of=...): say who answers it."
            )
        compiled = compile_ask(self.where, ask, self.model.model_fields)
        self._not_the_end(compiled.state, f"Ask({options.__name__})")
        self.asks[options] = compiled

    def target(self, candidate: object, role: str) -> str:
        if isinstance(candidate, type) and issubclass(candidate, enum.Enum):
            ask = self.asks.get(candidate)
            if ask is None:
                raise self.fail(
                    f": the {role} {candidate.__name__} is an enum that no Ask offers; declare "
                    f"Ask({candidate.__name__}, of='<role>') to make it a gate."
                )
            if ask.state in self.node_states:
                raise self.fail(
                    f": the gate '{ask.state}' and a node compile to the same state; rename one."
                )
            return ask.state
        state = self.node(candidate, role)
        if any(ask.state == state for ask in self.asks.values()):
            raise self.fail(f": the node '{state}' and a gate compile to the same state.")
        return state

    def _producers(self, enum_type: type[enum.Enum]) -> list[str]:
        return [state for state, enums in self._enums_of.items() if enum_type in enums]

    def _origin(self, route: Any, enum_type: type[enum.Enum]) -> str:
        if route.from_ is not None:
            origin = self.node(route.from_, "route origin (from_)")
            if enum_type not in self._enums_of.get(origin, {}):
                raise self.fail(
                    f": Route(when={enum_type.__name__}.{route.when.name}, from_=...) names the "
                    f"node '{origin}', which does not return a {enum_type.__name__}."
                )
            return origin
        if enum_type in self.asks:
            return self.asks[enum_type].state
        producers = self._producers(enum_type)
        if not producers:
            raise self.fail(
                f": Route(when={enum_type.__name__}.{route.when.name}) has no origin: no node "
                f"returns a {enum_type.__name__} and no Ask offers it. Say where the decision "
                "comes from."
            )
        if len(producers) > 1:
            raise self.fail(
                f": {enum_type.__name__} is returned by more than one node "
                f"({', '.join(sorted(producers))}), so the origin of its routes cannot be "
                "derived. Write from_= on each Route."
            )
        return producers[0]

    def _budget(self, route: Any, code: str) -> str | None:
        if route.at_most is None:
            if route.then_ask is not None:
                raise self.fail(
                    f": route '{code}' declares then_ask but no at_most; a gate that opens when "
                    "a budget runs out needs the budget."
                )
            return None
        if not isinstance(route.at_most, int) or isinstance(route.at_most, bool):
            raise self.fail(f": route '{code}' declares at_most={route.at_most!r}; use a count.")
        if route.at_most <= 0:
            raise self.fail(
                f": route '{code}' declares at_most={route.at_most}. A budget of zero is not a "
                "loop, it is an edge that cannot be taken."
            )
        if route.then_ask is None:
            raise self.fail(
                f": route '{code}' declares at_most={route.at_most} but no then_ask. A budget "
                "that simply stops leaves the run somewhere nobody chose: name the options a "
                "human is offered when it runs out."
            )
        return self.target(route.then_ask, "then_ask")

    def _with_decisions(
        self, route_enums: Mapping[str, type[enum.Enum]]
    ) -> dict[str, CompiledNode]:
        nodes: dict[str, CompiledNode] = {}
        for state, node in self.node_states.items():
            enum_type = route_enums.get(state)
            if enum_type is None:
                nodes[state] = node
                continue
            fields = self._enums_of[state].get(enum_type, [])
            if len(fields) != 1:
                raise self.fail(
                    f": node '{state}' routes on {enum_type.__name__}, and its result has "
                    f"{len(fields)} fields of that type ({', '.join(fields)}); one decision, one "
                    "field."
                )
            nodes[state] = CompiledNode(
                state=node.state,
                tool=node.tool,
                definition=node.definition,
                reads=node.reads,
                writes=node.writes,
                decides_on=fields[0],
                route_enum=enum_type,
                route_cases=MappingProxyType(
                    {member.value: str(member.value) for member in enum_type}
                ),
                needs=node.needs,
                subgraph=node.subgraph,
                agent=node.agent,
            )
        return nodes


def _enum_types(annotation: Any) -> list[type[enum.Enum]]:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [annotation]
    return [found for argument in typing.get_args(annotation) for found in _enum_types(argument)]


def _resolve(candidate: object) -> object:
    if isinstance(candidate, str):
        module_name, _, attribute = candidate.partition(":")
        try:
            module = importlib.import_module(module_name)
            return getattr(module, attribute or "")
        except (ImportError, AttributeError, ValueError):
            raise GraphDeclarationError(
                f"Cannot compile a graph from '{candidate}': the class does not exist."
            ) from None
    return candidate


def compile_graph(cls: type | str) -> CompiledGraph:
    """Compiles a ``@graph`` class (or ``"module:Class"``) into a runnable graph.

    Raises:
        GraphDeclarationError: The declaration is refused; the message names the class and what
            to declare.
    """
    resolved = _resolve(cls)
    spec = graph_spec(resolved)
    if spec is None or not isinstance(resolved, type):
        raise GraphDeclarationError(
            f"Class {_label(resolved)} is not a declared graph: add @graph(name, description, "
            "start=...)."
        )
    return _compile_class(resolved)


_COMPILING: list[type] = []
"""The graph classes being compiled, outermost first: a sub-graph among them includes itself."""


def _compile_class(cls: type) -> CompiledGraph:
    spec = graph_spec(cls)
    if spec is None:
        raise GraphDeclarationError(
            f"Class {_label(cls)} is not a declared graph: add @graph(name, description, "
            "start=...)."
        )
    _COMPILING.append(cls)
    try:
        return _Compiler(cls, spec).compile()
    finally:
        _COMPILING.pop()
