"""What a compiled graph is: its states, transitions, nodes and gates, ready to run.

The compiler (:mod:`lockgate.graphs._compile`) makes these from a declared graph; the workflow
and the registry only read them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from lockgate.gates._approval_policies import SINGLE_POLICY, CompiledApprovalPolicy, GateDeadline
from lockgate.gates._evidence import evidence_shown
from lockgate.gates._gates import GateChoice, OpenGate
from lockgate.identity._bindings import gate_subject
from lockgate.identity._canonical import to_jsonable
from lockgate.tools._tool import ToolDefinition

__all__ = [
    "END_STATE",
    "CompiledAgent",
    "CompiledAsk",
    "CompiledGraph",
    "CompiledNode",
    "Transition",
    "case_code",
]


END_STATE = "__end__"
"""The state of a run that has ended, and where a route declared ``to=END`` leads (no node or
gate compiles to it)."""


def case_code(case: enum.Enum) -> str:
    """What a compiled graph calls a case of an enum (a route, a gate's option): its value, as
    text."""
    return str(case.value)


@dataclass(frozen=True, slots=True)
class Transition:
    """A way out of a state: its name, where it leads, and its loop budget if any."""

    code: str
    to: str
    at_most: int | None = None
    then_ask: str | None = None


@dataclass(frozen=True, slots=True)
class CompiledAgent:
    """An agent step: its model (by name), instructions, tools, fields and budget.

    Attributes:
        model: The name the worker's model is given under.
        instructions: The model's instructions.
        tools: The tools the model may ask for, by the name it is offered them under
            (``tickets__read``); they live on the worker only.
        prompt_from: The field read as the prompt.
        output_into: The field the final text lands in.
        requests: Model requests per budget (None: not counted).
        tokens: Tokens per budget (None: not counted).
        then_ask: The state of the gate that opens when the budget is spent.
        timeout_seconds: How long one model request may take.
    """

    model: str
    instructions: str
    tools: Mapping[str, ToolDefinition]
    prompt_from: str
    output_into: str
    requests: int | None
    tokens: int | None
    then_ask: str
    timeout_seconds: float


@dataclass(frozen=True, slots=True)
class CompiledNode:
    """A node: the tool it runs, the fields it reads and writes, and what it decides on.

    Attributes:
        state: The node's state code (the tool's name after its last colon).
        tool: The tool's name, which is also its activity's name.
        definition: The tool (timeouts, retry, scopes); lives on the worker only.
        reads: The fields passed as arguments, by parameter name.
        writes: The fields of its result that land in fields of the same name.
        decides_on: The result field holding the routing enum; ``""`` when the result is the
            enum itself; ``None`` when the node does not decide.
        route_enum: The enum its routes are named by.
        route_cases: Its members' values, each to its case: the workflow looks a decision up
            here and never calls the enum (user code) itself.
        needs: Scopes it needs (alternatives); empty: anyone may run it.
        subgraph: For a node that runs another graph as a child workflow, that graph (then
            ``definition`` is None, ``tool`` is the child graph's name, ``reads`` and
            ``writes`` the fields both graphs declare, ``decides_on`` its outcome field).
        agent: For an agent step, its model, tools and budget (then ``definition`` is None,
            ``tool`` is the step's name, ``reads`` its prompt field, ``writes`` its output
            field, and ``needs`` nothing: each tool its model asks for judges itself).
    """

    state: str
    tool: str
    definition: ToolDefinition | None
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    decides_on: str | None
    route_enum: type[enum.Enum] | None
    route_cases: Mapping[Any, str]
    needs: tuple[str, ...]
    subgraph: CompiledGraph | None = None
    agent: CompiledAgent | None = None


@dataclass(frozen=True, slots=True)
class CompiledAsk:
    """A gate: its state code, options, the role it asks for, why, and its approval policy."""

    state: str
    options_enum: type[enum.Enum]
    role: str
    because: str
    options: tuple[str, ...]
    policy: CompiledApprovalPolicy = SINGLE_POLICY
    evidence: Mapping[str, type[BaseModel]] = field(default_factory=dict)
    """The evidence model each option that needs one requires."""
    evidence_into: str | None = None
    """The field the evidence of the answers that decided the gate is written to."""
    waivable_by: str | None = None
    """The role whose holder may waive the gate, with a reason; None: it is not waivable."""
    deadline: GateDeadline | None = None
    """How long the gate waits, and what then happens."""
    sign_in: Mapping[str, Any] | None = None
    """What an answer an identity provider signs must show (``{mfa, within_seconds}``)."""

    def opening(
        self,
        number: int,
        *,
        graph: str,
        run: str,
        execution: str,
        requester: str,
        choices: Sequence[GateChoice],
        target: Mapping[str, Any] | None,
        makers: Iterable[str],
        parent: Mapping[str, Any] | None = None,
    ) -> OpenGate:
        """This gate at its ``number``-th opening in run ``run``, as declared (the gate engine's
        ``opened`` then opens it).

        Its key is ``state#number``: a proof answers one opening only. Its subject is the digest
        of what it shows (its ``target`` field and its ``choices``) that a proof names; each
        option's evidence model is shown by its fields.
        """
        return OpenGate(
            graph=graph,
            run=run,
            gate=f"{self.state}#{number}",
            ask=self.state,
            role=self.role,
            because=self.because,
            requester=requester,
            choices=tuple(choices),
            execution=execution,
            subject=gate_subject(target, [choice.to_dict() for choice in choices]),
            makers=tuple(makers),
            policy=self.policy,
            evidence={option: evidence_shown(model) for option, model in self.evidence.items()},
            waivable_by=self.waivable_by,
            deadline=self.deadline,
            parent=parent,
            sign_in=self.sign_in,
        )


@dataclass(frozen=True, slots=True)
class CompiledGraph:
    """A graph ready to run: states, transitions, budgets, gates and fields."""

    name: str
    description: str
    version: int
    model: type[BaseModel]
    fields: tuple[str, ...]
    required: tuple[str, ...]
    defaults: Mapping[str, Any]
    """Fields' static defaults; one made by a ``default_factory`` is made per run."""
    descriptions: Mapping[str, str]
    appends: Mapping[str, str]
    target: str | None
    start: str
    nodes: Mapping[str, CompiledNode]
    asks: Mapping[str, CompiledAsk]
    edges: Mapping[str, Transition]
    routes: Mapping[str, Mapping[str, Transition]]
    terminals: frozenset[str]
    budgets: Mapping[str, int] = field(default_factory=dict)
    allow_unsigned_start: bool = False
    nesting: int = 0
    """How many levels of sub-graphs run below this graph (0: it runs none)."""

    def inputs(self) -> list[dict[str, Any]]:
        """Each field a start may give (the engine's own, named ``_...``, left out): its name,
        its type as JSON names it (``string``, ``list of string``, ``Verdict: PASSED | FAILED``),
        and its default (``default_made_per_run`` for one a factory makes) or ``required``."""
        try:
            schema = self.model.model_json_schema()
        except Exception:  # a type JSON Schema cannot express: its inputs are shown untyped
            schema = {}
        properties = schema.get("properties") or {}
        definitions = schema.get("$defs") or {}
        rows: list[dict[str, Any]] = []
        for name in self.fields:
            if name.startswith("_"):
                continue
            row: dict[str, Any] = {
                "name": name,
                "type": _json_type(properties.get(name) or {}, definitions),
                "required": name in self.required,
            }
            if name in self.defaults:
                try:
                    row["default"] = to_jsonable(self.defaults[name])
                except TypeError:  # not JSON data (a datetime, a path): shown as Python does
                    row["default"] = repr(self.defaults[name])
            elif name not in self.required:
                row["default_made_per_run"] = True
            if self.descriptions.get(name):
                row["description"] = self.descriptions[name]
            rows.append(row)
        return rows

    def subgraphs(self) -> list[CompiledGraph]:
        """Every graph this one runs as a child, at any depth."""
        found: list[CompiledGraph] = []
        for node in self.nodes.values():
            if node.subgraph is not None:
                found += [node.subgraph, *node.subgraph.subgraphs()]
        return found

    def tools(self) -> list[ToolDefinition]:
        """The tools its own runs call: its tool nodes', and those its agent steps offer (a
        sub-graph's run calls its own)."""
        found: list[ToolDefinition] = []
        for node in self.nodes.values():
            if node.definition is not None:
                found.append(node.definition)
            if node.agent is not None:
                found += node.agent.tools.values()
        return found

    @property
    def needs_signed_start(self) -> bool:
        """Whether a run must be started by a verified starter: it has gates, and did not
        declare otherwise."""
        return bool(self.asks) and not self.allow_unsigned_start

    def transitions_from(self, state: str) -> list[Transition]:
        """Every way out of ``state``: its edge, its routes, and the escapes of their budgets."""
        found: list[Transition] = []
        if state in self.edges:
            found.append(self.edges[state])
        for transition in self.routes.get(state, {}).values():
            found.append(transition)
        escapes = {t.then_ask for t in found if t.then_ask}
        found += [Transition(ask, ask) for ask in sorted(escapes)]
        return found

    def may_open_a_gate_from(self, state: str) -> bool:
        """Whether a run at ``state`` may still open a gate of its own: a gate (or an agent
        step's budget gate) is reachable from it. A node may park anywhere; a park writes what
        it needs to itself."""
        seen: set[str] = set()
        ahead = [state]
        while ahead:
            current = ahead.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in self.asks:
                return True
            node = self.nodes.get(current)
            if node is not None and node.agent is not None:
                return True
            ahead += [transition.to for transition in self.transitions_from(current)]
        return False

    def is_terminal(self, state: str) -> bool:
        """Whether a run ends after ``state`` runs."""
        return state in self.terminals

    def catalogue(self) -> dict[str, Any]:
        """What a person needs to start a run: name, description, fields, required ones, the
        inputs it takes (each with its JSON type, and its default or whether it is required),
        its nodes and gates (the role each asks, why, its options and the one that says no), and
        (``ends``) the cases of each state whose route ends the run."""
        return {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "fields": list(self.fields),
            "required": list(self.required),
            "inputs": self.inputs(),
            "gates": [
                {
                    "gate": state,
                    "role": ask.role,
                    "because": ask.because,
                    "options": list(ask.options),
                    **({"waivable_by": ask.waivable_by} if ask.waivable_by else {}),
                    **({"rejection": ask.policy.rejection} if ask.policy.rejection else {}),
                }
                for state, ask in self.asks.items()
            ],
            "target": self.target,
            "nodes": {state: node.tool for state, node in self.nodes.items()},
            "asks": {state: ask.role for state, ask in self.asks.items()},
            "policies": {
                state: ask.policy.to_dict()
                for state, ask in self.asks.items()
                if not ask.policy.single
            },
            "ends": {
                state: [code for code, transition in table.items() if transition.to == END_STATE]
                for state, table in self.routes.items()
                if any(transition.to == END_STATE for transition in table.values())
            },
            "needs_signed_start": self.needs_signed_start,
        }


def _json_type(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> str:
    """A JSON Schema's type in a few words: ``string``, ``list of integer``, ``string | null``,
    ``Verdict: PASSED | FAILED``, ``any``."""
    reference = schema.get("$ref")
    if isinstance(reference, str):
        name = reference.rsplit("/", 1)[-1]
        found = definitions.get(name) or {}
        if "enum" in found:
            return f"{name}: " + " | ".join(str(value) for value in found["enum"])
        return name
    if "enum" in schema:
        return " | ".join(str(value) for value in schema["enum"])
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list):
        return " | ".join(_json_type(option, definitions) for option in alternatives)
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"list of {_json_type(items, definitions)}" if isinstance(items, dict) else "list"
    if isinstance(kind, list):
        return " | ".join(str(name) for name in kind)
    return str(kind) if kind else "any"
