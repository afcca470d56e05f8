"""Compiling an agent step: a node where a model works with the node's tools.

Everything doubtful is refused by name, as the rest of a graph is: a tool that is not one, a
field the graph does not declare, a budget that counts nothing or opens no declared gate, a
model given as an object instead of by name.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from lockgate.graphs._compiled import CompiledAgent, CompiledGraph, CompiledNode
from lockgate.graphs._declare import GraphDeclarationError
from lockgate.graphs._declare_agents import AgentStep, ModelBudget
from lockgate.tools._tool import ToolDefinition, definition_of, is_tool
from lockgate.tools._tool_names import model_tool_name

__all__ = ["MAX_MODEL_TOOL_NAME", "agent_tools", "check_models_given", "compile_agent"]

MAX_MODEL_TOOL_NAME = 64
"""Model providers take tool names of at most 64 characters."""


def compile_agent(
    where: str,
    declared: AgentStep,
    model_of_fields: type[BaseModel],
    target: Callable[[object, str], str],
) -> CompiledNode:
    """The node running ``declared``.

    Args:
        where: ``Graph <class name>``, which every refusal starts with.
        declared: The agent step as declared.
        model_of_fields: The graph's pydantic model, whose fields are the graph's.
        target: Resolves the budget's ``then_ask`` to its gate's state (refusing an enum that
            no Ask offers).
    """
    name = declared.name
    if not isinstance(name, str) or not name.strip(":").strip():
        raise GraphDeclarationError(
            f"{where}: an AgentStep is named {name!r}; name it as a tool is named "
            "('support:triage')."
        )
    label = f"{where}: AgentStep('{name}')"
    state = name.rsplit(":", 1)[-1]
    model = declared.model
    if not isinstance(model, str) or not model.strip():
        raise GraphDeclarationError(
            f"{label} names its model as {type(model).__name__}, not by name: a model is a "
            "client with credentials, which cannot cross Temporal. Name it (model='support-"
            "model') and give the worker the model under that name: "
            "LockgatePlugin(models={'support-model': <a pydantic_ai Model>})."
        )
    fields = model_of_fields.model_fields
    prompt_from = declared.prompt_from
    if prompt_from is None or prompt_from not in fields:
        raise GraphDeclarationError(
            f"{label} reads its prompt from {_named(prompt_from)}, which is not a field of "
            "this graph: declare it, and name it in prompt_from=."
        )
    output_into = declared.output_into
    if output_into is None or output_into not in fields:
        raise GraphDeclarationError(
            f"{label} writes its answer into {_named(output_into)}, which is not a field of "
            "this graph: declare it (a str), and name it in output_into=, or the answer would "
            "be dropped and nobody would notice."
        )
    if not _takes_text(fields[output_into].annotation):
        raise GraphDeclarationError(
            f"{label} writes its answer into '{output_into}', which does not take text; type "
            "it `str`."
        )
    if not isinstance(declared.timeout, (int, float)) or declared.timeout <= 0:
        raise GraphDeclarationError(
            f"{label} declares timeout={declared.timeout!r}; give the seconds one model "
            "request may take."
        )
    requests, tokens, then_ask = _budget(label, declared.budget, target)
    return CompiledNode(
        state=state,
        tool=name,
        definition=None,
        reads=(prompt_from,),
        writes=(output_into,),
        decides_on=None,
        route_enum=None,
        route_cases=MappingProxyType({}),
        needs=(),
        agent=CompiledAgent(
            model=model,
            instructions=declared.instructions or "",
            tools=MappingProxyType(_tools(label, declared)),
            prompt_from=prompt_from,
            output_into=output_into,
            requests=requests,
            tokens=tokens,
            then_ask=then_ask,
            timeout_seconds=float(declared.timeout),
        ),
    )


def _named(field: object) -> str:
    return "no field" if field is None else f"'{field}'"


def _takes_text(annotation: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python("text")
    except ValidationError:
        return False
    except Exception:  # an annotation pydantic cannot build a validator for
        return False
    return True


def _tools(label: str, declared: AgentStep) -> dict[str, ToolDefinition]:
    offered: dict[str, ToolDefinition] = {}
    for candidate in declared.tools:
        if not callable(candidate) or not is_tool(candidate):
            shown = getattr(candidate, "__qualname__", repr(candidate))
            raise GraphDeclarationError(
                f"{label} offers its model {shown}, which is not a tool: decorate it with "
                "@tool(name, description), so that every call the model asks for is governed."
            )
        definition = definition_of(candidate)
        if definition.confirm:
            raise GraphDeclarationError(
                f"{label} offers its model '{definition.name}', which declares confirm=True: a "
                "model cannot give the consent it asks for. Make it a node behind an Ask, or "
                "drop confirm."
            )
        offered_as = model_tool_name(definition.name)
        if len(offered_as) > MAX_MODEL_TOOL_NAME:
            raise GraphDeclarationError(
                f"{label} offers its model '{definition.name}', whose name ({offered_as}) is "
                f"longer than the {MAX_MODEL_TOOL_NAME} characters model providers take; "
                "shorten it."
            )
        other = offered.get(offered_as)
        if other is not None and other.handler is not definition.handler:
            raise GraphDeclarationError(
                f"{label} offers its model two tools under one name, '{offered_as}' "
                f"('{other.name}' and '{definition.name}'); rename one."
            )
        offered[offered_as] = definition
    return offered


def _budget(
    label: str, budget: object, target: Callable[[object, str], str]
) -> tuple[int | None, int | None, str]:
    if budget is None:
        raise GraphDeclarationError(
            f"{label} declares no budget: an agent step could call its model for ever. Declare "
            "budget=ModelBudget(requests=N, then_ask=<an options enum an Ask offers>)."
        )
    if not isinstance(budget, ModelBudget):
        raise GraphDeclarationError(
            f"{label} declares budget={budget!r}; use ModelBudget(requests=..., then_ask=...)."
        )
    counts: dict[str, int | None] = {"requests": budget.requests, "tokens": budget.tokens}
    for what, count in counts.items():
        if count is None:
            continue
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise GraphDeclarationError(
                f"{label} declares a budget of {what}={count!r}; give a positive count."
            )
    if budget.requests is None and budget.tokens is None:
        raise GraphDeclarationError(
            f"{label} declares a budget that counts nothing: give requests=, tokens=, or both."
        )
    options = budget.then_ask
    if options is None:
        raise GraphDeclarationError(
            f"{label} declares a budget but no then_ask. A budget that simply stops leaves the "
            "run somewhere nobody chose: name the options a person is offered when it is spent "
            "(an enum an Ask offers)."
        )
    if not (isinstance(options, type) and issubclass(options, enum.Enum)):
        raise GraphDeclarationError(
            f"{label} declares then_ask={options!r}, which is not an options enum; name the "
            "enum an Ask offers."
        )
    return budget.requests, budget.tokens, target(options, "then_ask of an AgentStep's budget")


def agent_tools(nodes: Mapping[str, CompiledNode]) -> list[ToolDefinition]:
    """Every tool the agent steps among ``nodes`` offer their models, once each."""
    found: dict[str, ToolDefinition] = {}
    for node in nodes.values():
        if node.agent is not None:
            for definition in node.agent.tools.values():
                found.setdefault(definition.name, definition)
    return list(found.values())


def check_models_given(graph: CompiledGraph, models: Mapping[str, object]) -> None:
    """Refuses, when a worker is built, a graph whose agent step names a model the worker was
    not given: its runs would park at the step.

    Raises:
        GraphDeclarationError: Naming the graph, the step and the model.
    """
    for node in graph.nodes.values():
        if node.agent is not None and node.agent.model not in models:
            given = ", ".join(sorted(models)) or "none"
            raise GraphDeclarationError(
                f"Graph '{graph.name}': its agent step '{node.state}' ({node.tool}) names the "
                f"model '{node.agent.model}', which this worker was not given (it has: "
                f"{given}). Give it: LockgatePlugin(models={{'{node.agent.model}': <a "
                "pydantic_ai Model>})."
            )
