"""Updates and queries: proving who started a run, answering a gate, resuming a parked run,
cancelling a run, waiting for a run to settle, reading it.

Every update has a validator that refuses, before anything is written, whatever the rules refuse:
a payload of the wrong shape, size or depth, an answer no verified approver gave for exactly this
gate of this execution, a wait that could never end or would crowd out other callers. A refusal
is a code and a sentence, audited once, with no stack trace. Queries write nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from pydantic import BaseModel
from temporalio import workflow

from lockgate.activities._activity_inputs import carry_binding
from lockgate.activities._refusal import Refusal
from lockgate.gates._authority import Authority
from lockgate.gates._gate_engine import GivenAnswer, uncountable_answer, waits_to_be_counted
from lockgate.gates._judgements import (
    Judgement,
    judge_answer,
    judge_cancel,
    judge_resume,
    judge_start,
)
from lockgate.gates._limits import MAX_WAITING_SETTLES, PayloadProblem, shorten
from lockgate.identity._actors import Actor
from lockgate.identity._proofs import Proof
from lockgate.identity._seals import WorkerSecretError
from lockgate.tools._result import ErrorCode
from lockgate.workflows._authority_context import (
    carry_seal,
    current_authority,
    judging_authority,
)
from lockgate.workflows._failures import refuse_update
from lockgate.workflows._graph_inputs import one_answer, settle_input, show_input, start_proof
from lockgate.workflows._graph_signals import GraphSignals
from lockgate.workflows._graph_state import invalid

__all__ = ["GraphAnswers"]


class GraphAnswers(GraphSignals):
    """The ``start``, ``decide``, ``resume``, ``cancel`` and ``settle`` updates and the ``show``
    and ``awaiting`` queries of every graph's workflow."""

    @workflow.update(
        name="start",
        description=(
            "Say who started this run: paste the signed start that `lockgate sign start RUN "
            "--as YOU` prints. Taken once, before the run begins."
        ),
    )
    async def start(self, *args: Any) -> dict[str, Any]:
        """Records the starter the validator accepted, then returns once the run settles (or at
        once, asked with ``{proof, settle: false}``)."""
        value, settle, _ = start_proof(args)
        actor = Actor.of_proof(Proof.parse(value))
        if self._begun or self._start_actor is not None:
            # Another start proof got in first, validated in the same task as this one.
            raise Refusal(
                ErrorCode.GATE_NOT_PENDING.value,
                f"Run '{self._run_id}' already knows who started it.",
            )
        _audit("run.start", True, actor, graph=self._graph.name, run=self._run_id)
        self._start_actor = self._run.requester = self._run.driver = actor
        if not settle:
            return self._view()
        return await self._after_settling(self._run.settles)

    @start.validator
    def validate_start(self, *args: Any) -> None:
        """Refuses, before anything is written, a start proof that does not name exactly this
        run (graph, workflow id, execution, version, inputs), and any once the run has begun."""
        authority = judging_authority()
        value, _, problem = start_proof(args)
        judgement = (
            _refused_payload(problem)
            or self._start_taken()
            or judge_start(
                authority,
                value,
                graph=self._graph.name,
                run=self._run_id,
                execution=self._execution,
                version=self._graph.version,
                inputs=self._start.inputs,
            )
        )
        if not judgement.accepted:
            self._refuse(authority, "run.start", judgement)

    def _start_taken(self) -> Judgement | None:
        """A refusal once the run takes no start proof: it has begun, was refused at its start,
        or is one a parent run or an earlier run of its chain started."""
        if self._start.carried is not None or self._start.handed is not None:
            return Judgement.refuse(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{self._run_id}' was started by lockgate itself (a run it continued, or a "
                "sub-graph its parent started): it takes no start proof.",
            )
        if self._refusal is not None:
            return Judgement.refuse(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{self._run_id}' was refused at its start, so nothing runs for any proof: "
                f"{self._refusal.sentence}",
            )
        if self._begun or self._start_actor is not None:
            who = (self._start_actor or self._run.requester).actor
            return Judgement.refuse(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{self._run_id}' has begun, started by {who}: a run takes its start proof "
                "once, before it begins.",
            )
        return None

    @workflow.update(
        name="decide",
        description=(
            "Answer the open gate. Paste the signed answer that `lockgate sign decide RUN "
            "CHOICE --as YOU` prints; unsigned answers are refused."
        ),
    )
    async def decide(self, *args: Any) -> dict[str, Any]:
        """Records an answer the validator accepted, then returns once the run settles."""
        await workflow.wait_condition(lambda: self._carry != "pending")
        proof = Proof.parse(args[0])
        choice = str(proof.authorizes["choice"])
        actor = Actor.of_proof(proof)
        while waits_to_be_counted(self._run.gate, self._answer):
            # Several approvers: one accepted before this one is counted first.
            await workflow.wait_condition(lambda: self._answer is None)
        gate = self._run.gate
        refused = uncountable_answer(
            gate, self._answer, proof.authorizes.get("gate"), actor, self._run_id
        )
        if refused is not None:
            # Another answer got in first, or the same approver answered twice, in one task.
            raise Refusal(refused[0].value, refused[1])
        assert gate is not None
        _audit(
            "gate.decide",
            True,
            actor,
            graph=self._graph.name,
            run=self._run_id,
            gate=gate.gate,
            answer=choice,
            role=gate.role,
            waited_seconds=(
                (workflow.now() - self._gate_opened_at).total_seconds()
                if self._gate_opened_at is not None
                else None
            ),
        )
        self._answer = GivenAnswer(
            choice, actor, proof.authorizes.get("evidence"), proof.authorizes.get("waiver")
        )
        return await self._after_settling(self._run.settles)

    @decide.validator
    def validate_decide(self, *args: Any) -> None:
        """Refuses, before anything is written, every answer the gate rules refuse."""
        authority, judgement = self._judged(
            args,
            "decide",
            lambda authority, answer: judge_answer(
                authority,
                answer,
                graph=self._graph.name,
                run=self._run_id,
                gate=self._gate_to_judge(),
                spent_nonces=self._run.spent,
                evidence_models=self._evidence_models(),
            ),
        )
        if not judgement.accepted:
            self._refuse(
                authority,
                "gate.decide",
                judgement,
                gate=self._run.gate.gate if self._run.gate else None,
                answer=shorten(judgement.choice),
            )

    @workflow.update(
        name="resume",
        description=(
            "Carry on a run parked at a node its caller could not run, as a caller who can. "
            "Paste what `lockgate sign resume RUN --as YOU` prints."
        ),
    )
    async def resume(self, *args: Any) -> dict[str, Any]:
        """Records a resume the validator accepted, then returns once the run settles."""
        await workflow.wait_condition(lambda: self._carry != "pending")
        proof = Proof.parse(args[0])
        parked = self._parked
        if (
            parked is None
            or self._resumer is not None
            or proof.authorizes.get("node") != parked.node
        ):
            raise Refusal(
                ErrorCode.NOTHING_TO_RESUME.value,
                f"Run '{self._run_id}' is not parked: there is nothing to resume.",
            )
        actor = Actor.of_proof(proof)
        self._spend(actor)
        _audit(
            "run.resume", True, actor, graph=self._graph.name, run=self._run_id, node=parked.node
        )
        self._resumer = actor
        return await self._after_settling(self._run.settles)

    @resume.validator
    def validate_resume(self, *args: Any) -> None:
        """Refuses, before anything is written, a resume the rules refuse."""
        authority, judgement = self._judged(
            args,
            "resume",
            lambda authority, value: judge_resume(
                authority,
                value,
                graph=self._graph.name,
                run=self._run_id,
                execution=self._execution,
                status=self._status,
                parked=self._parked if self._resumer is None else None,
                spent_nonces=self._run.spent,
            ),
        )
        if not judgement.accepted:
            self._refuse(
                authority,
                "run.resume",
                judgement,
                node=self._parked.node if self._parked else None,
            )

    @workflow.update(
        name="cancel",
        description=(
            "End this run for good, as the person who started it. Sent by `lockgate cancel RUN "
            "--as YOU`; unsigned cancels are refused."
        ),
    )
    async def cancel(self, *args: Any) -> dict[str, Any]:
        """Records a cancel the validator accepted, then returns once the run has ended (at the
        gate or park it waits at, or once the node it runs now returns)."""
        await workflow.wait_condition(lambda: self._carry != "pending")
        proof = Proof.parse(args[0])
        if self._canceller is not None or self._status in ("finished", "refused", "cancelled"):
            # Another cancel got in first, or the run ended, after this one was validated.
            raise Refusal(
                ErrorCode.NOTHING_TO_CANCEL.value,
                f"Run '{self._run_id}' has ended or is ending: there is nothing to cancel.",
            )
        actor = Actor.of_proof(proof)
        self._spend(actor)
        reason = proof.authorizes.get("reason")
        self._cancel_reason = reason if isinstance(reason, str) and reason else None
        _audit(
            "run.cancel",
            True,
            actor,
            graph=self._graph.name,
            run=self._run_id,
            reason=self._cancel_reason,
        )
        self._canceller = actor
        return await self._after_settling(self._run.settles)

    @cancel.validator
    def validate_cancel(self, *args: Any) -> None:
        """Refuses, before anything is written, a cancel the rules refuse: anyone's but the
        requester's own, signed for this execution."""
        authority, judgement = self._judged(
            args,
            "cancel",
            lambda authority, value: judge_cancel(
                authority,
                value,
                graph=self._graph.name,
                run=self._run_id,
                execution=self._execution,
                status="cancelled" if self._canceller is not None else self._status,
                requester=self._run.requester,
                spent_nonces=self._run.spent,
            ),
        )
        if judgement.accepted:
            judgement = self._not_cancellable_now(judgement) or judgement
        if not judgement.accepted:
            self._refuse(authority, "run.cancel", judgement)

    def _not_cancellable_now(self, judgement: Judgement) -> Judgement | None:
        """A refusal, for the canceller ``judgement`` accepted, while the run cannot stop where
        it is: before it has begun, or while it waits for a sub-graph run (which would go on
        without it); else None."""
        if not self._begun:
            return Judgement.refuse(
                ErrorCode.NOTHING_TO_CANCEL,
                f"Run '{self._run_id}' has not begun: cancel it once it runs.",
                actor=judgement.actor,
            )
        if self._child is not None:
            return Judgement.refuse(
                ErrorCode.NOTHING_TO_CANCEL,
                f"Run '{self._run_id}' waits for its sub-graph run "
                f"'{self._child.get('run_id')}': cancel that run first.",
                actor=judgement.actor,
            )
        return None

    def _evidence_models(self) -> Mapping[str, type[BaseModel]]:
        """The evidence models of the gate open now (none when no gate is)."""
        if self._run.gate is None or self._run.gate.ask not in self._graph.asks:
            return {}
        return self._graph.asks[self._run.gate.ask].evidence

    def _answerable(self) -> bool:
        return self._run.gate is not None and self._answer is None and self._carry != "pending"

    def _judged(
        self,
        args: Sequence[Any],
        update: str,
        judge: Callable[[Authority, object], Judgement],
    ) -> tuple[Authority, Judgement]:
        """How an update's validator judges what it was sent: refused while the run takes no
        answers, or for a payload that is not one value, else as ``judge`` says."""
        authority = judging_authority()
        value, problem = one_answer(args, update)
        judgement = (
            self._not_ready(authority) or _refused_payload(problem) or judge(authority, value)
        )
        return authority, judgement

    def _not_ready(self, authority: Authority) -> Judgement | None:
        """A refusal while this run cannot take answers: its carried state is not yet believed
        (and its seal does not open now), or it is moving to a new history."""
        if self._carry != "pending":
            return None
        # Validators never replay, so they may consult the secret; the run's own check of this
        # seal is recorded (a local activity) before the answer takes effect.
        info = workflow.info()
        try:
            binding = carry_binding(
                info.workflow_id, self._execution, info.continued_run_id or "", self._start.carried
            )
            opens = authority.sealer.opens(carry_seal(info.headers), "carry", binding)
        except WorkerSecretError:
            opens = False
        if opens:
            return None
        return Judgement.refuse(
            ErrorCode.GATE_NOT_PENDING,
            f"Run '{self._run_id}' takes no answers: the state it was started with was not "
            "handed over by lockgate's workers.",
        )

    def _refuse(
        self, authority: Authority, event: str, judgement: Judgement, **facts: Any
    ) -> NoReturn:
        """Audits a validator's refusal on this run, then raises it."""
        refuse_update(
            authority.audit, event, judgement, graph=self._graph.name, run=self._run_id, **facts
        )

    @workflow.update(
        name="settle",
        description="Wait until the run settles: a gate opens, a node parks, or the run ends.",
    )
    async def settle(self, *args: Any) -> dict[str, Any]:
        """Returns :meth:`show` once the run has settled more than ``after`` times."""
        wait, _ = settle_input(args)
        self._waiting_settles += 1
        try:
            return await self._after_settling(wait.after, released=True)
        finally:
            self._waiting_settles -= 1

    @settle.validator
    def validate_settle(self, *args: Any) -> None:
        """Refuses a settle that could never return or that would crowd out other callers."""
        wait, problem = settle_input(args)
        if problem is None and not 0 <= wait.after <= self._run.settles:
            problem = invalid(
                f"'after' counts the times run '{self._run_id}' has settled (0 to "
                f"{self._run.settles} so far); a settle waits for the next one after it."
            )
        if problem is None and self._waiting_settles >= MAX_WAITING_SETTLES:
            problem = PayloadProblem(
                ErrorCode.RATE_LIMITED.value,
                f"Run '{self._run_id}' already has {MAX_WAITING_SETTLES} callers waiting for it "
                "to settle; ask again when one returns, or read it with the `show` query.",
            )
        if problem is not None:
            raise Refusal(problem.code, problem.sentence, never_stored=True)

    async def _after_settling(self, after: int, *, released: bool = False) -> dict[str, Any]:
        """The run once it has settled more than ``after`` times, or has ended (it settles no
        more), or, for a ``settle`` caller, moves to a new history and answers its waiting
        callers."""
        await workflow.wait_condition(
            lambda: (
                self._run.settles > after
                or self._status in ("finished", "refused", "cancelled")
                or (released and self._releasing)
            )
        )
        view = self._view()
        if self._run.settles <= after and self._status not in ("finished", "refused", "cancelled"):
            # Not settled: the caller asks again (on the next history) with `after` = settles.
            view["moving_to_new_history"] = True
        return view

    @workflow.query(name="show", description="The run: state, channels, trail, gate, budgets.")
    def show(self, *args: Any) -> dict[str, Any]:
        """The run as it stands, with a page of its trail (``{trail_from?, trail_limit?}``)."""
        page = show_input(args)
        return self._view(page.trail_from, page.trail_limit)

    @workflow.query(
        name="awaiting",
        description="What the run waits for: the open gate as its approver is shown it, or the "
        "node it is parked at; with the execution a signed answer names.",
    )
    def awaiting(self) -> dict[str, Any]:
        """The gate or park a signer binds an answer or resume to, as this worker reports it."""
        return {
            "graph": self._graph.name,
            "run_id": self._run_id,
            "execution": self._execution,
            "status": self._status,
            # Nothing of a carried state is reported before its seal has been opened.
            "gate": self._gate_view() if self._answerable() else None,
            "parked": self._parked.to_dict() if self._parked and self._carry != "pending" else None,
        }


def _refused_payload(problem: PayloadProblem | None) -> Judgement | None:
    if problem is None:
        return None
    return Judgement.refuse(ErrorCode(problem.code), problem.sentence)


def _audit(event: str, accepted: bool, actor: Actor, **facts: Any) -> None:
    # Update handlers run again on replay; the audit record is written only the first time.
    if workflow.unsafe.is_replaying():
        return
    authority = current_authority()
    if authority is not None:
        authority.audit.event(event, accepted=accepted, actor=actor.to_dict(), **facts)
