"""A hand-written Temporal workflow that asks lockgate's gates and calls its tools: a refund,
read as the requester, approved by a support lead, issued as that lead, and closed by a second
lead (the first one made the refund, so may not close it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

from temporalio import workflow

from lockgate import Ask, Param, ToolResult, call_tool, gate, tool


class Refund(str, Enum):
    ISSUE = "issue"
    DECLINE = "decline"


class Closure(str, Enum):
    CLOSE = "close"
    REOPEN = "reopen"


@tool("tickets:read", "Read a support ticket", scopes=["tickets:read"], local=True)
def read_ticket(ticket: Annotated[int, Param("The ticket number")]) -> ToolResult:
    return ToolResult.ok({"ticket": ticket, "customer": "c-7", "paid": 250})


@tool("refunds:issue", "Refund a customer", scopes=["refunds:issue"], mutating=True)
def issue_refund(
    ticket: Annotated[int, Param("The ticket number")],
    amount: Annotated[int, Param("The amount, in whole units")],
) -> ToolResult:
    return ToolResult.ok({"refunded": amount, "ticket": ticket})


OWN_TOOLS: list[Callable[..., Any]] = [read_ticket, issue_refund]


@dataclass
class RefundRequest:
    ticket: int
    amount: int


@workflow.defn(name="support:refund")
class RefundWorkflow:
    @workflow.run
    async def run(self, request: RefundRequest) -> dict[str, Any]:
        ticket = await call_tool(read_ticket, {"ticket": request.ticket})
        if not ticket.success:
            assert ticket.error is not None
            return {"outcome": "refused", "code": ticket.error.code, "why": ticket.error.message}
        decided = await gate(
            Ask(Refund, of="support-lead", because="A refund needs a support lead."),
            subject={"ticket": request.ticket, "amount": request.amount},
            leads_to={Refund.ISSUE: issue_refund},
        )
        if decided.choice is Refund.DECLINE:
            return {"outcome": "declined", "by": decided.by["actor"]}
        refund = await call_tool(issue_refund, {"ticket": request.ticket, "amount": request.amount})
        closed = await gate(
            Ask(Closure, of="support-lead", because="Someone else checks the refund."),
            subject={"ticket": request.ticket, "refunded": refund.data},
        )
        return {
            "outcome": "refunded" if refund.success else "refund failed",
            "approved_by": decided.by["actor"],
            "closed_by": closed.by["actor"],
            "closure": closed.choice.value,
        }


@workflow.defn(name="support:lookup")
class LookupWorkflow:
    """Reads a ticket and returns a sentence, not a dict: lockgate still shows the run."""

    @workflow.run
    async def run(self, ticket: int) -> str:
        found = await call_tool(read_ticket, {"ticket": ticket})
        return f"ticket {ticket}: {found.data['customer'] if found.success else found.code}"


@workflow.defn(name="support:lookup-continued")
class ContinuedLookup:
    """Reads a ticket, then continues as new once and reads it again: what each run read as."""

    @workflow.run
    async def run(self, ticket: int, read_before: str | None = None) -> list[str | None]:
        found = await call_tool(read_ticket, {"ticket": ticket})
        read_as = found.code or "read"
        if read_before is None:
            workflow.continue_as_new(args=[ticket, read_as])
        return [read_before, read_as]


@workflow.defn(name="support:gate-then-continue")
class GateThenContinue:
    """Asks a support lead, then continues as new with the answer: what the next run starts
    with in its memo."""

    @workflow.run
    async def run(self, ticket: int, decided: str | None = None) -> str | None:
        if decided is None:
            decision = await gate(
                Ask(Refund, of="support-lead", because="A refund needs a support lead."),
                subject={"ticket": ticket},
            )
            workflow.continue_as_new(args=[ticket, decision.choice.value])
        return decided


@workflow.defn(name="support:misdeclared")
class MisdeclaredGateWorkflow:
    """Asks a gate whose options are no enum: a mistake in the workflow's own code."""

    @workflow.run
    async def run(self) -> str:
        decided = await gate(Ask("issue or decline", of="support-lead"))  # type: ignore[arg-type]
        return str(decided.choice)


@workflow.defn(name="support:goodwill")
class GoodwillWorkflow:
    """A goodwill refund: a lead approves it first, the approver issues it, and a second lead
    closes it. Nothing before its first gate needs anyone, so an unsigned start reaches it."""

    @workflow.run
    async def run(self, request: RefundRequest) -> dict[str, Any]:
        decided = await gate(
            Ask(Refund, of="support-lead", because="Goodwill needs a support lead."),
            subject={"ticket": request.ticket, "amount": request.amount},
            leads_to={Refund.ISSUE: issue_refund},
        )
        if decided.choice is Refund.DECLINE:
            return {"outcome": "declined", "by": decided.by["actor"]}
        refund = await call_tool(issue_refund, {"ticket": request.ticket, "amount": request.amount})
        closed = await gate(
            Ask(Closure, of="support-lead", because="Someone else checks the refund."),
            subject={"ticket": request.ticket, "refunded": refund.data},
        )
        return {
            "outcome": "refunded" if refund.success else "refund failed",
            "approved_by": decided.by["actor"],
            "closed_by": closed.by["actor"],
        }
