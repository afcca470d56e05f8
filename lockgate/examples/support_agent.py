"""A support agent on LangGraph, run by Temporal's LangGraph plugin, governed by lockgate.

The agent reads the ticket (``tickets:read``, a cheap tool that changes nothing) and refunds the
customer (``refunds:issue``, mutating). A refund up to :data:`THRESHOLD` is the agent's own to
issue; above it, the graph asks (LangGraph's ``interrupt()``, through
:func:`~lockgate.adapters.langgraph.ask_gate`) and lockgate's gate answers: a support lead's
verified approval, never the agent's (it started the run) and never someone who may not
refund. The refund then runs as the lead who approved it. Every tool call is lockgate's, as
the run's driver, and a refusal comes back as the tool's error.

Needs ``lockgate[langgraph]`` and Python 3.11 or later.

Run it on a worker with both plugins::

    Worker(client, task_queue="support", workflows=[SupportAgent],
           plugins=[LangGraphPlugin(graphs={GRAPH: support_graph()}),
                    LockgatePlugin(tools=TOOLS, directory="directory.toml")])
    await GraphClient(client, "support", signer=agent).start_workflow(
        SupportAgent.run, RefundRequest(ticket=42, amount=250), id="refund-42")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, TypedDict

from temporalio import workflow

from lockgate import Ask, Param, ToolResult, tool

with workflow.unsafe.imports_passed_through():
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from temporalio.langgraph import graph as langgraph_graph

    from lockgate.adapters.langgraph import ask_gate, governed_tools, run_graph

THRESHOLD = 100
"""Refunds above this need a support lead."""

GRAPH = "support:agent"
"""The LangGraph graph's name in Temporal's LangGraph plugin."""


class Refund(str, Enum):
    ISSUE = "issue"
    DECLINE = "decline"


@tool("tickets:read", "Read a support ticket", scopes=["tickets:read"], local=True)
def read_ticket(ticket: Annotated[int, Param("The ticket number")]) -> ToolResult:
    return ToolResult.ok({"ticket": ticket, "customer": f"customer-{ticket}", "paid": 900})


@tool("refunds:issue", "Refund a customer", scopes=["refunds:issue"], mutating=True)
def issue_refund(
    ticket: Annotated[int, Param("The ticket number")],
    amount: Annotated[int, Param("The amount, in whole units", clamp=(1, 10_000))],
) -> ToolResult:
    return ToolResult.ok({"ticket": ticket, "refunded": amount})


TOOLS: list[Callable[..., Any]] = [read_ticket, issue_refund]

REFUND_GATE = Ask(Refund, of="support-lead", because=f"Refunds above {THRESHOLD} need a lead.")


class SupportState(TypedDict, total=False):
    ticket: int
    amount: int
    customer: str
    decision: dict[str, Any]
    outcome: str
    refunded: int


async def read(state: SupportState) -> dict[str, Any]:
    (reader,) = governed_tools(read_ticket)
    found = await reader.ainvoke({"ticket": state["ticket"]})
    if isinstance(found, str):  # the tool's error: "CODE: sentence"
        return {"outcome": f"could not read the ticket: {found}"}
    return {"customer": found["customer"]}


def approve(state: SupportState) -> dict[str, Any]:
    return {
        "decision": ask_gate(
            "refund",
            {"ticket": state["ticket"], "customer": state["customer"], "amount": state["amount"]},
        )
    }


async def refund(state: SupportState) -> dict[str, Any]:
    decision = state.get("decision")
    if decision is not None and decision["choice"] != Refund.ISSUE.value:
        return {"outcome": f"declined by {decision['by']['actor']}"}
    (issuer,) = governed_tools(issue_refund)
    done = await issuer.ainvoke({"ticket": state["ticket"], "amount": state["amount"]})
    if isinstance(done, str):
        return {"outcome": f"refund refused: {done}"}
    return {"outcome": "refunded", "refunded": done["refunded"]}


# Routers run in the workflow, where LangGraph would hand a plain function to a thread executor
# (which a workflow has not): they are coroutines.
async def after_read(state: SupportState) -> str:
    if state.get("outcome"):
        return END
    return "approve" if state["amount"] > THRESHOLD else "refund"


def support_graph() -> StateGraph[Any, Any, Any, Any]:
    """The agent's graph. Nodes that call lockgate tools run in the workflow (lockgate makes
    each call its own activity); the node that asks runs there too."""
    in_workflow = {"execute_in": "workflow"}
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(SupportState)
    builder.add_node("read", read, metadata=in_workflow)
    builder.add_node("approve", approve, metadata=in_workflow)
    builder.add_node("refund", refund, metadata=in_workflow)
    builder.add_edge(START, "read")
    builder.add_conditional_edges("read", after_read, ["approve", "refund", END])
    builder.add_edge("approve", "refund")
    builder.add_edge("refund", END)
    return builder


@dataclass
class RefundRequest:
    ticket: int
    amount: int


@workflow.defn(name="support:agent")
class SupportAgent:
    @workflow.run
    async def run(self, request: RefundRequest) -> dict[str, Any]:
        app = langgraph_graph(GRAPH).compile(checkpointer=InMemorySaver())
        state = await run_graph(
            app,
            {"ticket": request.ticket, "amount": request.amount},
            gates={"refund": REFUND_GATE},
            leads_to={"refund": {Refund.ISSUE: issue_refund}},
        )
        return {key: state.get(key) for key in ("outcome", "refunded", "decision")}


__all__ = [
    "GRAPH",
    "REFUND_GATE",
    "THRESHOLD",
    "TOOLS",
    "Refund",
    "RefundRequest",
    "SupportAgent",
    "SupportState",
    "issue_refund",
    "read_ticket",
    "support_graph",
]
