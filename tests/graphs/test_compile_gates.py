"""The compiler refuses each doubtful declaration of a gate's rules, naming the gate and what to
declare: approval policies that could never decide or say nothing of a disagreement."""

from __future__ import annotations

import enum
from datetime import timedelta
from typing import Any

import pytest
from pydantic import Field

from lockgate import (
    DUAL,
    Ask,
    Deadline,
    Dual,
    Edge,
    LockgatePlugin,
    Quorum,
    Route,
    WorkerSecret,
    graph,
)
from lockgate.errors import GraphDeclarationError
from lockgate.graphs._compile import compile_graph
from lockgate.graphs._declare import ApprovalPolicy
from lockgate.testing import Identities
from tests.helpers.gate_graphs import (
    Checked,
    DualPayment,
    Payment,
    Release,
    ReleaseEvidence,
    cancel,
    payment_graph,
    prepare,
    send,
)


class Elsewhere(str, enum.Enum):
    NO = "no"


def refusal_of(policy: object) -> str:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(payment_graph("pay:doubtful", policy))
    return str(refused.value)


def test_a_dual_gate_compiles_with_its_policy() -> None:
    compiled = compile_graph(DualPayment)
    assert compiled.asks["release"].policy.approvals == 2
    assert compiled.asks["release"].policy.name == "dual"
    assert compiled.asks["checked"].policy.single


def test_a_quorum_larger_than_its_panel_is_refused() -> None:
    assert refusal_of(Quorum(3, of_n=2, rejection=None)) == (
        "Graph Pay_Doubtful: Ask(Release) declares a quorum policy of 3 of 2: a quorum larger "
        "than its panel can never be reached. Declare a panel (of_n) of at least 3."
    )


def test_a_quorum_of_no_one_is_refused() -> None:
    assert "of 0 approvals; it needs 1 or more" in refusal_of(Quorum(0))


def test_a_rejection_that_is_not_an_option_of_the_gate_is_refused() -> None:
    assert "whose rejection <Elsewhere.NO: 'no'> is not an option of Release" in refusal_of(
        Dual(Elsewhere.NO)
    )
    assert "is not an option of Release" in refusal_of(Dual(Checked.CHECKED))


def test_any_rejection_rejects_without_a_rejection_is_refused() -> None:
    refused = refusal_of(ApprovalPolicy("dual", 2, any_rejection_rejects=True))
    assert "any rejection rejects, but names no rejection" in refused


def test_a_panel_that_may_disagree_with_nothing_declared_for_it_is_refused() -> None:
    refused = refusal_of(Quorum(2, of_n=3))
    assert "its panel can disagree so that no option reaches 2" in refused
    assert "(rejection=...)" in refused


def test_a_policy_that_is_not_one_is_refused() -> None:
    assert "declares policy='dual'; use SINGLE, DUAL" in refusal_of("dual")


def test_a_worker_refuses_a_dual_gate_its_directory_cannot_staff() -> None:
    lonely = Identities({"olga": {"roles": ["officer"]}, "cal": {"roles": ["clerk"]}})
    with pytest.raises(GraphDeclarationError) as refused:
        LockgatePlugin(graphs=[DualPayment], directory=lonely.directory, secret=lonely.secret)
    assert str(refused.value) == (
        "Graph 'pay:dual': its gate 'release' needs 2 distinct approvers of the role 'officer' "
        "(dual), and the Directory lists 1 who hold it, so the gate could never be decided. "
        "Give the role to more people, or lower the quorum."
    )


def test_a_worker_with_an_empty_directory_judges_no_staffing() -> None:
    assert LockgatePlugin(graphs=[DualPayment], secret=WorkerSecret.generate("test")).graphs


def evidence_refusal(**ask: Any) -> str:
    @graph(
        "pay:doubtful-evidence",
        start=prepare,
        edges=[Edge(prepare, Release)],
        routes=[Route(Release.RELEASE, to=send), Route(Release.REJECT, to=cancel)],
        asks=[Ask(Release, of="officer", **ask)],
    )
    class DoubtfulEvidence(Payment):
        approvals: list[dict[str, Any]] = Field(default_factory=list)

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(DoubtfulEvidence)
    return str(refused.value)


def test_evidence_on_an_option_that_does_not_exist_is_refused() -> None:
    refused = evidence_refusal(
        evidence={Checked.CHECKED: ReleaseEvidence}, evidence_into="approvals"
    )
    assert refused == (
        "Graph DoubtfulEvidence: Ask(Release) asks for evidence on <Checked.CHECKED: 'checked'>, "
        "which is not an option of Release: key evidence= by its cases (RELEASE, REJECT)."
    )


def test_evidence_that_is_not_a_pydantic_model_is_refused() -> None:
    refused = evidence_refusal(evidence=dict, evidence_into="approvals")
    assert "asks for evidence <class 'dict'>, which is not a pydantic model" in refused


def test_evidence_nobody_receives_is_refused() -> None:
    assert "names no field it goes to" in evidence_refusal(evidence=ReleaseEvidence)
    assert "writes evidence into 'nowhere', which is not a field" in evidence_refusal(
        evidence=ReleaseEvidence, evidence_into="nowhere"
    )


def test_an_evidence_channel_without_evidence_is_refused() -> None:
    assert "asks for none; declare evidence=" in evidence_refusal(evidence_into="approvals")


def test_a_gate_waivable_by_its_own_approvers_is_refused() -> None:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(payment_graph("pay:self-waived", DUAL, waivable_by="officer"))
    assert str(refused.value) == (
        "Graph Pay_Self-Waived: Ask(Release) may be waived by 'officer', the role that answers "
        "it: a waiver is a higher role's, or its approvers could skip its policy alone. Name "
        "another role."
    )


def test_a_worker_refuses_a_waiver_by_a_role_nobody_holds() -> None:
    officers = Identities({"olga": {"roles": ["officer"]}, "otto": {"roles": ["officer"]}})
    with pytest.raises(GraphDeclarationError) as refused:
        LockgatePlugin(
            graphs=[payment_graph("pay:unwaivable", DUAL, waivable_by="finance_lead")],
            directory=officers.directory,
            secret=officers.secret,
        )
    assert "may be waived by the role 'finance_lead', which nobody in the Directory holds" in (
        str(refused.value)
    )


def deadline_refusal(deadline: object) -> str:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(payment_graph("pay:doubtful-deadline", DUAL, deadline=deadline))
    return str(refused.value)


def test_a_deadline_that_says_both_or_neither_of_what_then_happens_is_refused() -> None:
    assert "says neither what then happens" in deadline_refusal(Deadline(timedelta(hours=1)))
    assert "says both what then happens" in deadline_refusal(
        Deadline(timedelta(hours=1), escalate_to="finance_lead", take=Release.REJECT)
    )


def test_a_deadline_that_is_no_wait_is_refused() -> None:
    assert "give a positive timedelta" in deadline_refusal(
        Deadline(timedelta(0), escalate_to="finance_lead")
    )


def test_a_deadline_taking_an_option_the_gate_does_not_offer_is_refused() -> None:
    refused = deadline_refusal(Deadline(timedelta(hours=1), take=Checked.CHECKED))
    assert "takes <Checked.CHECKED: 'checked'>, which is not an option of Release" in refused


def test_a_deadline_taking_an_option_whose_node_needs_a_scope_is_refused() -> None:
    refused = deadline_refusal(Deadline(timedelta(hours=1), take=Release.RELEASE))
    assert refused == (
        "Graph Pay_Doubtful-Deadline: Ask(Release)'s deadline takes 'release', which leads to "
        "the node 'send' (pay:send), and that needs the scope payment:send: an option taken by "
        "a deadline runs as nobody. Take an option whose node needs nothing, or escalate to a "
        "role."
    )


def test_a_deadline_escalating_to_the_role_it_already_asks_is_refused() -> None:
    refused = deadline_refusal(Deadline(timedelta(hours=1), escalate_to="officer"))
    assert "escalates at its deadline to 'officer', the role it already asks" in refused


def test_a_worker_refuses_an_escalation_to_a_role_nobody_holds() -> None:
    officers = Identities({"olga": {"roles": ["officer"]}, "otto": {"roles": ["officer"]}})
    with pytest.raises(GraphDeclarationError) as refused:
        LockgatePlugin(
            graphs=[
                payment_graph(
                    "pay:nobody-above",
                    DUAL,
                    deadline=Deadline(timedelta(hours=1), escalate_to="finance_lead"),
                )
            ],
            directory=officers.directory,
            secret=officers.secret,
        )
    assert "escalates at its deadline to the role 'finance_lead', which nobody" in str(
        refused.value
    )
