"""The graph interpreter: one Temporal workflow type per declared graph, one class of parts.

A graph run is one concept, :class:`GraphRun`. The class keeps what Temporal finds on it (the
``@workflow.init`` and ``@workflow.run`` of each graph's workflow type, which
:func:`graph_workflow` makes, and its signal, update and query handlers with their validators)
and what ties a run together: its state (:class:`~lockgate.workflows._carry.RunState`, all it
carries to its next history) and where it stands
(:class:`~lockgate.workflows._graph_visibility.RunStanding`), how it waits and moves to a new
history, and the interpreter that starts, runs nodes, parks and finishes. The rest it hands to
parts, each a plain class made with the run's state and told only what else it needs:

- :class:`~lockgate.workflows._graph_signals.SignalInbox`: the signals it receives, measured,
  judged and recorded;
- :class:`~lockgate.workflows._graph_gates.GateKeeper`: holding a gate open until it is decided
  (the rules it applies are the shared gate engine's, :mod:`lockgate.gates._gate_engine`);
- :class:`~lockgate.workflows._graph_agent_steps.AgentStepRunner`: agent steps, their model
  requests, the tool calls the model asks for, and their budgets;
- :class:`~lockgate.workflows._graph_subgraphs.SubgraphRunner`: sub-graph nodes, each a child run;
- :class:`~lockgate.workflows._graph_visibility.RunVisibility`: what Temporal's visibility shows
  of the run (search attributes, memo, current details).

History is the run's log. Node runs are activities (each tool's own, through its pipeline, as
whoever drives the run, under the worker secret's seal; local activities for tools declared
``local=True``); answers are updates, validated before anything is written, or signals, judged
on the worker by the same rules and recorded either way.
Fields, trail, budgets and the open gate are rebuilt by replay and stored nowhere else.

Everything a caller sends is measured and refused with a code before it is stored or echoed;
nothing a stranger sends can fail the run's task, keep it from finishing or from continuing as
new (see ``SECURITY.md``).

The interpreter and its parts change the run's state; its answers and signals read it. What it
shows holds nothing of what anyone holds.

Updates and queries: proving who started a run, answering a gate, resuming a parked run,
cancelling a run, waiting for a run to settle, reading it.

Every update has a validator that refuses, before anything is written, whatever the rules refuse:
a payload of the wrong shape, size or depth, an answer no verified approver gave for exactly this
gate of this execution, a wait that could never end or would crowd out other callers. A refusal
is a code and a sentence, audited once, with no stack trace. Queries write nothing.

Waiting: how a run waits at a gate or a park, and moves to a new history while it does.

A run that waits judges the signals that come, answers its ``settle`` callers, and continues as
new when the server suggests it, carrying everything under the worker secret's seal."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate._errors import LockgateError
from lockgate.activities._activity_inputs import (
    OPEN_START,
    VERIFY_CARRIED,
    OpenStartInput,
    SignalEntry,
    ToolActivityInput,
    VerifyCarriedInput,
    carry_binding,
)
from lockgate.activities._opened_fields import SAME_AS_INPUTS, opened_fields
from lockgate.activities._refusal import Refusal
from lockgate.activities._temporal import CALLER_MISTAKES
from lockgate.gates._authority import Authority, node_refusal_sentence
from lockgate.gates._gate_engine import (
    GivenAnswer,
    uncountable_answer,
    waits_to_be_counted,
)
from lockgate.gates._gates import ParkedNode, awaiting_view
from lockgate.gates._judgements import (
    Judgement,
    judge_answer,
    judge_cancel,
    judge_resume,
    judge_start,
)
from lockgate.gates._limits import (
    MAX_WAITING_SETTLES,
    TRAIL_PAGE,
    PayloadProblem,
    shorten,
)
from lockgate.gates._trail import Outcome, trail_row
from lockgate.graphs._compiled import END_STATE, CompiledGraph, CompiledNode
from lockgate.identity._actors import Actor
from lockgate.identity._proofs import Proof
from lockgate.identity._seals import WorkerSecretError
from lockgate.tools._tool import ToolDefinition
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._accepted_updates import Acceptance, acceptance, believe_update
from lockgate.workflows._activity_options import (
    execute_defined,
    failure_message,
    local,
    local_tool_names,
    recorded_local_tools,
    runs_local,
)
from lockgate.workflows._authority_context import (
    LOCKGATE_WORKFLOW,
    carry_seal,
    compact_results,
    handover_seal,
    judging_authority,
    record_once,
)
from lockgate.workflows._carry import CarriedStateError, RunState, ThisRun, written_fields
from lockgate.workflows._failures import (
    refusals_complete,
    refuse_update,
    refused_run,
)
from lockgate.workflows._generated import GeneratedClass
from lockgate.workflows._graph_agent_steps import AgentStepRunner
from lockgate.workflows._graph_gates import GateKeeper
from lockgate.workflows._graph_inputs import (
    StartGraphInput,
    channel_ok,
    invalid,
    one_answer,
    parse_start,
    settle_input,
    show_input,
    start_proof,
)
from lockgate.workflows._graph_signals import Accepted, SignalInbox
from lockgate.workflows._graph_subgraphs import SubgraphRunner
from lockgate.workflows._graph_visibility import (
    VERSION_MEMO,
    RunStanding,
    RunVisibility,
    ended_status,
    quiet_answers,
)
from lockgate.workflows._history_seals import sealed_end
from lockgate.workflows._signed_starts import await_signed_start
from lockgate.workflows._trail_rows import record_row
from lockgate.workflows._undecodable_starts import UnreadableStart

__all__ = [
    "CancelAccepted",
    "GraphRun",
    "graph_workflow",
]


class CancelAccepted(Exception):
    """Raised where a run waits (a gate, a park) once its requester's cancel was accepted; the
    interpreter catches it and ends the run as cancelled."""


def _refused_payload(problem: PayloadProblem | None) -> Judgement | None:
    if problem is None:
        return None
    return Judgement.refuse(ErrorCode(problem.code), problem.sentence)


_PARKED = object()


"""What running a node returns once it parked the run instead."""


class GraphRun:
    """A graph run: one Temporal workflow type per declared graph, interpreted here.

    In the order a reader meets a run: its state, where it stands, and how it is shown; the
    signals and updates it takes; how it waits; its gates; and the interpreter that starts, runs
    nodes, parks and finishes. Its signals, gates, agent steps, sub-graph nodes and visibility
    are parts made with its state (see ``_use_state``)."""

    # What a graph run is, at any moment.

    graphs: ClassVar[dict[int, CompiledGraph]] = {}

    # Fixed at the start (or by the carried state).
    _graph: CompiledGraph
    _run_id: str
    _execution: str
    _start: StartGraphInput
    _carry: str  # "none"; "pending" until a carried state's seal opens; then "open"
    _carried_signals: int  # how many of the inbox's first entries the carried state brought
    _local_tools: frozenset[str] | None  # as the start check recorded them (None: by patch)
    # The protocol the run's start check recorded (None until one ran; see RUN_PROTOCOL).
    _protocol: int | None
    # Who signed the run's start, once its `start` update was accepted, and the seal on that
    # update, recorded by the run's start check.
    _start_actor: Actor | None
    _start_acceptance: Acceptance | None
    _begun: bool  # the run has settled who started it: no start proof is taken any more
    # The run: what it carries to its next history is exactly `_run`.
    _run: RunState
    # Where it stands (its status, park, refusal, canceller): what its visibility shows.
    _standing: RunStanding
    # Callers (an answer accepted and not counted yet is the gate keeper's).
    _resumer: Actor | None
    _cancel_reason: str | None  # why the run's canceller (see RunStanding) cancelled it
    _waiting_settles: int
    _releasing: bool  # answering the `settle` callers waiting, to move to a new history
    # The parts that work on the run's state (made with it: see _use_state).
    _signals: SignalInbox
    _visibility: RunVisibility
    _gates: GateKeeper
    _agent_steps: AgentStepRunner
    _subgraphs: SubgraphRunner

    def _fresh_state(self, requester: Actor, signals: Sequence[SignalEntry] = ()) -> None:
        self._standing.status = "running"
        self._use_state(
            RunState(
                state=self._graph.start,
                fields=dict(self._graph.defaults),
                trail=[],
                taken={},
                visits={},
                requester=requester,
                driver=requester,
                gate=None,
                gate_openings=0,
                parkings=0,
                spent=[],
                settles=0,
            ),
            signals=signals,
        )
        self._standing.parked = None

    def _use_state(self, run: RunState, *, signals: Sequence[SignalEntry]) -> None:
        """Makes ``run`` the run's state, with the parts that work on it.

        A run's state is replaced only as it starts: by the state it carried, or, once that is
        refused, by a fresh one; its parts are made again with it.
        """
        self._run = run
        this = ThisRun(self._graph, self._run_id, self._execution)
        self._signals = SignalInbox(run, this, waiting=signals)
        self._visibility = RunVisibility(run, self._standing, this)
        self._gates = GateKeeper(
            run,
            self._standing,
            this,
            visibility=self._visibility,
            settled=self._settled,
            wait=self._while_waiting,
        )
        self._agent_steps = AgentStepRunner(
            run,
            this,
            runs_local=self._runs_local,
            continue_as_new_if_due=self._continue_as_new_if_due,
        )
        self._subgraphs = SubgraphRunner(run, this, settled=self._settled)

    def _runs_local(self, definition: ToolDefinition) -> bool:
        """Whether this run runs the tool as a local activity (see :func:`runs_local`)."""
        return runs_local(definition, self._local_tools)

    def _record(self, event: str, **facts: Any) -> None:
        """An audit record of what the run itself did, as its driver (see :func:`record_once`)."""
        record_once(event, self._run.driver, self._graph.name, self._run_id, **facts)

    def _gate_view(self) -> dict[str, Any]:
        assert self._run.gate is not None
        view = dict(self._visibility.gate_record())
        view["options"] = self._run.gate.options
        view["target"] = self._visibility.target()
        return view

    def _view(
        self, trail_from: int | None = None, trail_limit: int | None = TRAIL_PAGE
    ) -> dict[str, Any]:
        """The run, its trail paged (the newest rows unless ``trail_from``); with no limit, the
        whole trail (a finished run's result, which no stranger can make large: refused rows
        are bounded)."""
        graph = self._graph
        total = len(self._run.trail)
        if trail_limit is None:
            first, rows = 0, list(self._run.trail)
        else:
            first = max(total - trail_limit, 0) if trail_from is None else min(trail_from, total)
            rows = self._run.trail[first : first + trail_limit]
        shown: dict[str, Any] = {
            "ok": self._standing.refusal is None,
            "run_id": self._run_id,
            "execution": self._execution,
            "graph": graph.name,
            "version": graph.version,
            "status": self._standing.status,
            "state": self._run.state if self._run.state != END_STATE else None,
            "requester": self._run.requester.to_dict(),
            "awaiting": self._gate_view() if self._run.gate else None,
            "parked": self._standing.parked.to_dict() if self._standing.parked else None,
            "fields": dict(self._run.fields),
            "budgets": {
                code: {"taken": self._run.taken.get(code, 0), "at_most": at_most}
                for code, at_most in graph.budgets.items()
            },
            "trail": rows,
            "trail_from": first,
            "trail_total": total,
            "settles": self._run.settles,
        }
        if self._run.parent is not None:
            shown["parent"] = dict(self._run.parent)
        if self._subgraphs.waiting_for is not None:
            shown["child"] = dict(self._subgraphs.waiting_for)
        if self._run.conversations:
            # What an agent step waiting here has used, for whoever decides whether it goes on.
            shown["conversations"] = {
                step: {"messages": len(record["messages"]), **record["total"]}
                for step, record in self._run.conversations.items()
            }
        if self._run.refused_signals_dropped:
            shown["refused_signals_not_kept"] = self._run.refused_signals_dropped
        if self._run.ignored_inputs:
            shown["ignored_inputs"] = list(self._run.ignored_inputs)
        if self._standing.refusal is not None:
            shown["error"] = {
                "code": self._standing.refusal.code,
                "message": self._standing.refusal.sentence,
            }
        return shown

    def _answer(self, rows_from: int | None = None) -> dict[str, Any]:
        """What an update answers: the run as it stands (its status, gate or park, fields,
        budgets), with the trail rows written since row ``rows_from`` (what an answer, a resume
        or a cancel did), or none; ``trail_from`` and ``trail_total`` say which rows they are.

        An update's answer is written into the run's history, so it carries no more of the
        trail than that: the whole trail is in ``show`` and in the run's result, and an answer
        at every gate, or a start that runs to the end, would otherwise write it there again
        each time."""
        if rows_from is None:
            return self._view(trail_limit=0)
        return self._view(trail_from=rows_from)

    def _settled(self) -> None:
        self._run.settles += 1

    def _take_signalled(self, accepted: Accepted) -> None:
        """An answer or resume a signal carried, accepted by the judge: taken like an update's,
        unless an update got in while the signal was judged (it was promised, so it stands)."""
        if accepted.kind == "decide" and accepted.choice and self._run.gate is not None:
            if self._gates.answer is None:
                self._gates.answer = GivenAnswer(
                    accepted.choice,
                    accepted.actor,
                    accepted.evidence,
                    accepted.waiver,
                    accepted.comment,
                )
                return
        elif (
            accepted.kind == "resume"
            and self._standing.parked is not None
            and self._resumer is None
        ):
            self._resumer = accepted.actor
            return
        self._signals.refuse_late(accepted)

    def _carried(self) -> dict[str, Any]:
        """The run's state for its next history, with the signals not judged yet (as many as
        it carries)."""
        return dataclasses.replace(self._run, inbox=self._signals.carry()).to_dict()

    def _restore(self, carried: RunState) -> None:
        self._use_state(
            dataclasses.replace(carried, inbox=[]),
            signals=[SignalEntry(**entry) for entry in carried.inbox],
        )
        if self._run.gate is not None:
            self._standing.status = "waiting"

    # The signal handler and the judging of what signals brought.

    @workflow.signal(dynamic=True)
    def receive_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """Every signal: ``decide`` and ``resume`` are judged on the worker; others refused.

        Nothing is dropped: a payload too large, too deep or unreadable is still judged (and
        refused, unread), so it is audited and counted in the trail (see :class:`SignalInbox`).
        """
        self._signals.receive(name, args)

    async def _judge_signals(self) -> Accepted | None:
        """Judges the signals waiting against what the run waits for now (see
        :meth:`SignalInbox.judge`)."""
        return await self._signals.judge(
            status=self._standing.status,
            gate=self._run.gate if self._gates.answer is None else None,
            parked=self._standing.parked if self._resumer is None else None,
        )

    # The `start`, `decide`, `resume`, `cancel` and `settle` updates and the `show` and
    # `awaiting` queries of every graph's workflow.

    @workflow.update(
        name="start",
        description=(
            "Say who started this run: paste the signed start that `lockgate sign start RUN "
            "--as YOU` prints. Taken once, before the run begins."
        ),
    )
    async def start(self, *args: Any) -> dict[str, Any]:
        """Records the starter the validator accepted, then returns once the run settles (or at
        once, asked with ``{proof, settle: false}``). The run's start check records the seal
        on it (see ``_open_start``)."""
        accepted = acceptance(args)
        value, settle, _ = start_proof(args)
        actor = Actor.of_proof(Proof.parse(value))
        if self._begun or self._start_actor is not None:
            # Another start proof got in first, validated in the same task as this one.
            raise Refusal(
                ErrorCode.GATE_NOT_PENDING.value,
                f"Run '{self._run_id}' already knows who started it.",
            )
        record_once("run.start", actor, self._graph.name, self._run_id)
        self._start_acceptance = accepted
        self._start_actor = self._run.requester = self._run.driver = actor
        if not settle:
            return self._answer()
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
        if not judgement.allowed:
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
        if self._standing.refusal is not None:
            return Judgement.refuse(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{self._run_id}' was refused at its start, so nothing runs for any proof: "
                f"{self._standing.refusal.sentence}",
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
        proof = await self._accepted_proof(args)
        choice = str(proof.authorizes["choice"])
        actor = Actor.of_proof(proof)
        while waits_to_be_counted(self._run.gate, self._gates.answer):
            # Several approvers: one accepted before this one is counted first.
            await workflow.wait_condition(lambda: self._gates.answer is None)
        gate = self._run.gate
        refused = uncountable_answer(
            gate, self._gates.answer, proof.authorizes.get("gate"), actor, self._run_id
        )
        if refused is not None:
            # Another answer got in first, or the same approver answered twice, in one task.
            raise Refusal(refused[0].value, refused[1])
        assert gate is not None
        record_once(
            "gate.decide",
            actor,
            self._graph.name,
            self._run_id,
            gate=gate.gate,
            answer=choice,
            role=gate.role,
            waited_seconds=self._gates.waited_seconds(),
        )
        self._gates.answer = GivenAnswer(
            choice,
            actor,
            proof.authorizes.get("evidence"),
            proof.authorizes.get("waiver"),
            proof.authorizes.get("comment"),
        )
        return await self._after_settling(self._run.settles, rows_from=len(self._run.trail))

    async def _accepted_proof(self, args: Sequence[Any]) -> Proof:
        """The proof of an update its validator accepted, once the run believes the update (its
        history records the accepting worker's seal) and the state the run carried: an update
        handler takes nothing before."""
        await believe_update(args)
        await workflow.wait_condition(lambda: self._carry != "pending")
        return Proof.parse(args[0])

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
                gate=self._gates.to_judge(),
                spent_nonces=self._run.spent,
                evidence_models=self._gates.evidence_models(),
            ),
        )
        if not judgement.allowed:
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
        proof = await self._accepted_proof(args)
        parked = self._standing.parked
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
        self._run.spend(actor)
        record_once("run.resume", actor, self._graph.name, self._run_id, node=parked.node)
        self._resumer = actor
        return await self._after_settling(self._run.settles, rows_from=len(self._run.trail))

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
                status=self._standing.status,
                parked=self._standing.parked if self._resumer is None else None,
                spent_nonces=self._run.spent,
            ),
        )
        if not judgement.allowed:
            self._refuse(
                authority,
                "run.resume",
                judgement,
                node=self._standing.parked.node if self._standing.parked else None,
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
        proof = await self._accepted_proof(args)
        if self._standing.canceller is not None or self._standing.ended:
            # Another cancel got in first, or the run ended, after this one was validated.
            raise Refusal(
                ErrorCode.NOTHING_TO_CANCEL.value,
                f"Run '{self._run_id}' has ended or is ending: there is nothing to cancel.",
            )
        actor = Actor.of_proof(proof)
        self._run.spend(actor)
        reason = proof.authorizes.get("reason")
        self._cancel_reason = reason if isinstance(reason, str) and reason else None
        record_once("run.cancel", actor, self._graph.name, self._run_id, reason=self._cancel_reason)
        self._standing.canceller = actor
        return await self._after_settling(self._run.settles, rows_from=len(self._run.trail))

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
                status="cancelled"
                if self._standing.canceller is not None
                else self._standing.status,
                requester=self._run.requester,
                spent_nonces=self._run.spent,
            ),
        )
        if judgement.allowed:
            judgement = self._not_cancellable_now(judgement) or judgement
        if not judgement.allowed:
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
        child = self._subgraphs.waiting_for
        if child is not None:
            return Judgement.refuse(
                ErrorCode.NOTHING_TO_CANCEL,
                f"Run '{self._run_id}' waits for its sub-graph run "
                f"'{child.get('run_id')}': cancel that run first.",
                actor=judgement.actor,
            )
        return None

    def _answerable(self) -> bool:
        return (
            self._run.gate is not None and self._gates.answer is None and self._carry != "pending"
        )

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

    async def _after_settling(
        self, after: int, *, released: bool = False, rows_from: int | None = None
    ) -> dict[str, Any]:
        """The run once it has settled more than ``after`` times, or has ended (it settles no
        more), or, for a ``settle`` caller, moves to a new history and answers its waiting
        callers; with the trail rows since ``rows_from`` (see :meth:`_answer`)."""
        await workflow.wait_condition(
            lambda: (
                self._run.settles > after or self._standing.ended or (released and self._releasing)
            )
        )
        view = self._answer(rows_from)
        if self._run.settles <= after and not self._standing.ended:
            # Not settled: the caller asks again (on the next history) with `after` = settles.
            view["moving_to_new_history"] = True
        return view

    @workflow.query(name="show", description="The run: state, fields, trail, gate, budgets.")
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
        # Nothing of a carried state is reported before its seal has been opened.
        return awaiting_view(
            graph=self._graph.name,
            run_id=self._run_id,
            execution=self._execution,
            status=self._standing.status,
            gate=self._gate_view() if self._answerable() else None,
            parked=self._standing.parked if self._carry != "pending" else None,
        )

    # Waiting for an answer or a resume, and continuing as new when it is due.

    async def _continue_as_new_if_due(self) -> None:
        """Starts a fresh history when the server suggests it; nothing is lost or run twice.

        Callers of ``settle`` waiting on this history are answered first with the run as it
        stands, so no stranger can hold the run here. A caller whose answer was accepted is
        waiting for the run to settle: the run moves on until it does, and continues as new
        then. Fields, trail, budgets, an open gate (so signed answers stay good) and signals
        not judged yet are carried, under the worker secret's seal; a flood of signals cannot
        keep the run from moving on.
        """
        if not workflow.info().is_continue_as_new_suggested():
            return
        if self._waiting_settles:
            self._releasing = True
            await workflow.wait_condition(lambda: self._waiting_settles == 0)
            self._releasing = False
        if not workflow.all_handlers_finished():
            return
        if (
            self._gates.answer is not None
            or self._resumer is not None
            or self._standing.canceller is not None
        ):
            return
        workflow.continue_as_new(
            StartGraphInput(version=self._graph.version, carried=self._carried())
        )

    async def _while_waiting(self) -> None:
        """One turn of waiting at a gate or a park: continue as new when it is due (signals not
        judged yet go along), else judge the signals that came. Which answer or resume was
        accepted, the caller reads from the run's state.

        Raises:
            CancelAccepted: The run's requester cancelled it: it waits no more.
        """

        def answered() -> bool:
            return self._gates.answer is not None or self._resumer is not None

        await workflow.wait_condition(
            lambda: (
                answered()
                or bool(self._signals.waiting)
                or self._gates.deadline_passed
                or workflow.info().is_continue_as_new_suggested()
                or self._standing.canceller is not None
            )
        )
        if self._standing.canceller is not None:
            raise CancelAccepted
        if answered():
            return
        if workflow.info().is_continue_as_new_suggested():
            await self._continue_as_new_if_due()
            if not self._signals.waiting and not answered():
                # A caller's handler still runs: move on once it has finished.
                await workflow.wait_condition(
                    lambda: (
                        answered()
                        or bool(self._signals.waiting)
                        or workflow.all_handlers_finished()
                        or self._standing.canceller is not None
                    )
                )
                return
        if self._signals.waiting and not answered():
            accepted = await self._judge_signals()
            if accepted is not None:
                self._take_signalled(accepted)

    # Holding a gate open until it is decided (see GateKeeper), and the routes and budgets out
    # of a state.

    def _take(self, origin: str, code: str) -> str:
        transition = self._graph.routes[origin][code]
        if transition.at_most is not None and transition.then_ask is not None:
            taken = self._run.taken.get(code, 0)
            if taken >= transition.at_most:
                return transition.then_ask
            self._run.taken[code] = taken + 1
        return transition.to

    async def _hold_gate(self, state: str) -> None:
        """Holds gate ``state`` open until it is decided, then takes the way it leads."""
        decided = await self._gates.hold(state)
        self._run.state = self._take(state, decided)
        # Where the decision opens another gate at once, or ends the run with nothing left to
        # judge, no one can read the memo between: that gate's write, or the run's end, says it.
        unseen = quiet_answers(self._protocol) and (
            self._run.state in self._graph.asks
            or (self._run.state == END_STATE and not self._signals.waiting)
        )
        self._visibility.show_gate_closed(unseen=unseen)
        self._visibility.show_moved_on(self._run.state, protocol=self._protocol)
        self._agent_steps.gate_decided(state)

    # The interpreter; every graph's workflow class is made from this one (graph_workflow).

    def _setup(self, starts: Sequence[Any]) -> None:
        info = workflow.info()
        self._run_id = info.workflow_id
        # The first run id names this execution across continue-as-new and resets; a new
        # execution under the same workflow id gets a new one.
        self._execution = info.first_execution_run_id
        self._standing = RunStanding(status="running")
        self._resumer = None
        self._cancel_reason = None
        self._waiting_settles = 0
        self._releasing = False
        self._carry = "none"  # "pending" until a carried state's seal is opened, then "open"
        self._carried_signals = 0
        self._unserved_version: object = None
        self._start_actor = None
        self._start_acceptance = None
        self._begun = False
        self._protocol = None
        # The tools this run runs local, as its start check recorded them (None: a run recorded
        # before runs named them, which decides by patch; see `runs_local`).
        self._local_tools: frozenset[str] | None = None
        start, problem = parse_start(starts)
        self._start = start
        versions = type(self).graphs
        version, version_problem = self._choose_version(start)
        problem = problem or version_problem
        self._graph = versions[version]
        self._fresh_state(
            Actor.unverified(start.channel if channel_ok(start.channel) else "temporal")
        )
        if problem is None and start.carried is not None:
            problem = self._take_carried(start.carried)
        elif problem is None and start.handed is not None:
            if workflow.info().parent is None:
                problem = PayloadProblem(
                    ErrorCode.UNAUTHORIZED.value,
                    "'handed' is lockgate's own, handed by a parent run to the sub-graph it "
                    "starts: leave it out.",
                )
        elif (
            problem is None
            and start.proof is None
            and not start.signed
            and start.scheduled is None
            and self._graph.needs_signed_start
        ):
            problem = PayloadProblem(
                ErrorCode.UNAUTHORIZED.value,
                f"'{self._graph.name}' has human gates, so a run starts only from a signed "
                "start (`lockgate start ... --as YOU`): four eyes need to know who asked for "
                "the work. A graph may declare @graph(..., allow_unsigned_start=True).",
            )
        self._standing.refusal = problem
        if problem is None and start.signed:
            self._standing.status = "starting"

    def _choose_version(self, start: StartGraphInput) -> tuple[int, PayloadProblem | None]:
        versions = type(self).graphs
        newest = max(versions)
        name = versions[newest].name
        if start.carried is not None and start.version in versions:
            # A continued run keeps the version it started on (believed with its seal).
            return start.version, None
        pinned = _pinned_version(versions)
        if start.carried is not None:
            # Refused once its seal is judged (a forgery is refused as one, and audited).
            self._unserved_version = start.version
            return pinned, None
        if start.carried is None and start.version is not None and start.version != newest:
            return pinned, invalid(
                f"New runs of '{name}' start on its newest version ({newest}); version "
                f"{start.version} only finishes the runs that started on it."
            )
        return pinned, None

    def _take_carried(self, carried: dict[str, Any]) -> PayloadProblem | None:
        """Restores a carried state, believed only once its seal opens (see ``_interpret``)."""
        if workflow.info().continued_run_id is None:
            return invalid(
                "'carried' is lockgate's own, handed over only by the run's own continue-as-new: "
                "leave it out."
            )
        try:
            restored = RunState.from_dict(carried)
        except CarriedStateError as error:
            return PayloadProblem(
                ErrorCode.UNAUTHORIZED.value, f"The carried state was refused: {error}."
            )
        self._restore(restored)
        # Signal handlers append after these: they run once this constructor has.
        self._carried_signals = len(self._signals.waiting)
        self._carry = "pending"
        return None

    async def _interpret(self) -> dict[str, Any]:
        if self._carry == "pending":
            await self._open_carried()
        elif self._standing.refusal is None:
            await self._take_starter()
            if self._standing.refusal is None:
                await self._open_start()
        self._begun = True
        if self._standing.refusal is not None:
            self._standing.status = "refused"
            self._settled()
            if workflow.memo_value(VERSION_MEMO, default=None) is not None:
                # A version the starter claimed is put right even on a refused run. (Runs whose
                # starter claimed none write nothing here, as they always have: replay holds.)
                self._visibility.sync_memo()
            shown = await self._finish()
            if refusals_complete(self._protocol, REFUSALS_COMPLETE):
                return shown
            raise refused_run(self._standing.refusal.code, self._standing.refusal.sentence, shown)
        self._visibility.sync_memo()
        self._visibility.upsert_search_attributes()
        try:
            while self._run.state != END_STATE:
                if self._standing.canceller is not None:
                    # Accepted while a node ran: the run stops before its next step.
                    raise CancelAccepted
                await self._continue_as_new_if_due()
                if self._run.state in self._graph.asks:
                    await self._hold_gate(self._run.state)
                else:
                    await self._run_node(self._run.state)
        except CancelAccepted:
            return await self._end_cancelled()
        return await self._finish()

    async def _end_cancelled(self) -> dict[str, Any]:
        """Ends the run its requester cancelled, where it stood: a trail row says who and why,
        its gate or park is closed, and its status is ``cancelled``."""
        actor = self._standing.canceller
        assert actor is not None
        self._gates.stop_deadline_timer()
        row = trail_row(self._run.state, "cancel", "cancelled", actor)
        if self._cancel_reason is not None:
            row["why"] = self._cancel_reason
        record_row(self._run.trail, row)
        self._visibility.show_cancelled()
        self._run.gate = None
        self._standing.parked = None
        self._gates.answer = None
        self._resumer = None
        self._standing.status = "cancelled"
        self._run.state = END_STATE
        self._settled()
        return await self._finish()

    async def _take_starter(self) -> None:
        """Who started the run: the signer of the proof its ``start`` update brought (it names
        this execution; a client sends it right after the start), awaited for as long as
        :data:`SIGNED_START_WITHIN` from the start where the start says it is signed; else the
        unverified starter."""
        missing = (
            await await_signed_start(lambda: self._start_actor is not None, "its start proof")
            if self._start.signed
            else None
        )
        if self._start_actor is not None:
            self._run.requester = self._run.driver = self._start_actor
        elif missing is not None:
            self._standing.refusal = PayloadProblem(
                ErrorCode.UNAUTHORIZED.value,
                f"Run '{self._run_id}' was started as signed and holds no start proof, so "
                f"nothing ran: {missing}. (`lockgate sign start {self._run_id} --as YOU` "
                "prints one for this execution.)",
            )
        self._standing.status = "running"

    async def _open_carried(self) -> None:
        info = workflow.info()
        try:
            verdict = await local(
                VERIFY_CARRIED,
                VerifyCarriedInput(
                    carried=self._start.carried,
                    seal=carry_seal(info.headers),
                    workflow_id=info.workflow_id,
                    execution=self._execution,
                    previous_run=info.continued_run_id,
                    local_tools=local_tool_names(self._graph.tools()),
                ),
            )
        except ActivityError as error:
            verdict = {
                "ok": False,
                "reason": f"It could not be checked: {failure_message(error)}",
            }
        if "protocol" in verdict:
            self._protocol = int(verdict["protocol"])
        if verdict["ok"] and self._unserved_version is None:
            self._carry = "open"
            self._local_tools = recorded_local_tools(verdict)
            return
        if verdict["ok"]:
            served = ", ".join(str(v) for v in sorted(type(self).graphs))
            verdict = {
                "code": ErrorCode.VALIDATION_ERROR.value,
                "reason": f"This worker serves versions {served} of '{self._graph.name}', not "
                f"{self._unserved_version}: the run it continues started on a version no longer "
                "served here.",
            }
        # Nothing of a refused carried state is believed: the run shows the refusal only. The
        # signals it carried were sent to another run: judging them here would write audit
        # records, and trail rows, of answers nobody gave this run.
        self._fresh_state(
            Actor.unverified("temporal"), signals=self._signals.waiting[self._carried_signals :]
        )
        self._carry = "refused"
        code = str(verdict.get("code") or ErrorCode.UNAUTHORIZED.value)
        self._standing.refusal = PayloadProblem(code, str(verdict["reason"]))

    async def _open_start(self) -> None:
        """Checks the starting fields and the start proof on the worker (a local activity, so
        the model's validators and default factories run once and replay reads their result)."""
        try:
            opened = await local(
                OPEN_START,
                OpenStartInput(
                    graph=self._graph.name,
                    version=self._graph.version,
                    run=self._run_id,
                    execution=self._execution,
                    inputs=self._start.inputs,
                    proof=self._start.proof,
                    local_tools=local_tool_names(self._graph.tools()),
                    accepted=self._start_acceptance.made if self._start_acceptance else None,
                    **self._handed_over(),
                    **self._scheduled(),
                ),
            )
        except ActivityError as error:
            opened = {
                "fields": None,
                "code": ErrorCode.INTERNAL_ERROR.value,
                "reason": f"The start could not be checked: {failure_message(error)}",
            }
        if self._start_acceptance is not None and "accepted" in opened:
            # The `start` update is believed only now, before anything runs as its signer.
            self._start_acceptance.confirm(opened["accepted"])
        if "protocol" in opened:
            self._protocol = int(opened["protocol"])
        fields = written_fields(opened)
        if fields is None:
            self._standing.refusal = PayloadProblem(str(opened["code"]), str(opened["reason"]))
            return
        self._run.fields = opened_fields(fields, opened.get(SAME_AS_INPUTS), self._start.inputs)
        self._local_tools = recorded_local_tools(opened)
        self._run.ignored_inputs = list(opened.get("ignored_inputs") or [])
        if opened.get("actor") is not None:
            self._run.requester = Actor.from_dict(opened["actor"])
            self._run.driver = self._run.requester
        if opened.get("parent") is not None:
            self._run.parent = dict(opened["parent"])
            self._run.depth = int(opened.get("depth") or 1)

    def _scheduled(self) -> dict[str, Any]:
        """What a scheduled run's start check needs: its grant, and when the server started it
        (nothing for any other run, whose start check input stays as it was)."""
        if self._start.scheduled is None:
            return {}
        started = workflow.info().workflow_start_time
        return {"scheduled": self._start.scheduled, "started_at": started.timestamp()}

    def _handed_over(self) -> dict[str, Any]:
        """What a sub-graph run's start activity needs to open its handover: what it was handed,
        the seal on it, and its parent as the server names it (nothing for any other run)."""
        parent = workflow.info().parent
        if self._start.handed is None or parent is None:
            return {}
        return {
            "handed": self._start.handed,
            "seal": handover_seal(workflow.info().headers),
            "parent_id": parent.workflow_id,
            "parent_run": parent.run_id,
        }

    async def _run_node(self, state: str) -> None:
        node = self._graph.nodes[state]
        visit = self._run.visits.get(state, 0) + 1
        self._run.visits[state] = visit
        ran: dict[str, Any] = {}
        data: Any
        if node.subgraph is not None:
            child = await self._subgraphs.run(node, visit)
            ran["child"] = child.child
            if child.problem is not None:
                await self._park(node, "failed", child.problem, ())
                return
            data = child.fields
        elif node.agent is not None:
            ended = await self._agent_steps.run(node, visit)
            if ended.problem is not None:
                await self._park(node, "failed", ended.problem, ())
                return
            if ended.output is None:
                return  # its budget is spent: the run moved on to the gate that decides
            data, ran = ended.output, ended.ran
        else:
            data = await self._run_tool(node, visit)
            if data is _PARKED:
                return
        problem = self._write(node, data)
        if problem is not None:
            await self._park(node, "failed", problem, ())
            return
        record_row(self._run.trail, trail_row(state, node.tool, "ran", self._run.driver, **ran))
        self._run.add_maker()
        if node.route_enum is not None:
            value = data if node.decides_on == "" else (data or {}).get(node.decides_on)
            code = _case(node.route_cases, value)
            if code is None:
                await self._park(
                    node,
                    "failed",
                    f"it routes on {node.route_enum.__name__} but returned no value of it "
                    f"({shorten(repr(value))}); a node that decides has to say what it decided",
                    (),
                )
                return
            self._run.state = self._take(state, code)
        elif state in self._graph.edges:
            self._run.state = self._graph.edges[state].to
        else:
            self._run.state = END_STATE

    async def _run_tool(self, node: CompiledNode, visit: int) -> Any:
        """Runs a tool node's activity: its result's data, or ``_PARKED`` once it parked."""
        state = node.state
        step = f"{self._run_id}:{state}:{visit}"
        call = ToolActivityInput(
            arguments={name: self._run.fields.get(name) for name in node.reads},
            actor=self._run.driver.to_dict(),
            request_id=step,
            # The execution keeps a new execution under this id from passing for this one; a
            # reset keeps it, so a step re-run after a reset has the key its first run had.
            idempotency_key=f"{self._run_id}/{self._execution}:{state}:{visit}",
            confirmed=True,
            node=state,
        )
        definition = node.definition
        assert definition is not None
        try:
            # The run reads whether it succeeded, its data and its error: nothing more kept.
            with compact_results():
                result = await execute_defined(
                    definition,
                    call,
                    local=self._runs_local(definition),
                    summary=f"{node.tool} as {self._run.driver.actor}",
                )
        except ActivityError as error:
            await self._park_after_error(node, error)
            return _PARKED
        if not result.get("success"):
            problem = (result.get("error") or {}).get("message") or "it reported a failure"
            await self._park(node, "failed", f"it ran and reported: {problem}", ())
            return _PARKED
        return result.get("data")

    def _write(self, node: CompiledNode, data: Any) -> str | None:
        graph = self._graph
        if node.writes:
            written = {name: (data or {}).get(name) for name in node.writes}
        elif isinstance(data, dict) and node.route_enum is None:
            strangers = sorted(key for key in data if key not in graph.fields)
            if strangers:
                return (
                    f"it returned {', '.join(strangers)}, which is not a field of this graph; "
                    "nothing it returned was written"
                )
            written = dict(data)
        else:
            written = {}
        for name, value in written.items():
            self._run.fields[name] = value
            for list_field, source in graph.appends.items():
                if source == name:
                    self._run.fields[list_field] = [
                        *(self._run.fields.get(list_field) or []),
                        value,
                    ]
        return None

    async def _park_after_error(self, node: CompiledNode, error: ActivityError) -> None:
        cause = error.cause
        if isinstance(cause, ApplicationError) and cause.type == ErrorCode.FORBIDDEN.value:
            details = cause.details[0] if cause.details else {}
            why = details.get("why") if isinstance(details, dict) else None
            await self._park(node, "refused", why or cause.message, node.needs)
            return
        code = cause.type if isinstance(cause, ApplicationError) else None
        message = failure_message(error)
        if code in CALLER_MISTAKES:
            await self._park(node, "failed", f"{message.rstrip('.')} ({code})", ())
        else:
            await self._park(node, "failed", f"it failed after its retries: {message}", ())

    async def _park(
        self, node: CompiledNode, outcome: Outcome, why: str, needs: Sequence[str]
    ) -> None:
        self._run.parkings += 1
        self._standing.parked = ParkedNode(
            self._graph.name, self._run_id, node.state, node.tool, tuple(needs), self._run.parkings
        )
        row = trail_row(
            node.state,
            node.tool,
            outcome,
            self._run.driver,
            needs=list(needs),
            why=node_refusal_sentence(node.state, node.tool, why),
        )
        record_row(self._run.trail, row)
        self._standing.status = "parked"
        self._record("node.park", node=node.state, operation=node.tool, parked_because=outcome)
        self._visibility.upsert_search_attributes()
        self._visibility.show_parked(row["why"])
        self._settled()
        while self._resumer is None:
            await self._while_waiting()
        actor, self._resumer = self._resumer, None
        record_row(self._run.trail, trail_row(node.state, node.tool, "resumed", actor))
        self._run.driver = actor
        self._standing.parked = None
        self._standing.status = "running"
        self._visibility.show_resumed()
        self._visibility.show_moved_on(node.state, protocol=self._protocol)

    async def _finish(self) -> dict[str, Any]:
        ended_early = self._standing.status in ("refused", "cancelled")
        if not ended_early:
            self._standing.status = ended_status(self._run.declined, self._protocol)
            self._run.state = END_STATE
            self._settled()
        self._visibility.show_ended(protocol=self._protocol)
        while True:
            while self._signals.waiting:
                await self._judge_signals()
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._signals.waiting:
                # A signal that arrived while handlers finished is judged too: none is dropped.
                return self._view(trail_limit=None)


class UnservedVersionError(LockgateError):
    """A run started on a graph version this worker does not serve.

    Raised in workflow code, outside the workflow's failure types, so it fails the run's task,
    loudly and visibly in the Temporal UI, and the task is retried: a worker that serves the
    version (deploy the old ``@graph(..., version=N)`` class beside the new one) takes it up and
    the run carries on where it was.
    """


REFUSALS_COMPLETE = "lockgate:refusals-complete"


"""The patch marking a run refused before any start check as one that completes (with its
refusal as its result) rather than fails; a run whose start check ran records that instead."""


UNMARKED_VERSION = 1


"""The version a run records no marker for: a graph's first (``@graph``'s default)."""


def _pinned_version(versions: dict[int, CompiledGraph]) -> int:
    """The version a run follows for its whole life, even after newer ones are deployed.

    A new run takes the newest version this worker serves. Past version 1 it records the patch
    ``lockgate:<graph>@v<version>``, which a replay finds. On version 1 it records nothing, as
    most graphs never have another: a patch marker also writes a search attribute
    (``TemporalChangeVersion``), one more visibility write per run. A replay that finds no marker
    of a later version served here is on version 1; runs recorded before this rule carry a ``@v1``
    marker, which replay asks for (asking while replaying writes nothing). A run on a version not
    served here fails its task until a worker that serves it comes back (see
    :class:`UnservedVersionError`).
    """
    ordered = sorted(versions, reverse=True)
    name = versions[ordered[0]].name
    for version in ordered:
        if version != UNMARKED_VERSION:
            if workflow.patched(_version_patch(name, version)):
                return version
            continue
        if workflow.unsafe.is_replaying():
            workflow.patched(_version_patch(name, version))
        return version
    served = ", ".join(str(version) for version in sorted(versions))
    raise UnservedVersionError(
        f"Run '{workflow.info().workflow_id}' of '{name}' started on a version this worker does "
        f"not serve (it serves {served}); its version is in its memo (lockgate_version). Serve "
        "that version's @graph class beside the new one until its runs finish: this task is "
        "retried and the run carries on."
    )


def _version_patch(graph: str, version: int) -> str:
    """The patch marking a run of ``graph`` pinned to ``version``."""
    return f"lockgate:{graph}@v{version}"


def _case(cases: Mapping[Any, str], value: Any) -> str | None:
    """The case a decision names, from the table compiled off the enum's members."""
    try:
        return cases.get(value)
    except TypeError:  # unhashable: a list or a dict is no member's value
        return None


_made: dict[tuple[str, tuple[tuple[int, int], ...]], type[GraphRun]] = {}


_sequence = 0


def graph_workflow(name: str, versions: dict[int, CompiledGraph]) -> type[GraphRun]:
    """The workflow class of graph ``name`` (workflow type ``name``) serving ``versions``.

    Each distinct set of compiled versions gets its own class (two workers in one process may
    serve different versions of one graph), made once and named after the graph.
    """
    global _sequence
    key = (name, tuple(sorted((version, id(graph)) for version, graph in versions.items())))
    if key in _made:
        return _made[key]
    _sequence += 1
    made = GeneratedClass("Graph_" + re.sub(r"\W", "_", name) + f"_{_sequence}")

    @workflow.init
    @made.method
    def __init__(self: GraphRun, *starts: Any) -> None:
        self._setup(starts)

    @workflow.run
    @made.method
    async def run(self: GraphRun, *starts: Any) -> Any:
        # A sub-graph run's end, sealed for its parent (a payload); any other run's view.
        return sealed_end(await self._interpret())

    namespace = {
        "__doc__": f"The workflow of graph '{name}'.",
        LOCKGATE_WORKFLOW: True,
        "graphs": dict(versions),
        "__init__": __init__,
        "run": run,
    }
    # Unsandboxed: the interpreter is lockgate's own deterministic code (the saved-history
    # replay tests guard it), and the sandbox's per-payload context lookups were the largest
    # single cost of a graph run in bench/throughput.py's profile.
    defined = workflow.defn(name=name, failure_exception_types=[UnreadableStart], sandboxed=False)(
        made.make((GraphRun,), namespace)
    )
    _made[key] = defined
    return defined
