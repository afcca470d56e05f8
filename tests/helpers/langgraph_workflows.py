"""A LangGraph graph on Temporal's LangGraph plugin whose interrupts lockgate's gates answer:
a refund read by the requester, approved by a support lead, issued as that lead, and closed by a
second lead (the first one made the refund, so may not close it)."""

from __future__ import annotations

from enum import Enum
from typing import Any, TypedDict

from temporalio import workflow

from lockgate import Ask

with workflow.unsafe.imports_passed_through():
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from temporalio.langgraph import graph as langgraph_graph

    from lockgate.adapters.langgraph import ask_gate, governed_tools, run_graph
    from tests.helpers.own_workflows import RefundRequest, issue_refund, read_ticket

GRAPH = "tests:langgraph-refund"


class Refund(str, Enum):
    ISSUE = "issue"
    DECLINE = "decline"


class Closure(str, Enum):
    CLOSE = "close"
    REOPEN = "reopen"


GATES = {
    "refund": Ask(Refund, of="support-lead", because="A refund needs a support lead."),
    "closure": Ask(Closure, of="support-lead", because="Someone else checks the refund."),
}


class RefundState(TypedDict, total=False):
    ticket: int
    amount: int
    customer: str
    read_error: str
    decision: dict[str, Any]
    refunded: Any
    refund_error: str
    closure: dict[str, Any]


async def read(state: RefundState) -> dict[str, Any]:
    (reader,) = governed_tools(read_ticket)
    found = await reader.ainvoke({"ticket": state["ticket"]})
    if isinstance(found, str):  # the tool's error: "CODE: sentence"
        return {"read_error": found}
    return {"customer": found["customer"]}


def approve(state: RefundState) -> dict[str, Any]:
    return {"decision": ask_gate("refund", {"ticket": state["ticket"], "amount": state["amount"]})}


async def refund(state: RefundState) -> dict[str, Any]:
    (issuer,) = governed_tools(issue_refund)
    done = await issuer.ainvoke({"ticket": state["ticket"], "amount": state["amount"]})
    if isinstance(done, str):
        return {"refund_error": done}
    return {"refunded": done["refunded"]}


def close(state: RefundState) -> dict[str, Any]:
    return {
        "closure": ask_gate("closure", {"ticket": state["ticket"], "refunded": state["refunded"]})
    }


# Routing runs in the workflow too, where LangGraph would hand a plain function to a thread
# executor (which a workflow has not): routers are coroutines.
async def after_read(state: RefundState) -> str:
    return END if state.get("read_error") else "approve"


async def after_approve(state: RefundState) -> str:
    return "refund" if state["decision"]["choice"] == Refund.ISSUE.value else END


async def after_refund(state: RefundState) -> str:
    return END if state.get("refund_error") else "close"


def refund_graph() -> StateGraph[Any, Any, Any, Any]:
    in_workflow = {"execute_in": "workflow"}
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(RefundState)
    for name, node in (("read", read), ("approve", approve), ("refund", refund), ("close", close)):
        builder.add_node(name, node, metadata=in_workflow)
    builder.add_edge(START, "read")
    builder.add_conditional_edges("read", after_read, ["approve", END])
    builder.add_conditional_edges("approve", after_approve, ["refund", END])
    builder.add_conditional_edges("refund", after_refund, ["close", END])
    builder.add_edge("close", END)
    return builder


@workflow.defn(name="tests:langgraph-refund")
class LangGraphRefund:
    @workflow.run
    async def run(self, request: RefundRequest) -> dict[str, Any]:
        app = langgraph_graph(GRAPH).compile(checkpointer=InMemorySaver())
        state = await run_graph(
            app,
            {"ticket": request.ticket, "amount": request.amount},
            gates=GATES,
            leads_to={"refund": {Refund.ISSUE: issue_refund}},
        )
        keys = ("read_error", "decision", "refunded", "refund_error", "closure")
        return {key: state[key] for key in keys if key in state}
