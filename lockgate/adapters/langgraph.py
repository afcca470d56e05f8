"""LangGraph on Temporal's LangGraph plugin, with lockgate's verified gates and governed tools.

A node asks a person with :func:`ask_gate` (LangGraph's own ``interrupt()``, with a value that
names a lockgate gate); the workflow runs the graph with :func:`run_graph`, which answers each
such interrupt with a lockgate gate (:func:`lockgate.gate`: a verified approver of the
role, neither the requester nor a maker, who may run what the answer leads to), and resumes the
graph with the decision. Without it, an interrupt on Temporal waits for an update anyone may
send. :func:`governed_tools` offers lockgate tools as LangChain tools for nodes that run in the
workflow (``execute_in: "workflow"``), named as model providers accept them (``tickets:read``
is ``tickets__read``): each call goes through lockgate's pipeline as the run's driver, and a
refusal comes back as the tool's error message.

Needs ``lockgate[langgraph]`` (``temporalio-langgraph``) and Python 3.11 or later, where
LangGraph's interrupts work on Temporal.

Example::

    def approve(state):
        decision = ask_gate("refund", {"ticket": state["ticket"], "amount": state["amount"]})
        return {"approved": decision["choice"] == "issue"}

    @workflow.defn
    class SupportAgent:
        @workflow.run
        async def run(self, request):
            app = temporalio.langgraph.graph("support").compile(checkpointer=InMemorySaver())
            return await run_graph(app, request, gates={"refund": Ask(Refund, of="lead")})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from lockgate.graphs._declare import Ask
from lockgate.tools._tool import definition_of
from lockgate.tools._tool_names import model_tool_name
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._own_workflows import call_tool, gate

try:
    with workflow.unsafe.imports_passed_through():
        from langchain_core.tools import StructuredTool, ToolException
        from langgraph.types import Command, interrupt
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "lockgate.adapters.langgraph needs LangGraph and Temporal's LangGraph plugin: "
        "pip install 'lockgate[langgraph]'"
    ) from missing

__all__ = ["GATE_KEY", "ask_gate", "governed_tools", "run_graph"]

GATE_KEY = "lockgate_gate"
"""The key of an interrupt's value that names the lockgate gate answering it."""


def ask_gate(name: str, subject: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Inside a LangGraph node: pauses the graph until lockgate's gate ``name`` is decided.

    Args:
        name: The gate, as :func:`run_graph`'s ``gates`` names it.
        subject: What the approver is shown and approves (JSON data).

    Returns:
        The decision: ``{choice, by, evidence, waiver}`` (``choice`` the option's value).
    """
    decided: dict[str, Any] = interrupt({GATE_KEY: name, "subject": dict(subject or {})})
    return decided


async def run_graph(
    app: Any,
    inputs: Any,
    config: Mapping[str, Any] | None = None,
    *,
    gates: Mapping[str, Ask],
    leads_to: Mapping[str, Mapping[Any, str | Callable[..., Any]]] | None = None,
) -> Any:
    """Runs a compiled LangGraph graph in this workflow, answering its interrupts with lockgate.

    Args:
        app: The graph, compiled with a checkpointer (LangGraph resumes an interrupted graph
            from it).
        inputs: The graph's input.
        config: The graph's config; its ``thread_id`` defaults to the workflow id.
        gates: Each gate a node may ask with :func:`ask_gate`, by name.
        leads_to: For a gate's options that lead to a tool, the tool (see
            :func:`lockgate.gate`).

    Returns:
        The graph's final state.

    Raises:
        ApplicationError: A node interrupted with a value that names no gate of ``gates`` (the
            run fails with that sentence: nothing here could answer it).
    """
    configured = dict(config or {})
    configurable = dict(configured.get("configurable") or {})
    configurable.setdefault("thread_id", workflow.info().workflow_id)
    configured["configurable"] = configurable
    payload = inputs
    while True:
        state = await app.ainvoke(payload, configured)
        interrupts = state.get("__interrupt__") if isinstance(state, Mapping) else None
        if not interrupts:
            return state
        answers = {}
        for asked in interrupts:
            answers[asked.id] = await _answer(asked.value, gates, leads_to or {})
        payload = Command(resume=answers)


async def _answer(
    value: Any,
    gates: Mapping[str, Ask],
    leads_to: Mapping[str, Mapping[Any, str | Callable[..., Any]]],
) -> dict[str, Any]:
    name = value.get(GATE_KEY) if isinstance(value, Mapping) else None
    if not isinstance(name, str) or name not in gates:
        raise ApplicationError(
            f"A node interrupted with {str(value)[:200]!r}, which names no gate of this "
            f"workflow ({', '.join(sorted(gates)) or 'none declared'}): ask with lockgate's "
            "ask_gate(name, subject) and declare the gate in run_graph(gates=...).",
            type=ErrorCode.NOT_FOUND.value,
            non_retryable=True,
        )
    decided = await gate(gates[name], subject=value.get("subject"), leads_to=leads_to.get(name))
    return {
        "choice": decided.choice.value,
        "by": decided.by,
        "evidence": decided.evidence,
        "waiver": decided.waiver,
    }


def governed_tools(*tools: str | Callable[..., Any]) -> list[StructuredTool]:
    """lockgate tools as LangChain tools, for nodes that run in the workflow.

    Each call is :func:`lockgate.call_tool` as the run's driver (validation, scopes,
    confirmation, rate limits, audit); a refusal or failure is the tool's error message
    (``CODE: sentence``), which LangGraph hands the model like any tool error.
    """
    return [_governed(tool) for tool in tools]


def _governed(tool: str | Callable[..., Any]) -> StructuredTool:
    definition = definition_of(tool) if not isinstance(tool, str) else None
    name = definition.name if definition is not None else str(tool)

    async def call(**arguments: Any) -> Any:
        result = await call_tool(name, arguments)
        if not result.success:
            error = result.error
            raise ToolException(f"{error.code}: {error.message}" if error else "refused")
        return result.data

    return StructuredTool.from_function(
        coroutine=call,
        name=model_tool_name(name),
        description=definition.description if definition is not None else name,
        args_schema=definition.input_schema if definition is not None else {"type": "object"},
        handle_tool_error=True,
    )
