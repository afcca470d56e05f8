"""A gate in a workflow of the user's own: opening it, judging each answer before anything is
written (by the rules of a graph's gate), counting answers by its policy, its deadline."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Generic, NoReturn, TypeVar

from temporalio import workflow

from lockgate.activities import Refusal, definition_of
from lockgate.contracts import TrailRow
from lockgate.gating import (
    DEADLINE_CHANNEL,
    SINGLE_POLICY,
    Actor,
    Authority,
    ErrorCode,
    GateAnswer,
    GateChoice,
    GateDeadline,
    Judgement,
    OpenGate,
    Proof,
    evidence_shown,
    gate_subject,
    judge_answer,
    shorten,
    tally,
)
from lockgate.workflows._authority_context import (
    current_authority,
    current_tools,
    judging_authority,
)
from lockgate.workflows._compile import _snake
from lockgate.workflows._compile_asks import ask_deadline, ask_evidence, ask_policy, ask_waiver
from lockgate.workflows._declare import Ask, GraphDeclarationError
from lockgate.workflows._failures import refuse_update
from lockgate.workflows._graph_inputs import one_answer
from lockgate.workflows._own_state import DEADLINE_ACTOR, GivenAnswer, OwnRunState
from lockgate.workflows._trail import trail_row

__all__ = ["Decision", "OwnGates"]

E = TypeVar("E", bound=enum.Enum)


@dataclasses.dataclass(frozen=True)
class Decision(Generic[E]):
    """How a gate was decided.

    Attributes:
        choice: The option taken.
        by: Who decided, as the trail records them (``{actor, verified, channel, principal}``):
            the last approver the policy counted, the waiver's author, or the deadline.
        evidence: The evidence of the answers that decided it (``{by, answer, evidence}`` each).
        waiver: The reason, when the gate was waived.
    """

    choice: E
    by: dict[str, Any]
    evidence: list[dict[str, Any]]
    waiver: str | None = None

    @property
    def by_deadline(self) -> bool:
        """Whether the gate's deadline took the option, not a person."""
        return self.by.get("channel") == DEADLINE_CHANNEL


class OwnGates(OwnRunState):
    """Gates, and the ``decide`` update that answers them."""

    async def ask(
        self,
        ask: Ask,
        subject: dict[str, Any] | None,
        leads_to: Mapping[Any, str | Callable[..., Any]] | None,
    ) -> Decision[Any]:
        await self._open()
        where = f"Workflow {self.workflow_type}"
        if not (isinstance(ask.options, type) and issubclass(ask.options, enum.Enum)):
            raise GraphDeclarationError(f"{where}: Ask names {ask.options!r}, not an enum.")
        policy = ask_policy(where, ask)
        deadline = ask_deadline(where, ask)
        evidence, _ = ask_evidence(where, ask, {})
        waivable_by = ask_waiver(where, ask)
        choices = self._choices(where, ask.options, leads_to or {})
        self.evidence_models = evidence
        self._open_gate(ask, choices, subject, policy, deadline, waivable_by)
        while True:
            given = await self._answered()
            if given is None:
                decided = self._deadline_passes(ask, choices, subject, waivable_by)
                if decided is None:
                    continue
                actor, given = DEADLINE_ACTOR, GivenAnswer(decided, DEADLINE_ACTOR)
                break
            actor = given.actor
            if actor.authorization:
                self.spent.append(actor.authorization)
            opened = self._gate()
            if given.waiver is None:
                row = trail_row(
                    None,
                    f"ask:{opened.role}",
                    "answered",
                    actor,
                    gate=opened.gate,
                    answer=given.choice,
                )
            else:
                row = trail_row(
                    None,
                    f"waive:{waivable_by}",
                    "waived",
                    actor,
                    gate=opened.gate,
                    answer=given.choice,
                    why=given.waiver,
                )
            if given.evidence is not None:
                row["evidence"] = given.evidence
            decided = given.choice if given.waiver is not None else self._count(row, given)
            self.trail.append(row)
            if decided is not None:
                break
            workflow.upsert_memo({"lockgate_gate": self._gate_memo(keep_opened_at=True)})
            self.settles += 1
        evidence_given = self._evidence_of(given, decided)
        self.gate = None
        self.deadline_passed = False
        self.driver = actor
        self.makers = []
        self.status = "running"
        workflow.upsert_memo({"lockgate_gate": None})
        self._upsert("running")
        self.settles += 1
        return Decision(
            ask.options(_enum_value(ask.options, decided)),
            actor.to_dict(),
            evidence_given,
            given.waiver,
        )

    def _choices(
        self,
        where: str,
        options: type[enum.Enum],
        leads_to: Mapping[Any, str | Callable[..., Any]],
    ) -> tuple[GateChoice, ...]:
        tools = current_tools()
        chosen = {}
        for option, tool in leads_to.items():
            if not isinstance(option, options):
                raise GraphDeclarationError(
                    f"{where}: leads_to names {option!r}, which is not an option of "
                    f"{options.__name__}."
                )
            name = tool if isinstance(tool, str) else definition_of(tool).name
            definition = tools.get(name) if tools is not None else None
            if definition is None:
                raise GraphDeclarationError(
                    f"{where}: option '{option.value}' leads to tool '{name}', which this "
                    "worker does not serve; give LockgatePlugin the tool."
                )
            chosen[str(option.value)] = (name, tuple(sorted(definition.scopes)))
        return tuple(
            GateChoice(
                str(case.value),
                chosen[str(case.value)][0] if str(case.value) in chosen else None,
                chosen[str(case.value)][0] if str(case.value) in chosen else None,
                chosen[str(case.value)][1] if str(case.value) in chosen else (),
            )
            for case in options
        )

    def _open_gate(
        self,
        ask: Ask,
        choices: tuple[GateChoice, ...],
        subject: dict[str, Any] | None,
        policy: Any,
        deadline: GateDeadline | None,
        waivable_by: str | None,
        escalated_from: str | None = None,
    ) -> None:
        assert self.requester is not None
        escalate_to = deadline.escalate_to if deadline is not None else None
        self.openings += 1
        name = _snake(ask.options.__name__)
        self.gate = OpenGate(
            graph=self.workflow_type,
            run=self.run_id,
            gate=f"{name}#{self.openings}",
            ask=name,
            role=ask.of if escalate_to is None or escalated_from is None else escalate_to,
            because=ask.because,
            requester=self.requester.actor,
            choices=choices,
            execution=self.execution,
            subject=gate_subject(subject, [choice.to_dict() for choice in choices]),
            makers=tuple(self.makers),
            policy=policy if escalated_from is None else SINGLE_POLICY,
            evidence={
                option: evidence_shown(model) for option, model in self.evidence_models.items()
            },
            waivable_by=waivable_by,
            deadline=deadline if escalated_from is None else None,
            due_at=(
                (workflow.now() + timedelta(seconds=deadline.seconds)).isoformat()
                if deadline is not None and escalated_from is None
                else None
            ),
            escalated_from=escalated_from,
        )
        self.subject = subject
        self.status = "waiting"
        self._record("gate.open", gate=self.gate.gate, role=self.gate.role)
        self._upsert("waiting")
        workflow.upsert_memo({"lockgate_gate": self._gate_memo()})
        self.settles += 1

    async def _answered(self) -> GivenAnswer | None:
        """The next accepted answer, or None once the gate's deadline passes first."""
        gate = self._gate()
        if gate.due_at is not None and not self.deadline_passed:
            left = (datetime.fromisoformat(gate.due_at) - workflow.now()).total_seconds()
            try:
                await workflow.wait_condition(
                    lambda: self.answer is not None,
                    timeout=max(left, 0.001),
                    timeout_summary=f"deadline of gate {gate.gate}",
                )
            except TimeoutError:
                self.deadline_passed = True
                return None
        else:
            await workflow.wait_condition(lambda: self.answer is not None)
        answer, self.answer = self.answer, None
        return answer

    def _deadline_passes(
        self,
        ask: Ask,
        choices: tuple[GateChoice, ...],
        subject: dict[str, Any] | None,
        waivable_by: str | None,
    ) -> str | None:
        gate = self._gate()
        deadline = gate.deadline
        assert deadline is not None
        if deadline.take is not None:
            self.trail.append(
                trail_row(
                    None,
                    "deadline",
                    "timed_out",
                    DEADLINE_ACTOR,
                    gate=gate.gate,
                    answer=deadline.take,
                    why=f"No decision within {deadline.described()}: the gate takes "
                    f"'{deadline.take}', as its deadline declares.",
                )
            )
            return deadline.take
        self.trail.append(
            trail_row(
                None,
                "deadline",
                "escalated",
                DEADLINE_ACTOR,
                gate=gate.gate,
                why=f"No decision within {deadline.described()} at gate '{gate.gate}': "
                f"escalated from '{gate.role}' to '{deadline.escalate_to}', who decides alone at "
                "a new opening.",
            )
        )
        self._open_gate(
            ask, choices, subject, SINGLE_POLICY, deadline, waivable_by, escalated_from=gate.role
        )
        self.deadline_passed = False
        return None

    def _count(self, row: TrailRow, given: GivenAnswer) -> str | None:
        gate = self._gate()
        if gate.policy.single:
            return given.choice
        principal = given.actor.principal or given.actor.actor
        answers = (*gate.answers, GateAnswer(principal, given.choice, given.evidence))
        outcome = tally(gate.policy, answers, gate.options)
        self.gate = dataclasses.replace(gate, answers=answers)
        row["counts"] = dict(outcome.counts)
        row["needed"] = gate.policy.approvals
        if outcome.option is not None:
            row["decided"] = outcome.option
        row["why"] = outcome.why
        return outcome.option

    def _evidence_of(self, last: GivenAnswer, decided: str) -> list[dict[str, Any]]:
        gate = self._gate()
        if last.actor is DEADLINE_ACTOR:
            return []
        if gate.policy.single or last.waiver is not None:
            given = [(last.actor.principal or last.actor.actor, last.choice, last.evidence)]
        else:
            given = [(a.principal, a.option, a.evidence) for a in gate.answers]
        return [
            {"by": by, "answer": option, "evidence": dict(evidence)}
            for by, option, evidence in given
            if evidence is not None and option == decided
        ]

    async def decide(self, *args: Any) -> dict[str, Any]:
        """Records an answer the validator accepted; returns the run as it then stands."""
        proof = Proof.parse(args[0])
        actor = Actor.of_proof(proof)
        while self.gate is not None and not self.gate.policy.single and self.answer is not None:
            await workflow.wait_condition(lambda: self.answer is None)
        gate = self.gate
        if gate is None or self.answer is not None or proof.authorizes.get("gate") != gate.gate:
            raise Refusal(
                ErrorCode.GATE_NOT_PENDING.value,
                f"Run '{self.run_id}' is not waiting for a decision.",
            )
        if gate.answered_by(actor.principal) is not None:
            raise Refusal(
                ErrorCode.ALREADY_ANSWERED.value,
                f"{actor.actor} already answered at gate '{gate.gate}', and each approver "
                "counts once.",
            )
        choice = str(proof.authorizes["choice"])
        if not workflow.unsafe.is_replaying():
            authority = current_authority()
            if authority is not None:
                authority.audit.event(
                    "gate.decide",
                    accepted=True,
                    actor=actor.to_dict(),
                    graph=self.workflow_type,
                    run=self.run_id,
                    gate=gate.gate,
                    answer=choice,
                    role=gate.role,
                )
        self.answer = GivenAnswer(
            choice, actor, proof.authorizes.get("evidence"), proof.authorizes.get("waiver")
        )
        return self.show()

    def validate_decide(self, *args: Any) -> None:
        """Refuses, before anything is written, every answer the gate rules refuse."""
        authority = judging_authority()
        answer, problem = one_answer(args, "decide")
        judgement = (
            Judgement.refuse(ErrorCode(problem.code), problem.sentence)
            if problem is not None
            else judge_answer(
                authority,
                answer,
                graph=self.workflow_type,
                run=self.run_id,
                gate=self._gate_to_judge(),
                spent_nonces=self.spent,
                evidence_models=self.evidence_models,
            )
        )
        if not judgement.accepted:
            self._refuse(authority, judgement)

    def _gate_to_judge(self) -> OpenGate | None:
        gate, given = self.gate, self.answer
        if gate is None or given is None:
            return gate
        if gate.policy.single or given.waiver is not None:
            return None
        answers = (
            *gate.answers,
            GateAnswer(given.actor.principal or given.actor.actor, given.choice, given.evidence),
        )
        if tally(gate.policy, answers, gate.options).option is not None:
            return None
        return dataclasses.replace(gate, answers=answers)

    def _refuse(self, authority: Authority, judgement: Judgement) -> NoReturn:
        refuse_update(
            authority.audit,
            "gate.decide",
            judgement,
            graph=self.workflow_type,
            run=self.run_id,
            gate=self.gate.gate if self.gate else None,
            answer=shorten(judgement.choice),
        )


def _enum_value(options: type[enum.Enum], code: str) -> Any:
    return next(case.value for case in options if str(case.value) == code)
