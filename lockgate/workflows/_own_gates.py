"""A gate in a workflow of the user's own: opening it, judging each answer before anything is
written (by the rules of a graph's gate), counting answers by its policy, its deadline."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Generic, NoReturn, TypeVar

from temporalio import workflow

from lockgate.activities._refusal import Refusal
from lockgate.gates._authority import Authority
from lockgate.gates._evidence import evidence_shown
from lockgate.gates._gate_engine import (
    DEADLINE_ACTOR,
    GivenAnswer,
    answer_counted,
    deadline_passed,
    evidence_of_decision,
    gate_to_judge,
    opened,
    uncountable_answer,
    waits_to_be_counted,
)
from lockgate.gates._gates import GateChoice, OpenGate
from lockgate.gates._judgements import Judgement, judge_answer
from lockgate.gates._limits import shorten
from lockgate.gates._policies import GateDeadline
from lockgate.graphs._compile import _snake
from lockgate.graphs._compile_asks import ask_deadline, ask_evidence, ask_policy, ask_waiver
from lockgate.graphs._declare import Ask, GraphDeclarationError
from lockgate.identity._actors import Actor
from lockgate.identity._bindings import gate_subject
from lockgate.identity._proofs import Proof
from lockgate.tools._policy import DEADLINE_CHANNEL
from lockgate.tools._result import ErrorCode
from lockgate.tools._tool import definition_of
from lockgate.workflows._authority_context import (
    current_authority,
    current_tools,
    judging_authority,
)
from lockgate.workflows._failures import refuse_update
from lockgate.workflows._graph_inputs import one_answer
from lockgate.workflows._own_state import OwnRunState

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
        given: GivenAnswer | None
        while True:
            given = await self._answered()
            if given is None:
                decided = self._deadline_passes(ask, choices, subject, waivable_by)
                if decided is None:
                    continue
                actor = DEADLINE_ACTOR
                break
            actor = given.actor
            if actor.authorization:
                self.spent.append(actor.authorization)
            self.gate, row, decided = answer_counted(self._gate(), given, None)
            self.trail.append(row)
            if decided is not None:
                break
            workflow.upsert_memo({"lockgate_gate": self._gate_memo(keep_opened_at=True)})
            self.settles += 1
        evidence_given = evidence_of_decision(self._gate(), given, decided)
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
            given.waiver if given is not None else None,
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
        escalated_from: OpenGate | None = None,
    ) -> None:
        assert self.requester is not None
        self.openings += 1
        name = _snake(ask.options.__name__)
        declared = OpenGate(
            graph=self.workflow_type,
            run=self.run_id,
            gate=f"{name}#{self.openings}",
            ask=name,
            role=ask.of,
            because=ask.because,
            requester=self.requester.actor,
            choices=choices,
            execution=self.execution,
            subject=gate_subject(subject, [choice.to_dict() for choice in choices]),
            makers=tuple(self.makers),
            policy=policy,
            evidence={
                option: evidence_shown(model) for option, model in self.evidence_models.items()
            },
            waivable_by=waivable_by,
            deadline=deadline,
        )
        self.gate = opened(declared, workflow.now(), escalated_from)
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
        """The open gate's deadline passed undecided: the option it takes, or None once it has
        escalated (a new opening asks the escalation role alone). A trail row says which."""
        gate = self._gate()
        row, taken = deadline_passed(gate, None)
        self.trail.append(row)
        if taken is None:
            self._open_gate(
                ask, choices, subject, gate.policy, gate.deadline, waivable_by, escalated_from=gate
            )
            self.deadline_passed = False
        return taken

    async def decide(self, *args: Any) -> dict[str, Any]:
        """Records an answer the validator accepted; returns the run as it then stands."""
        proof = Proof.parse(args[0])
        actor = Actor.of_proof(proof)
        while waits_to_be_counted(self.gate, self.answer):
            await workflow.wait_condition(lambda: self.answer is None)
        gate = self.gate
        refused = uncountable_answer(
            gate, self.answer, proof.authorizes.get("gate"), actor, self.run_id
        )
        if refused is not None:
            raise Refusal(refused[0].value, refused[1])
        assert gate is not None
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
        return gate_to_judge(self.gate, self.answer)

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
