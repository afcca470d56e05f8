"""Release a payment: two officers over a threshold, each naming the invoice; a finance lead
when they take too long; the transfer itself a sub-graph the release waits on.

- ``amount`` up to 10,000: the requester's own release runs ``payment:execute`` at once.
- above it: two different officers must release it (dual), each giving a
  :class:`ReleaseEvidence` (invoice number, reason) signed with the answer; neither the
  requester nor anyone who drove the work may be one of them. Unanswered for 48 hours, the gate
  escalates to a finance lead, who decides alone. A finance lead may also waive it, with a
  reason.
- ``payment:execute`` transfers the money (``payment:send``) as whoever released it, and its
  outcome routes the release: ``sent`` records it, ``bounced`` chases the payee.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, Field

from lockgate import DUAL, Ask, Because, Deadline, Route, Subgraph, Target, graph, tool

THRESHOLD = 10_000
"""Payments above this need two officers."""


class Size(str, Enum):
    WITHIN = "within"
    OVER = "over"


class Release(str, Enum):
    RELEASE = "release"
    REJECT = "reject"


class Executed(str, Enum):
    SENT = "sent"
    BOUNCED = "bounced"


class ReleaseEvidence(BaseModel):
    """What each officer gives with a release."""

    invoice_number: str = Field(pattern=r"^INV-[0-9]+$", description="The invoice this pays")
    reason: str = Field(min_length=5, description="Why it should be paid now")


class Assessed(BaseModel):
    size: Size


class Transferred(BaseModel):
    reference: str
    outcome: Executed


class Recorded(BaseModel):
    recorded: bool


@tool("payment:assess", "Is the amount within what one person may release?", local=True)
async def assess(amount: int) -> Assessed:
    return Assessed(size=Size.WITHIN if amount <= THRESHOLD else Size.OVER)


@tool("payment:transfer", "Transfer the money.", scopes=["payment:send"], mutating=True)
async def transfer(payee: str, amount: int, approvals: list[dict[str, Any]]) -> Transferred:
    invoices = sorted({approval["evidence"]["invoice_number"] for approval in approvals})
    reference = f"TX-{'-'.join(invoices) or 'DIRECT'}-{amount}"
    bounced = payee.lower().startswith("closed")
    return Transferred(reference=reference, outcome=Executed.BOUNCED if bounced else Executed.SENT)


@tool("payment:record", "Record the payment as paid.", mutating=True)
async def record(payee: str, reference: str) -> Recorded:
    return Recorded(recorded=True)


@tool("payment:chase", "Ask the payee for working bank details.", mutating=True)
async def chase(payee: str) -> None:
    return None


@tool("payment:decline", "Tell the requester the payment was declined.", mutating=True)
async def decline(payee: str) -> None:
    return None


@graph(
    "payment:execute",
    "Transfer a released payment and say how it went.",
    start=transfer,
)
class PaymentExecute(BaseModel):
    payee: Annotated[str, Target(), Because("Who is paid")]
    amount: int
    approvals: list[dict[str, Any]] = []
    reference: str = ""
    outcome: Executed | None = None


execute = Subgraph(PaymentExecute, outcome="outcome")


@graph(
    "payment:release",
    "Release a payment: two officers above the threshold, the transfer a sub-graph.",
    start=assess,
    routes=[
        Route(Size.WITHIN, to=execute),
        Route(Size.OVER, to=Release),
        Route(Release.RELEASE, to=execute),
        Route(Release.REJECT, to=decline),
        Route(Executed.SENT, to=record),
        Route(Executed.BOUNCED, to=chase),
    ],
    asks=[
        Ask(
            Release,
            of="officer",
            because="Payments over 10,000 are released by two officers, each naming the invoice.",
            policy=DUAL,
            evidence={Release.RELEASE: ReleaseEvidence},
            evidence_into="approvals",
            deadline=Deadline(timedelta(hours=48), escalate_to="finance_lead"),
            waivable_by="finance_lead",
        )
    ],
)
class PaymentRelease(BaseModel):
    payee: Annotated[str, Target(), Because("Who is paid")]
    amount: Annotated[int, Because("How much")]
    size: Size | None = None
    approvals: list[dict[str, Any]] = []
    reference: str = ""
    recorded: bool = False


TOOLS: list[Callable[..., Any]] = [assess, transfer, record, chase, decline]
GRAPHS = [PaymentRelease]
