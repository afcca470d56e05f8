"""The gate engine's rules, without Temporal: one set for graph runs and workflows of your own.

The Temporal suites (this folder's test_gates, test_approval_policies, test_deadlines,
test_waivers and test_evidence, and workflows/test_own_workflows) show both kinds of run keep
these rules; these tests pin each rule on its own, so a change to one is read here first.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from lockgate.gates._approval_policies import (
    CompiledApprovalPolicy,
    GateDeadline,
    duration_in_words,
)
from lockgate.gates._gate_engine import (
    DEADLINE_ACTOR,
    GivenAnswer,
    answer_counted,
    deadline_passed,
    evidence_of_decision,
    four_eyes,
    gate_memo,
    gate_to_judge,
    opened,
    uncountable_answer,
    unsigned_gate_refusal,
    waits_to_be_counted,
)
from lockgate.gates._gates import GateChoice, OpenGate
from lockgate.identity._actors import Actor

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=timezone.utc)
SINGLE = CompiledApprovalPolicy()
DUAL = CompiledApprovalPolicy("dual", approvals=2, rejection="reject")


def _gate(
    policy: CompiledApprovalPolicy = SINGLE, deadline: GateDeadline | None = None
) -> OpenGate:
    return OpenGate(
        graph="pay:release",
        run="pay-1",
        gate="release#1",
        ask="release",
        role="officer",
        because="Officers release payments.",
        requester="ada",
        choices=(GateChoice("release", "send", "send"), GateChoice("reject", "cancel", "cancel")),
        execution="first-run",
        policy=policy,
        waivable_by="cfo",
        deadline=deadline,
    )


def _person(name: str) -> Actor:
    return Actor(actor=name, verified=True, channel="temporal", principal=name, authorization=name)


def _given(
    name: str, choice: str = "release", evidence: object = None, waiver: str | None = None
) -> GivenAnswer:
    return GivenAnswer(choice, _person(name), evidence, waiver)


def test_a_gate_opens_due_when_its_deadline_says() -> None:
    gate = opened(_gate(deadline=GateDeadline(3600, escalate_to="cfo")), NOW)

    assert gate.due_at == (NOW + timedelta(hours=1)).isoformat()
    assert opened(_gate(), NOW).due_at is None


def test_an_escalated_opening_asks_the_escalation_role_alone_with_no_deadline() -> None:
    first = opened(_gate(DUAL, GateDeadline(3600, escalate_to="cfo")), NOW)
    declared = dataclasses.replace(first, gate="release#2", due_at=None)

    again = opened(declared, NOW + timedelta(hours=1), escalated_from=first)

    assert (again.role, again.policy.single, again.deadline, again.due_at) == (
        "cfo",
        True,
        None,
        None,
    )
    assert again.escalated_from == "officer"


def test_one_answer_decides_a_single_gate_in_a_row_naming_the_role() -> None:
    gate, row, decided = answer_counted(_gate(), _given("olga"), "release")

    assert decided == "release"
    assert gate == _gate()
    assert row == {
        "node": "release",
        "operation": "ask:officer",
        "outcome": "answered",
        "by": _person("olga").to_dict(),
        "answer": "release",
    }


def test_a_workflow_of_your_own_names_the_gate_instead_of_a_node() -> None:
    _, row, _ = answer_counted(_gate(), _given("olga"), None)

    assert "node" not in row
    assert row["gate"] == "release#1"


def test_a_dual_gate_counts_the_first_answer_and_decides_on_the_second() -> None:
    gate, first, decided = answer_counted(_gate(DUAL), _given("olga"), "release")
    assert decided is None
    assert (first["counts"], first["needed"], "decided" in first) == (
        {"release": 1, "reject": 0},
        2,
        False,
    )

    gate, second, decided = answer_counted(gate, _given("otto"), "release")

    assert decided == "release"
    assert second["decided"] == "release"
    assert [answer.principal for answer in gate.answers] == ["olga", "otto"]


def test_a_waiver_decides_alone_whatever_the_policy_in_a_row_of_its_own() -> None:
    gate, row, decided = answer_counted(
        _gate(DUAL), _given("fay", waiver="approved by phone"), "release"
    )

    assert decided == "release"
    assert gate.answers == ()
    assert (row["operation"], row["outcome"], row["why"]) == (
        "waive:cfo",
        "waived",
        "approved by phone",
    )


def test_a_deadline_that_takes_an_option_is_a_row_by_the_system() -> None:
    row, taken = deadline_passed(_gate(deadline=GateDeadline(60, take="reject")), "release")

    assert taken == "reject"
    assert (row["outcome"], row["by"], row["answer"]) == (
        "timed_out",
        DEADLINE_ACTOR.to_dict(),
        "reject",
    )
    assert row["why"] == (
        "No decision within 1 minute: the gate takes 'reject', as its deadline declares."
    )


def test_a_deadline_that_escalates_takes_nothing_and_says_to_whom() -> None:
    row, taken = deadline_passed(_gate(deadline=GateDeadline(60, escalate_to="cfo")), None)

    assert taken is None
    assert row["outcome"] == "escalated"
    assert "escalated from 'officer' to 'cfo'" in row["why"]
    assert row["gate"] == "release#1"


@pytest.mark.parametrize(
    ("answers", "decided", "expected"),
    [
        pytest.param(
            [("olga", "release", {"invoice": "A-1"})],
            "release",
            [{"by": "olga", "answer": "release", "evidence": {"invoice": "A-1"}}],
            id="single",
        ),
        pytest.param(
            [("olga", "release", {"invoice": "A-1"}), ("otto", "release", {"invoice": "A-2"})],
            "release",
            [
                {"by": "olga", "answer": "release", "evidence": {"invoice": "A-1"}},
                {"by": "otto", "answer": "release", "evidence": {"invoice": "A-2"}},
            ],
            id="dual: every counted answer for the option decided",
        ),
    ],
)
def test_a_decision_carries_the_evidence_of_the_answers_that_made_it(
    answers: list[tuple[str, str, dict[str, str]]],
    decided: str,
    expected: list[dict[str, object]],
) -> None:
    policy = SINGLE if len(answers) == 1 else DUAL
    gate = _gate(policy)
    last = None
    for name, choice, evidence in answers:
        last = _given(name, choice, evidence=evidence)
        gate, _, _ = answer_counted(gate, last, "release")

    assert evidence_of_decision(gate, last, decided) == expected


def test_a_waiver_carries_its_own_evidence_and_not_the_answers_before_it() -> None:
    gate, _, _ = answer_counted(_gate(DUAL), _given("olga", evidence={"invoice": "A-1"}), "r")
    waiver = _given("fay", evidence={"invoice": "A-9"}, waiver="by phone")

    assert evidence_of_decision(gate, waiver, "release") == [
        {"by": "fay", "answer": "release", "evidence": {"invoice": "A-9"}}
    ]


def test_a_decision_by_the_deadline_carries_no_evidence() -> None:
    assert evidence_of_decision(_gate(), None, "reject") == []


def test_an_answer_arriving_after_one_that_decides_has_no_gate_to_answer() -> None:
    gate = _gate()

    assert gate_to_judge(gate, None) is gate
    assert gate_to_judge(gate, _given("olga")) is None
    assert gate_to_judge(None, None) is None


def test_at_a_dual_gate_the_next_answer_is_judged_with_the_pending_one_counted() -> None:
    judged = gate_to_judge(_gate(DUAL), _given("olga"))

    assert judged is not None
    assert [answer.principal for answer in judged.answers] == ["olga"]
    assert waits_to_be_counted(_gate(DUAL), _given("olga"))
    assert not waits_to_be_counted(_gate(), _given("olga"))


def test_an_answer_to_another_opening_or_a_second_from_one_approver_is_not_counted() -> None:
    gate = _gate(DUAL)
    counted, _, _ = answer_counted(gate, _given("olga"), "release")

    assert uncountable_answer(gate, None, "release#1", _person("olga"), "pay-1") is None
    refused = uncountable_answer(gate, None, "release#0", _person("olga"), "pay-1")
    assert refused is not None and refused[0].value == "GATE_NOT_PENDING"
    twice = uncountable_answer(counted, None, "release#1", _person("olga"), "pay-1")
    assert twice is not None and twice[0].value == "ALREADY_ANSWERED"
    assert twice[1] == "olga already answered at gate 'release#1', and each approver counts once."


def test_the_memo_keeps_when_the_gate_first_opened() -> None:
    first = gate_memo(_gate(), {"target": None}, None, NOW)
    later = gate_memo(_gate(), {"target": None}, first, NOW + timedelta(minutes=5))

    assert later["opened_at"] == first["opened_at"] == NOW.isoformat()


def test_a_deadline_says_its_wait_in_the_largest_whole_unit() -> None:
    assert GateDeadline(48 * 3600).wait_in_words() == "2 days"
    assert [duration_in_words(s) for s in (3600, 90, 1.5)] == [
        "1 hour",
        "90 seconds",
        "1.5 seconds",
    ]


def test_four_eyes_keep_the_verified_requester_and_the_makers_from_answering() -> None:
    gate = dataclasses.replace(_gate(), makers=("lee",))
    assert "opened this gate" in (four_eyes(_person("ada"), gate) or "")
    assert "drove work this gate reviews" in (four_eyes(_person("lee"), gate) or "")
    assert four_eyes(_person("mo"), gate) is None


def test_with_no_verified_requester_every_approver_may_answer_who_did_not_make_the_work() -> None:
    unsigned = Actor.unverified("temporal")
    gate = dataclasses.replace(_gate(), requester=unsigned.actor, makers=("lee",))
    assert four_eyes(_person("ada"), gate) is None
    assert four_eyes(_person("mo"), gate) is None
    assert "drove work this gate reviews" in (four_eyes(_person("lee"), gate) or "")


def test_a_gate_opens_unsigned_only_where_the_declaration_allows_it() -> None:
    unsigned = Actor.unverified("temporal")
    refused = unsigned_gate_refusal(
        unsigned, unsigned_start_allowed=False, workflow_type="support:refund"
    )
    assert refused is not None and "started unsigned" in refused
    assert "unsigned_starts=['support:refund']" in refused
    assert (
        unsigned_gate_refusal(unsigned, unsigned_start_allowed=True, workflow_type="support:refund")
        is None
    )
    assert (
        unsigned_gate_refusal(
            _person("ada"), unsigned_start_allowed=False, workflow_type="support:refund"
        )
        is None
    )


def test_a_single_gate_shows_the_rejection_it_declares_and_one_without_shows_no_policy() -> None:
    declared = _gate(CompiledApprovalPolicy(rejection="reject"))

    assert declared.to_dict()["policy"]["rejection"] == "reject"
    assert OpenGate.from_dict(declared.to_dict()).policy.rejection == "reject"
    assert "policy" not in _gate().to_dict()


def test_a_comment_is_kept_in_the_answers_trail_row_and_decides_nothing() -> None:
    said = dataclasses.replace(_given("rod"), comment="Invoice checked against the PO.")
    _, row, decided = answer_counted(_gate(), said, "release")
    _, plain, plainly_decided = answer_counted(_gate(), _given("rod"), "release")

    assert row["comment"] == "Invoice checked against the PO."
    assert "comment" not in plain
    assert decided == plainly_decided == "release"
