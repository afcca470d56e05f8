"""A gate names the option that says no (``Ask(rejection=...)``, or its policy's)."""

from __future__ import annotations

from enum import Enum

import pytest
from pydantic import BaseModel

from lockgate import END, Ask, Edge, Quorum, Route, graph
from lockgate.errors import GraphDeclarationError
from lockgate.graphs._compile import compile_graph
from tests.graphs.test_ending_routes import Decision, pay, quote


def refund_asking(ask: Ask) -> type[BaseModel]:
    @graph(
        "declined:refund",
        "A refund a lead approves or declines.",
        start=quote,
        edges=[Edge(quote, Decision)],
        routes=[Route(Decision.APPROVE, to=pay), Route(Decision.DECLINE, to=END)],
        asks=[ask],
    )
    class Refund(BaseModel):
        order: str
        cents: int = 0
        outcome: str = ""

    return Refund


def refusal_of(ask: Ask) -> str:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(refund_asking(ask))
    return str(refused.value)


# Compiling ---------------------------------------------------------------------------------------


def test_a_gate_of_one_approver_names_its_rejection_in_its_policy() -> None:
    compiled = compile_graph(refund_asking(Ask(Decision, of="lead", rejection=Decision.DECLINE)))

    policy = compiled.asks["decision"].policy
    assert policy.single
    assert policy.rejection == "decline"
    assert policy.declines("decline") and not policy.declines("approve")


def test_a_gate_without_a_rejection_declines_nothing() -> None:
    policy = compile_graph(refund_asking(Ask(Decision, of="lead"))).asks["decision"].policy

    assert policy.rejection is None
    assert not policy.declines("decline")


def test_a_gates_rejection_is_its_panels_too() -> None:
    ask = Ask(Decision, of="lead", policy=Quorum(2, of_n=3), rejection=Decision.DECLINE)

    assert compile_graph(refund_asking(ask)).asks["decision"].policy.rejection == "decline"


def test_a_gate_and_its_policy_naming_different_rejections_is_refused() -> None:
    ask = Ask(
        Decision,
        of="lead",
        policy=Quorum(2, rejection=Decision.APPROVE),
        rejection=Decision.DECLINE,
    )

    assert refusal_of(ask) == (
        "Graph Refund: Ask(Decision) names the rejection <Decision.DECLINE: 'decline'> and its "
        "policy <Decision.APPROVE: 'approve'>: a gate has one option that says no. Name it once "
        "(rejection=)."
    )


def test_a_gate_rejection_that_is_not_one_of_its_options_is_refused() -> None:
    class Elsewhere(str, Enum):
        NO = "no"

    refused = refusal_of(Ask(Decision, of="lead", rejection=Elsewhere.NO))

    assert "Ask(Decision) whose rejection <Elsewhere.NO: 'no'> is not an option of Decision" in (
        refused
    )
