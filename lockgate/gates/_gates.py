"""Gate and park records: a gate waiting for an answer, its options, and a run parked at a node.

These are what the judgements in :mod:`lockgate.gates._judgements` see of a run; they travel as
JSON data (the memo, ``pending``, activity results) through ``to_dict`` and ``from_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.gates._approval_policies import (
    SINGLE_POLICY,
    CompiledApprovalPolicy,
    GateAnswer,
    GateDeadline,
)

__all__ = [
    "ENDS_RUN",
    "GateChoice",
    "OpenGate",
    "ParkedNode",
    "awaiting_view",
]


ENDS_RUN = "end"
"""The ``operation`` of an option that ends the run (its ``leads_to`` is None, as no node's is:
an option leading to another gate has neither)."""


@dataclass(frozen=True, slots=True)
class GateChoice:
    """One option of a gate: where it leads and what that first node needs.

    ``leads_to`` and ``operation`` name the node the option leads to and its tool; an option
    leading to another gate has neither; one that ends the run has no ``leads_to`` and the
    operation :data:`ENDS_RUN`, and needs nothing.
    """

    option: str
    leads_to: str | None
    operation: str | None
    needs: tuple[str, ...] = ()

    @property
    def ends_run(self) -> bool:
        """Whether taking this option ends the run."""
        return self.leads_to is None and self.operation == ENDS_RUN

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (for the memo and ``pending``)."""
        return {
            "option": self.option,
            "leads_to": self.leads_to,
            "operation": self.operation,
            "needs": list(self.needs),
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> GateChoice:
        """Reads :meth:`to_dict` output."""
        return cls(
            str(value["option"]),
            value.get("leads_to"),
            value.get("operation"),
            tuple(value.get("needs") or ()),
        )


@dataclass(frozen=True, slots=True)
class OpenGate:
    """A gate waiting for an answer, as the rules need to see it.

    Attributes:
        graph: The graph the run belongs to.
        run: The run (workflow id).
        gate: This opening's key (``editor_call#2``): a proof answers one opening only.
        ask: The gate's state (``editor_call``).
        role: The role an approver must hold.
        because: Why a human is asked.
        requester: Who opened it (the run's requester); they may not answer it.
        choices: The options.
        execution: The run's first run id: a proof answers one execution of a workflow id.
        subject: :func:`gate_subject` of what the gate shows (its target field, its options):
            a proof answers what its signer was shown, nothing else.
        makers: The verified principals who drove the work this gate reviews: the nodes run
            since the run started or the previous gate was answered. None of them may approve it.
        policy: How many distinct approvers it needs, and what their answers decide.
        answers: The answers counted so far at a gate that needs more than one; each approver
            counts once.
        evidence: For each option that requires evidence, what it requires (its model's name,
            fields and required fields; see :func:`evidence_shown`).
        waivable_by: The role that may waive it (decide it alone, with a reason), or None.
        deadline: How long it waits and what then happens, or None.
        due_at: When its deadline passes (ISO 8601, the run's clock), or None.
        escalated_from: The role it asked before its deadline escalated it, or None.
        parent: The parent run (``{graph, run_id, execution}``) of a sub-graph's gate, or None.
        sign_in: What an answer an identity provider signs must show (``{mfa: [acr or amr
            values], within_seconds}``), or None.
    """

    graph: str
    run: str
    gate: str
    ask: str
    role: str
    because: str
    requester: str
    choices: tuple[GateChoice, ...]
    execution: str = ""
    subject: str = ""
    makers: tuple[str, ...] = ()
    policy: CompiledApprovalPolicy = SINGLE_POLICY
    answers: tuple[GateAnswer, ...] = ()
    evidence: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    waivable_by: str | None = None
    deadline: GateDeadline | None = None
    due_at: str | None = None
    escalated_from: str | None = None
    parent: Mapping[str, Any] | None = None
    sign_in: Mapping[str, Any] | None = None

    def answered_by(self, principal: str | None) -> GateAnswer | None:
        """The answer ``principal`` already gave at this opening, if any."""
        return next((answer for answer in self.answers if answer.principal == principal), None)

    def choice(self, option: str) -> GateChoice | None:
        """The choice named ``option``."""
        return next((choice for choice in self.choices if choice.option == option), None)

    @property
    def options(self) -> list[str]:
        """The option names, in declaration order."""
        return [choice.option for choice in self.choices]

    def to_dict(self) -> dict[str, Any]:
        """As JSON data; a single-approval gate's has exactly the keys it had before policies,
        unless its policy names the option that says no (``rejection``), which a page shows."""
        shown: dict[str, Any] = {
            "graph": self.graph,
            "run_id": self.run,
            "gate": self.gate,
            "ask": self.ask,
            "role": self.role,
            "because": self.because,
            "requester": self.requester,
            "choices": [choice.to_dict() for choice in self.choices],
            "execution": self.execution,
            "subject": self.subject,
            "makers": list(self.makers),
        }
        if not self.policy.single or self.policy.rejection is not None:
            shown["policy"] = self.policy.to_dict()
            shown["answers"] = [answer.to_dict() for answer in self.answers]
        if self.evidence:
            shown["evidence"] = {option: dict(needs) for option, needs in self.evidence.items()}
        if self.waivable_by is not None:
            shown["waivable_by"] = self.waivable_by
        if self.deadline is not None:
            shown["deadline"] = self.deadline.to_dict()
            shown["due_at"] = self.due_at
        if self.escalated_from is not None:
            shown["escalated_from"] = self.escalated_from
        if self.parent is not None:
            shown["parent"] = dict(self.parent)
        if self.sign_in is not None:
            shown["sign_in"] = dict(self.sign_in)
        return shown

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> OpenGate:
        """Reads :meth:`to_dict` output (also a memo written before the key was ``run_id``)."""
        return cls(
            graph=str(value["graph"]),
            run=_run_id(value),
            gate=str(value["gate"]),
            ask=str(value["ask"]),
            role=str(value["role"]),
            because=str(value.get("because") or ""),
            requester=str(value["requester"]),
            choices=tuple(GateChoice.from_dict(choice) for choice in value["choices"]),
            execution=str(value.get("execution") or ""),
            subject=str(value.get("subject") or ""),
            makers=tuple(str(maker) for maker in value.get("makers") or ()),
            policy=CompiledApprovalPolicy.from_dict(value.get("policy")),
            answers=tuple(GateAnswer.from_dict(answer) for answer in value.get("answers") or ()),
            evidence={
                str(option): dict(needs) for option, needs in (value.get("evidence") or {}).items()
            },
            waivable_by=_text(value.get("waivable_by")),
            deadline=GateDeadline.from_dict(value.get("deadline")),
            due_at=_text(value.get("due_at")),
            escalated_from=_text(value.get("escalated_from")),
            parent=dict(value["parent"]) if isinstance(value.get("parent"), Mapping) else None,
            sign_in=dict(value["sign_in"]) if isinstance(value.get("sign_in"), Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class ParkedNode:
    """A run parked at a node it was refused (or could not finish)."""

    graph: str
    run: str
    node: str
    operation: str
    needs: tuple[str, ...] = ()
    parking: int = 1

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "graph": self.graph,
            "run_id": self.run,
            "node": self.node,
            "operation": self.operation,
            "needs": list(self.needs),
            "parking": self.parking,
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> ParkedNode:
        """Reads :meth:`to_dict` output (also one written before the key was ``run_id``)."""
        return cls(
            graph=str(value["graph"]),
            run=_run_id(value),
            node=str(value["node"]),
            operation=str(value["operation"]),
            needs=tuple(str(need) for need in value.get("needs") or ()),
            parking=int(value.get("parking") or 1),
        )


def awaiting_view(
    *,
    graph: str,
    run_id: str,
    execution: str,
    status: str,
    gate: dict[str, Any] | None,
    parked: ParkedNode | None = None,
) -> dict[str, Any]:
    """What a run answers its ``awaiting`` query with: the gate (as its approver is shown it)
    or the park a signer binds an answer or a resume to, with the execution a proof names."""
    return {
        "graph": graph,
        "run_id": run_id,
        "execution": execution,
        "status": status,
        "gate": gate,
        "parked": parked.to_dict() if parked is not None else None,
    }


def _run_id(value: Mapping[str, Any]) -> str:
    """The run a gate or park record names: ``run_id``, or ``run`` in a record written before
    the key was renamed (memos and histories keep those)."""
    return str(value["run_id"] if "run_id" in value else value["run"])


def _text(value: object) -> str | None:
    return str(value) if value is not None else None
