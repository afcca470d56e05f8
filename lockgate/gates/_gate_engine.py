"""The gate engine: what happens to an open gate, in a graph run and in a workflow of your own.

A gate opens (as declared, or escalated when its deadline passed), takes answers already judged
by :func:`~lockgate.gates._judgements.judge_answer`, counts them by its policy (:func:`tally`),
is waived, or passes its deadline; each step is one trail row; a decision carries the evidence
of the answers that made it. Every rule of that is here, once. What differs between the two
kinds of run, how they wait and what they write to Temporal, stays with them: the engine is
given the clock (``now``) and never waits, so it runs the same in any workflow, on replay, and
in a test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lockgate.contracts import TrailRow
from lockgate.gates._approval_policies import SINGLE_POLICY, GateAnswer, tally
from lockgate.gates._gates import OpenGate
from lockgate.gates._trail import trail_row
from lockgate.identity._actors import Actor
from lockgate.identity._names import UNVERIFIED_PREFIX
from lockgate.tools._authorization import DEADLINE_CHANNEL
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "DEADLINE_ACTOR",
    "MADE_THE_WORK",
    "OWN_GATE",
    "GivenAnswer",
    "answer_counted",
    "deadline_passed",
    "evidence_of_decision",
    "four_eyes",
    "gate_memo",
    "gate_to_judge",
    "opened",
    "uncountable_answer",
    "unsigned_gate_refusal",
    "waits_to_be_counted",
]

OWN_GATE = (
    "{actor} opened this gate, so it cannot approve it: the work and its approval need two "
    "different people"
)
MADE_THE_WORK = (
    "{actor} drove work this gate reviews, so it cannot approve it: the work and its approval "
    "need two different people"
)

DEADLINE_ACTOR = Actor.unverified(DEADLINE_CHANNEL)
"""Who the trail records when a deadline decides: the system, never a person (it holds
nothing, so what its option leads to runs only if it needs nothing)."""


@dataclass(frozen=True)
class GivenAnswer:
    """An answer accepted at the open gate and not counted yet.

    Attributes:
        choice: The option.
        actor: Who answered, as verified.
        evidence: What they gave with it, already checked against the option's model.
        waiver: The reason, when the answer waives the gate (decides it alone).
        comment: What they said with it, kept in its trail row; it decides nothing.
    """

    choice: str
    actor: Actor
    evidence: Any = None
    waiver: str | None = None
    comment: str | None = None

    @property
    def approver(self) -> str:
        """The name the gate counts the answer under: the principal, else the actor."""
        return self.actor.principal or self.actor.actor


def four_eyes(actor: Actor, gate: OpenGate) -> str | None:
    """Why ``actor`` may not answer ``gate`` under four eyes; None when it may.

    Nobody approves work they asked for or made: not the run's requester (a person or a
    service, whoever signed its start), nor anyone who drove work the gate reviews (its makers).
    A run with no verified requester (started unsigned, where its declaration allows that) has
    nobody in the requester's place: every verified approver may answer unless they made the
    work. The rule for graph runs and workflows of your own alike.
    """
    if not gate.requester.startswith(UNVERIFIED_PREFIX) and actor.actor == gate.requester:
        return OWN_GATE.format(actor=actor.actor)
    if actor.principal is not None and actor.principal in gate.makers:
        return MADE_THE_WORK.format(actor=actor.actor)
    return None


def unsigned_gate_refusal(
    requester: Actor, *, unsigned_start_allowed: bool, workflow_type: str
) -> str | None:
    """Why a run may not open a gate, as a sentence; None when it may.

    A gate's four eyes need to know who asked for the work, so a run opens one only once a
    signed start named its requester, unless the run's declaration allows unsigned starts
    (``@graph(allow_unsigned_start=True)``, ``LockgatePlugin(unsigned_starts=[...])``): then
    :func:`four_eyes` lets every verified approver who did not make the work answer.
    """
    if requester.verified or unsigned_start_allowed:
        return None
    return (
        f"Workflow '{workflow_type}' was started unsigned ({requester.actor}), so its gate "
        "cannot tell who asked for the work, and four eyes need to: start it signed "
        "(GraphClient.start_workflow, or a client with LockgateClientPlugin and a signer), or "
        f"let it start unsigned with LockgatePlugin(unsigned_starts=['{workflow_type}'])."
    )


def opened(declared: OpenGate, now: datetime, escalated_from: OpenGate | None = None) -> OpenGate:
    """The gate as it opens at ``now``: ``declared``, due when its deadline says; or, escalated
    from an opening whose deadline passed, asking the escalation role alone, with no deadline
    of its own."""
    if escalated_from is None:
        deadline = declared.deadline
        due = now + timedelta(seconds=deadline.seconds) if deadline is not None else None
        return dataclasses.replace(declared, due_at=due.isoformat() if due else None)
    passed = escalated_from.deadline
    assert passed is not None and passed.escalate_to is not None
    return dataclasses.replace(
        declared,
        role=passed.escalate_to,
        policy=SINGLE_POLICY,
        deadline=None,
        due_at=None,
        escalated_from=escalated_from.role,
    )


def answer_counted(
    gate: OpenGate, given: GivenAnswer, node: str | None
) -> tuple[OpenGate, TrailRow, str | None]:
    """Counts an accepted answer: the gate with it counted, its trail row, and the option now
    decided (None while the policy needs more answers).

    A waiver decides alone, whatever the policy, in a row of its own with its reason. At a gate
    of several approvers the row carries the tally: ``counts``, ``needed``, ``why`` and, once
    decided, ``decided``. ``node`` is the graph's state; a workflow of your own has none, and
    its rows name the gate.
    """
    if given.waiver is not None:
        row = trail_row(
            node,
            f"waive:{gate.waivable_by}",
            "waived",
            given.actor,
            answer=given.choice,
            why=given.waiver,
        )
    else:
        row = trail_row(node, f"ask:{gate.role}", "answered", given.actor, answer=given.choice)
    if node is None:
        row["gate"] = gate.gate
    if given.evidence is not None:
        row["evidence"] = given.evidence
    if given.comment is not None:
        row["comment"] = given.comment
    if given.waiver is not None or gate.policy.single:
        return gate, row, given.choice
    answers = (*gate.answers, GateAnswer(given.approver, given.choice, given.evidence))
    outcome = tally(gate.policy, answers, gate.options)
    row["counts"] = dict(outcome.counts)
    row["needed"] = gate.policy.approvals
    if outcome.option is not None:
        row["decided"] = outcome.option
    row["why"] = outcome.why
    return dataclasses.replace(gate, answers=answers), row, outcome.option


def deadline_passed(gate: OpenGate, node: str | None) -> tuple[TrailRow, str | None]:
    """The gate's deadline passed undecided: its trail row, and the option it takes (None when
    it escalates instead: the caller opens :func:`opened` ``escalated_from`` it)."""
    deadline = gate.deadline
    assert deadline is not None
    if deadline.take is not None:
        row = trail_row(
            node,
            "deadline",
            "timed_out",
            DEADLINE_ACTOR,
            answer=deadline.take,
            why=f"No decision within {deadline.wait_in_words()}: the gate takes "
            f"'{deadline.take}', as its deadline declares.",
        )
    else:
        row = trail_row(
            node,
            "deadline",
            "escalated",
            DEADLINE_ACTOR,
            why=f"No decision within {deadline.wait_in_words()} at gate '{gate.gate}': escalated "
            f"from '{gate.role}' to '{deadline.escalate_to}', who decides alone at a new "
            "opening.",
        )
    if node is None:
        row["gate"] = gate.gate
    return row, deadline.take


def evidence_of_decision(
    gate: OpenGate, last: GivenAnswer | None, decided: str
) -> list[dict[str, Any]]:
    """The evidence of the answers that decided the gate (``{by, answer, evidence}`` each): the
    one answer of a single approver or a waiver, the counted answers for ``decided`` at a gate
    of several; none when the deadline decided (``last`` is None)."""
    if last is None:
        return []
    if gate.policy.single or last.waiver is not None:
        given = [(last.approver, last.choice, last.evidence)]
    else:
        given = [(a.principal, a.option, a.evidence) for a in gate.answers]
    return [
        {"by": by, "answer": option, "evidence": dict(evidence)}
        for by, option, evidence in given
        if evidence is not None and option == decided
    ]


def gate_to_judge(gate: OpenGate | None, pending: GivenAnswer | None) -> OpenGate | None:
    """The gate an answer arriving now would answer: None when none is open or an accepted
    answer already decides it; at a gate of several approvers, with their answers so far, the
    one accepted and not yet counted included."""
    if gate is None or pending is None:
        return gate
    if gate.policy.single or pending.waiver is not None:
        return None
    answers = (*gate.answers, GateAnswer(pending.approver, pending.choice, pending.evidence))
    if tally(gate.policy, answers, gate.options).option is not None:
        return None
    return dataclasses.replace(gate, answers=answers)


def waits_to_be_counted(gate: OpenGate | None, pending: GivenAnswer | None) -> bool:
    """Whether an answer accepted now waits for the one before it to be counted (only at a
    gate of several approvers; at a single one, the first decides)."""
    return gate is not None and not gate.policy.single and pending is not None


def uncountable_answer(
    gate: OpenGate | None,
    pending: GivenAnswer | None,
    answers_gate: object,
    actor: Actor,
    run_id: str,
) -> tuple[ErrorCode, str] | None:
    """Why an answer its validator accepted cannot be counted after all, or None: another
    answer decided the gate first, in the same workflow task, or the same approver answered
    twice in it."""
    if gate is None or pending is not None or answers_gate != gate.gate:
        return ErrorCode.GATE_NOT_PENDING, f"Run '{run_id}' is not waiting for a decision."
    if gate.answered_by(actor.principal) is not None:
        return (
            ErrorCode.ALREADY_ANSWERED,
            f"{actor.actor} already answered at gate '{gate.gate}', and each approver counts once.",
        )
    return None


def gate_memo(
    gate: OpenGate | Mapping[str, Any], shows: Mapping[str, Any], written: object, now: datetime
) -> dict[str, Any]:
    """The gate as the run's memo shows it across runs, without a worker: its record (given,
    or built from ``gate``), what it ``shows`` (its ``target``, and a graph's ``version``), and
    when it opened (kept from the memo ``written`` before, when there is one)."""
    record = gate.to_dict() if isinstance(gate, OpenGate) else gate
    memo = dict(record) | dict(shows)
    opened_at = written.get("opened_at") if isinstance(written, dict) else None
    memo["opened_at"] = opened_at or now.isoformat()
    return memo
