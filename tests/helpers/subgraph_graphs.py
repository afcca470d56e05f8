"""Graphs the sub-graph tests declare: a payment whose release runs ``payment:execute``, a child
graph with a treasurer's gate inside, and graphs that nest wrongly.

``pay:released`` asks an officer; releasing runs ``payment:execute`` as a child workflow, whose
outcome (``sent`` or ``held``) routes the parent to ``notify`` or ``chase``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel

from lockgate import Ask, Edge, Route, Subgraph, Target, graph, tool
from lockgate.testing import Identities
from tests.helpers.gate_graphs import Release, cancel, prepare


class Executed(str, Enum):
    SENT = "sent"
    HELD = "held"


class Confirm(str, Enum):
    SEND = "send"
    HOLD = "hold"


class Staged(BaseModel):
    memo: str


class Outcome(BaseModel):
    outcome: Executed


class Notified(BaseModel):
    notified: bool


@tool("execute:stage", "Stage the transfer.", local=True)
async def stage(memo: str) -> Staged:
    return Staged(memo=f"staged: {memo}")


@tool("execute:transfer", "Transfer the money.", scopes=["payment:send"], mutating=True)
async def transfer(memo: str) -> Outcome:
    return Outcome(outcome=Executed.SENT)


@tool("execute:hold", "Hold the transfer.", mutating=True)
async def hold(memo: str) -> Outcome:
    return Outcome(outcome=Executed.HELD)


@tool("pay:notify", "Tell the payee it is paid.", mutating=True)
async def notify(payee: str) -> Notified:
    return Notified(notified=True)


@tool("pay:chase", "Chase why the transfer was held.", mutating=True)
async def chase(payee: str) -> None:
    return None


@graph(
    "payment:execute",
    "Stage a transfer; a treasurer sends it or holds it.",
    start=stage,
    edges=[Edge(stage, Confirm)],
    routes=[Route(Confirm.SEND, to=transfer), Route(Confirm.HOLD, to=hold)],
    asks=[Ask(Confirm, of="treasurer", because="A treasurer confirms every transfer.")],
)
class PaymentExecute(BaseModel):
    payee: Annotated[str, Target()]
    memo: str = ""
    outcome: Executed | None = None


execute = Subgraph(PaymentExecute, outcome="outcome")


@graph(
    "pay:released",
    "An officer releases a payment; the release runs payment:execute.",
    start=prepare,
    edges=[Edge(prepare, Release)],
    routes=[
        Route(Release.RELEASE, to=execute),
        Route(Release.REJECT, to=cancel),
        Route(Executed.SENT, to=notify),
        Route(Executed.HELD, to=chase),
    ],
    asks=[Ask(Release, of="officer", because="Officers release payments.")],
)
class ReleasedPayment(BaseModel):
    payee: Annotated[str, Target()]
    amount: int
    memo: str = ""
    notified: bool = False


SUBGRAPH_GRAPHS = [ReleasedPayment]
SUBGRAPH_TOOLS: list[Callable[..., Any]] = [prepare, cancel, stage, transfer, hold, notify, chase]


def subgraph_people() -> Identities:
    """ada asks, olga is an officer, tess a treasurer who may send, nora holds nothing."""
    return Identities(
        {
            "ada": {},
            "olga": {"roles": ["officer"]},
            "tess": {"roles": ["treasurer"], "scopes": ["payment:send"]},
            "nora": {},
        }
    )
