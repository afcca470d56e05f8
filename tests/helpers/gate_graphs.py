"""Graphs the gate-rule tests declare: approval policies, and who is who around them.

A payment is prepared by its requester, checked by a clerk (a single gate), and then released
or rejected at an officers' gate whose policy each graph varies. The clerk who answered the
check drives what follows, so they are a maker of the work the officers review.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, Field

from lockgate import DUAL, Ask, Deadline, Dual, Edge, Quorum, Route, Target, graph, tool
from lockgate.testing import Identities

PAYMENT = {"payee": "Acme Ltd", "amount": 25_000}


class Checked(str, Enum):
    CHECKED = "checked"


class Release(str, Enum):
    RELEASE = "release"
    REJECT = "reject"


class Prepared(BaseModel):
    memo: str


class Sent(BaseModel):
    sent: bool


@tool("pay:prepare", "Prepare the payment.", local=True)
async def prepare(payee: str, amount: int) -> Prepared:
    return Prepared(memo=f"{amount} to {payee}")


@tool("pay:draft", "Draft the transfer order the officers review.", local=True)
async def draft(memo: str) -> Prepared:
    return Prepared(memo=f"order: {memo}")


@tool("pay:send", "Send the payment.", scopes=["payment:send"], mutating=True)
async def send(memo: str) -> Sent:
    return Sent(sent=True)


@tool("pay:cancel", "Cancel the payment.", mutating=True)
async def cancel(memo: str) -> None:
    return None


class Payment(BaseModel):
    payee: Annotated[str, Target()]
    amount: int
    memo: str = ""
    sent: bool = False


def payment_graph(name: str, policy: object, **release: Any) -> type[Payment]:
    """A payment graph named ``name`` whose officers' gate has ``policy`` (and ``release``
    declares the rest of it)."""

    @graph(
        name,
        "Prepare a payment, have a clerk check it, and the officers release it.",
        start=prepare,
        edges=[Edge(prepare, Checked), Edge(draft, Release)],
        routes=[
            Route(Checked.CHECKED, to=draft),
            Route(Release.RELEASE, to=send),
            Route(Release.REJECT, to=cancel),
        ],
        asks=[
            Ask(Checked, of="clerk", because="A clerk checks the payee."),
            Ask(
                Release,
                of="officer",
                because="Officers release payments.",
                policy=policy,  # type: ignore[arg-type]
                **release,
            ),
        ],
    )
    class PaymentRun(Payment):
        pass

    PaymentRun.__name__ = PaymentRun.__qualname__ = name.replace(":", "_").title()
    return PaymentRun


DualPayment = payment_graph("pay:dual", DUAL)
DualRejectingPayment = payment_graph(
    "pay:dual-veto", Dual(Release.REJECT, any_rejection_rejects=True)
)
PanelPayment = payment_graph("pay:panel", Quorum(2, of_n=2, rejection=Release.REJECT))
QuorumVetoPayment = payment_graph(
    "pay:quorum-veto", Quorum(3, rejection=Release.REJECT, any_rejection_rejects=True)
)
WaivablePayment = payment_graph("pay:waivable", DUAL, waivable_by="finance_lead")
MfaPayment = payment_graph("pay:mfa", DUAL, mfa=("mfa",))
"""Its officers, when their identity provider signs their answers, signed in with MFA."""
POLICY_GRAPHS = [DualPayment, DualRejectingPayment, PanelPayment, QuorumVetoPayment]
WAIVER_GRAPHS = [DualPayment, WaivablePayment]
TWO_DAYS = timedelta(hours=48)
EscalatingPayment = payment_graph(
    "pay:escalating", DUAL, deadline=Deadline(TWO_DAYS, escalate_to="finance_lead")
)
LapsingPayment = payment_graph(
    "pay:lapsing", DUAL, deadline=Deadline(TWO_DAYS, take=Release.REJECT)
)
DEADLINE_GRAPHS = [EscalatingPayment, LapsingPayment]
POLICY_TOOLS: list[Callable[..., Any]] = [prepare, draft, send, cancel]
GOOD_EVIDENCE = {"invoice_number": "INV-1042", "reason": "Goods received in full"}


class ReleaseEvidence(BaseModel):
    """What an officer gives with a release."""

    invoice_number: str = Field(pattern=r"^INV-[0-9]+$", description="The invoice this pays")
    reason: str = Field(min_length=5, description="Why it should be paid")


class SentAgainst(BaseModel):
    sent: bool
    paid_invoices: str


@tool("pay:send-against", "Send the payment against the invoices the officers named.",
      scopes=["payment:send"], mutating=True)  # fmt: skip
async def send_against(memo: str, approvals: list[dict[str, Any]]) -> SentAgainst:
    invoices = sorted({approval["evidence"]["invoice_number"] for approval in approvals})
    return SentAgainst(sent=True, paid_invoices=", ".join(invoices))


@graph(
    "pay:evidenced",
    "Officers release a payment, each naming the invoice and why.",
    start=prepare,
    edges=[Edge(prepare, Checked), Edge(draft, Release)],
    routes=[
        Route(Checked.CHECKED, to=draft),
        Route(Release.RELEASE, to=send_against),
        Route(Release.REJECT, to=cancel),
    ],
    asks=[
        Ask(Checked, of="clerk", because="A clerk checks the payee."),
        Ask(
            Release,
            of="officer",
            because="Officers release payments against an invoice.",
            policy=DUAL,
            evidence={Release.RELEASE: ReleaseEvidence},
            evidence_into="approvals",
        ),
    ],
)
class EvidencedPayment(Payment):
    approvals: list[dict[str, Any]] = []
    paid_invoices: str = ""


EVIDENCE_GRAPHS = [EvidencedPayment]


def payment_people() -> Identities:
    """ada asks (and is an officer and a finance lead too), cal checks (a clerk, and an
    officer), olga, otto and owen are officers who may send, pete is an officer who may not
    send, fran is a finance lead who may send, nora holds nothing."""
    officer_who_sends = {"roles": ["officer"], "scopes": ["payment:send"]}
    return Identities(
        {
            "ada": {"roles": ["officer", "finance_lead"], "scopes": ["payment:send"]},
            "cal": {"roles": ["clerk", "officer"], "scopes": ["payment:send"]},
            "olga": officer_who_sends,
            "otto": officer_who_sends,
            "owen": officer_who_sends,
            "pete": {"roles": ["officer"]},
            "fran": {"roles": ["finance_lead"], "scopes": ["payment:send"]},
            "nora": {},
        }
    )
