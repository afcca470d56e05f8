"""The graph interpreter: one Temporal workflow type per declared graph.

History is the run's log. Node runs are activities (each tool's own, through its pipeline, as
whoever drives the run); answers are updates, validated before anything is written, or signals,
judged on the worker by the same rules and recorded either way. Channels, trail, budgets and the
open gate are rebuilt by replay and stored nowhere else.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar, NoReturn

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy, SearchAttributeUpdate
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate.activities import ToolDefinition
from lockgate.activities._temporal import (
    CALLER_MISTAKES,
    JudgeInput,
    ToolActivityInput,
    VerifyStartInput,
)
from lockgate.gating import (
    Actor,
    Authority,
    ErrorCode,
    GateChoice,
    Judgement,
    OpenGate,
    ParkedNode,
    Proof,
    judge_answer,
    judge_resume,
    node_refusal_sentence,
)
from lockgate.workflows import _generated
from lockgate.workflows._authority_context import current_authority
from lockgate.workflows._compile import CompiledGraph, CompiledNode
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)

__all__ = [
    "GateInbox",
    "GraphRun",
    "SettleInput",
    "StartGraphInput",
    "graph_workflow",
    "node_retry_policy",
]

_END = "__end__"
_LOCAL = timedelta(seconds=30)
_DEFAULT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=3,
)


@dataclass
class StartGraphInput:
    """The input a graph run starts with.

    Attributes:
        inputs: Starting channel values; keys that are not channels of the graph are dropped.
        proof: A signed proof of ``{kind: start, graph, run, inputs}`` (the inputs' digest); the
            verified signer becomes the run's requester. Without one the requester is
            ``unverified:<channel>``.
        channel: The channel of an unsigned starter.
        version: The graph version to run (the newest this worker serves when omitted).
        carried: State carried over by continue-as-new (lockgate's own).
    """

    inputs: dict[str, Any] = field(default_factory=dict)
    proof: dict[str, Any] | None = None
    channel: str = "temporal"
    version: int | None = None
    carried: dict[str, Any] | None = None


@dataclass
class SettleInput:
    """Waits until the run settles (a gate open, a node parked, or the run over) past ``after``."""

    after: int = 0


@dataclass
class GateInbox:
    """A signal waiting to be judged on the worker."""

    name: str
    value: Any
    decodable: bool = True


def heartbeat_timeout(definition: ToolDefinition) -> timedelta | None:
    """How soon a dead worker running this tool is noticed (see ``heartbeat_seconds``)."""
    seconds = definition.heartbeat_seconds
    return timedelta(seconds=seconds) if seconds is not None else None


def node_retry_policy(node: CompiledNode) -> RetryPolicy:
    """How a node's own failures are retried; caller mistakes never are."""
    retry = node.definition.retry
    if retry is None:
        base = _DEFAULT_RETRY
    else:
        base = RetryPolicy(
            initial_interval=timedelta(seconds=retry.initial_interval_seconds),
            backoff_coefficient=retry.backoff,
            maximum_interval=timedelta(seconds=retry.max_interval_seconds),
            maximum_attempts=retry.max_attempts,
        )
    return RetryPolicy(
        initial_interval=base.initial_interval,
        backoff_coefficient=base.backoff_coefficient,
        maximum_interval=base.maximum_interval,
        maximum_attempts=base.maximum_attempts,
        non_retryable_error_types=sorted(CALLER_MISTAKES),
    )


def _first_sentence_error(error: BaseException) -> str:
    cause: BaseException | None = error
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or error)


class GraphRun:
    """The interpreter every graph's workflow class inherits; see :func:`graph_workflow`."""

    graphs: ClassVar[dict[int, CompiledGraph]] = {}

    # Set up ------------------------------------------------------------------------------------

    def _setup(self, starts: Sequence[Any]) -> None:
        info = workflow.info()
        self._run_id = info.workflow_id
        self._refusal: dict[str, Any] | None = None
        self._status = "running"
        self._trail: list[dict[str, Any]] = []
        self._taken: dict[str, int] = {}
        self._visits: dict[str, int] = {}
        self._gate: OpenGate | None = None
        self._gate_openings = 0
        self._parked: ParkedNode | None = None
        self._parkings = 0
        self._spent: list[str] = []
        self._inbox: list[GateInbox] = []
        self._answer: tuple[str, Actor] | None = None
        self._resumer: Actor | None = None
        self._settles = 0
        self._dropped_inputs: list[str] = []
        start, problem = self._parse_start(starts)
        if start.carried is not None and info.continued_run_id is None:
            # `carried` restores requester, driver, state and budgets unverified: honoured from
            # anyone's start, it would let an unsigned caller run any node as anyone.
            start = StartGraphInput()
            problem = (
                "'carried' is lockgate's own, handed over only by the run's own continue-as-new: "
                "leave it out."
            )
        self._start = start
        versions = type(self).graphs
        version = start.version if start.version is not None else _pinned_version(versions)
        if version not in versions:
            served = ", ".join(str(v) for v in sorted(versions))
            problem = problem or (
                f"This worker serves versions {served} of '{info.workflow_type}', not {version}."
            )
            version = max(versions)
        self._graph = versions[version]
        self._state = self._graph.start
        self._requester = Actor.unverified(
            start.channel if _channel_ok(start.channel) else "temporal"
        )
        self._driver = self._requester
        self._channels: dict[str, Any] = dict(self._graph.defaults)
        if problem is None and start.carried is not None:
            self._restore(start.carried)
        elif problem is None:
            problem = self._take_inputs(start.inputs)
        if problem is not None:
            self._refusal = {"code": ErrorCode.VALIDATION_ERROR.value, "error": problem}

    @staticmethod
    def _parse_start(starts: Sequence[Any]) -> tuple[StartGraphInput, str | None]:
        if len(starts) != 1:
            return StartGraphInput(), (
                f"A run starts with one input, {{inputs, proof?, channel?}}; it got {len(starts)}."
            )
        raw = starts[0]
        if raw is None:
            return StartGraphInput(), None
        if not isinstance(raw, dict):
            return StartGraphInput(), (
                "A run starts with an object {inputs, proof?, channel?, version?}, not "
                f"{type(raw).__name__}."
            )
        unknown = sorted(set(raw) - {"inputs", "proof", "channel", "version", "carried"})
        if unknown:
            return StartGraphInput(), (
                f"The start input has unknown keys ({', '.join(unknown)}): a run starts with "
                "{inputs, proof?, channel?, version?}. Put channel values under 'inputs'."
            )
        inputs, proof, channel = raw.get("inputs", {}), raw.get("proof"), raw.get("channel")
        version, carried = raw.get("version"), raw.get("carried")
        if not isinstance(inputs, dict):
            return StartGraphInput(), "'inputs' must be an object of starting channel values."
        if channel is not None and not _channel_ok(channel):
            return StartGraphInput(), "'channel' must be a short name like 'temporal' or 'cli'."
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            return StartGraphInput(), "'version' must be a whole number."
        if carried is not None and not isinstance(carried, dict):
            return StartGraphInput(), "'carried' is lockgate's own: leave it out."
        return (
            StartGraphInput(inputs, proof, channel or "temporal", version, carried),
            None,
        )

    def _take_inputs(self, inputs: dict[str, Any]) -> str | None:
        graph = self._graph
        declared = {key: value for key, value in inputs.items() if key in graph.channels}
        self._dropped_inputs = sorted(key for key in inputs if key not in graph.channels)
        try:
            model = graph.model.model_validate({**graph.defaults, **declared})
        except ValidationError as error:
            problems = "; ".join(
                f"'{'.'.join(str(p) for p in detail['loc'])}': {detail['msg']}"
                for detail in error.errors(include_url=False)
            )
            return f"The starting channels of '{graph.name}' are invalid: {problems}."
        self._channels = model.model_dump(mode="json")
        return None

    # The run -----------------------------------------------------------------------------------

    async def _run(self) -> dict[str, Any]:
        if self._refusal is None and self._start.proof is not None and not self._start.carried:
            await self._verify_requester()
        if self._refusal is not None:
            self._status = "refused"
            self._settled()
            return await self._finish()
        self._mark()
        while self._state != _END:
            self._continue_as_new_if_due()
            if self._state in self._graph.asks:
                await self._hold_gate(self._state)
            else:
                await self._run_node(self._state)
        return await self._finish()

    def _continue_as_new_if_due(self) -> None:
        """Starts a fresh history when the server suggests it and no caller is waiting on this one.

        Channels, trail, budgets and an open gate (with its key, so signed answers stay good)
        are carried over; nothing is lost and nothing runs twice.
        """
        if self._due_for_new_history():
            workflow.continue_as_new(self._carry())

    def _due_for_new_history(self) -> bool:
        return workflow.info().is_continue_as_new_suggested() and workflow.all_handlers_finished()

    async def _verify_requester(self) -> None:
        verdict = await workflow.execute_local_activity(
            "lockgate.verify_start",
            VerifyStartInput(
                proof=self._start.proof,
                graph=self._graph.name,
                run=self._run_id,
                inputs=self._start.inputs,
            ),
            start_to_close_timeout=_LOCAL,
            result_type=dict,
        )
        if verdict["actor"] is None:
            self._refusal = {"code": verdict["code"], "error": verdict["reason"]}
            return
        self._requester = Actor.from_dict(verdict["actor"])
        self._driver = self._requester

    async def _run_node(self, state: str) -> None:
        node = self._graph.nodes[state]
        visit = self._visits.get(state, 0) + 1
        self._visits[state] = visit
        call = ToolActivityInput(
            arguments={name: self._channels.get(name) for name in node.reads},
            actor=self._driver.to_dict(),
            request_id=f"{self._run_id}:{state}:{visit}",
            idempotency_key=f"{self._run_id}:{state}:{visit}",
            confirmed=True,
            node=state,
        )
        timeout = node.definition.timeout
        try:
            result = await workflow.execute_activity(
                node.tool,
                call,
                result_type=dict,
                start_to_close_timeout=timedelta(seconds=timeout),
                heartbeat_timeout=heartbeat_timeout(node.definition),
                retry_policy=node_retry_policy(node),
                summary=f"{node.tool} as {self._driver.actor}",
            )
        except ActivityError as error:
            await self._park_after_error(node, error)
            return
        if not result.get("success"):
            problem = (result.get("error") or {}).get("message") or "it reported a failure"
            await self._park(node, "failed", f"it ran and reported: {problem}", ())
            return
        data = result.get("data")
        problem = self._write(node, data)
        if problem is not None:
            await self._park(node, "failed", problem, ())
            return
        self._trail.append(
            {"node": state, "operation": node.tool, "outcome": "ran", "by": self._driver.to_dict()}
        )
        if node.route_enum is not None:
            value = data if node.decides_on == "" else (data or {}).get(node.decides_on)
            code = _case(node.route_enum, value)
            if code is None:
                await self._park(
                    node,
                    "failed",
                    f"it routes on {node.route_enum.__name__} but returned no value of it "
                    f"({value!r}); a node that decides has to say what it decided",
                    (),
                )
                return
            self._state = self._take(state, code)
        elif state in self._graph.edges:
            self._state = self._graph.edges[state].to
        else:
            self._state = _END

    def _write(self, node: CompiledNode, data: Any) -> str | None:
        graph = self._graph
        if node.writes:
            written = {name: (data or {}).get(name) for name in node.writes}
        elif isinstance(data, dict) and node.route_enum is None:
            strangers = sorted(key for key in data if key not in graph.channels)
            if strangers:
                return (
                    f"it returned {', '.join(strangers)}, which is not a channel of this graph; "
                    "nothing it returned was written"
                )
            written = dict(data)
        else:
            written = {}
        for name, value in written.items():
            self._channels[name] = value
            for list_channel, source in graph.appends.items():
                if source == name:
                    self._channels[list_channel] = [
                        *(self._channels.get(list_channel) or []),
                        value,
                    ]
        return None

    def _take(self, origin: str, code: str) -> str:
        transition = self._graph.routes[origin][code]
        if transition.at_most is not None and transition.then_ask is not None:
            taken = self._taken.get(code, 0)
            if taken >= transition.at_most:
                return transition.then_ask
            self._taken[code] = taken + 1
        return transition.to

    # Parking -----------------------------------------------------------------------------------

    async def _park_after_error(self, node: CompiledNode, error: ActivityError) -> None:
        cause = error.cause
        if isinstance(cause, ApplicationError) and cause.type == ErrorCode.FORBIDDEN.value:
            details = cause.details[0] if cause.details else {}
            why = details.get("why") if isinstance(details, dict) else None
            await self._park(node, "refused", why or cause.message, node.needs)
            return
        code = cause.type if isinstance(cause, ApplicationError) else None
        message = _first_sentence_error(error)
        if code in CALLER_MISTAKES:
            await self._park(node, "failed", f"{message.rstrip('.')} ({code})", ())
        else:
            await self._park(node, "failed", f"it failed after its retries: {message}", ())

    async def _park(self, node: CompiledNode, outcome: str, why: str, needs: Sequence[str]) -> None:
        self._parkings += 1
        self._parked = ParkedNode(
            self._graph.name, self._run_id, node.state, node.tool, tuple(needs), self._parkings
        )
        row: dict[str, Any] = {
            "node": node.state,
            "operation": node.tool,
            "outcome": outcome,
            "by": self._driver.to_dict(),
            "needs": list(needs),
            "why": node_refusal_sentence(node.state, node.tool, why),
        }
        self._trail.append(row)
        self._status = "parked"
        self._mark()
        workflow.upsert_memo({"lockgate_parked": self._parked.to_dict() | {"why": row["why"]}})
        self._settled()
        while True:
            await workflow.wait_condition(lambda: self._resumer is not None or bool(self._inbox))
            if self._resumer is not None:
                actor, self._resumer = self._resumer, None
                break
            accepted = await self._judge_next_signal()
            if accepted is not None and accepted.kind == "resume":
                actor = accepted.actor
                break
        self._trail.append(
            {
                "node": node.state,
                "operation": node.tool,
                "outcome": "resumed",
                "by": actor.to_dict(),
            }
        )
        self._driver = actor
        self._parked = None
        self._status = "running"
        workflow.upsert_memo({"lockgate_parked": None})
        self._mark()

    # Gates -------------------------------------------------------------------------------------

    async def _hold_gate(self, state: str) -> None:
        if self._gate is None or self._gate.ask != state:
            await self._open_gate(state)
        ask = self._graph.asks[state]
        choice, actor = await self._await_answer()
        self._trail.append(
            {
                "node": state,
                "operation": f"ask:{ask.role}",
                "outcome": "answered",
                "by": actor.to_dict(),
                "answer": choice,
            }
        )
        if actor.authorization:
            self._spent.append(actor.authorization)
        self._gate = None
        self._driver = actor
        self._status = "running"
        workflow.upsert_memo({"lockgate_gate": None})
        self._mark()
        self._state = self._take(state, choice)

    async def _open_gate(self, state: str) -> None:
        graph = self._graph
        ask = graph.asks[state]
        self._gate_openings += 1
        choices = []
        for option in ask.options:
            leads_to = graph.routes[state][option].to
            node = graph.nodes.get(leads_to)
            choices.append(
                GateChoice(
                    option,
                    leads_to if node is not None else None,
                    node.tool if node is not None else None,
                    node.needs if node is not None else (),
                )
            )
        self._gate = OpenGate(
            graph=graph.name,
            run=self._run_id,
            gate=f"{state}#{self._gate_openings}",
            ask=state,
            role=ask.role,
            because=ask.because,
            requester=self._requester.actor,
            choices=tuple(choices),
        )
        self._status = "waiting"
        self._mark()
        workflow.upsert_memo({"lockgate_gate": self._gate_memo()})
        self._settled()

    async def _await_answer(self) -> tuple[str, Actor]:
        while True:
            await workflow.wait_condition(
                lambda: self._answer is not None or bool(self._inbox) or self._due_for_new_history()
            )
            if self._answer is not None:
                choice, actor = self._answer
                self._answer = None
                return choice, actor
            if not self._inbox:
                # Waiting long (refused signals pile up): a fresh history, the gate still open.
                workflow.continue_as_new(self._carry())
            accepted = await self._judge_next_signal()
            if accepted is None or accepted.kind != "decide" or not accepted.choice:
                continue
            if self._answer is not None:
                # An update was accepted while this signal was being judged; it was promised an
                # answer, so it stands and the signal is recorded as too late.
                self._refuse_late_signal(accepted)
                continue
            return accepted.choice, accepted.actor

    def _refuse_late_signal(self, accepted: _Accepted) -> None:
        if accepted.actor.authorization in self._spent:
            self._spent.remove(accepted.actor.authorization)
        self._trail.append(
            {
                "node": self._state,
                "operation": "signal:decide",
                "outcome": "refused",
                "by": accepted.actor.to_dict(),
                "needs": [],
                "answer": accepted.choice,
                "code": ErrorCode.GATE_NOT_PENDING.value,
                "why": "Another answer to this gate was accepted while this one was judged.",
            }
        )

    def _gate_memo(self) -> dict[str, Any]:
        assert self._gate is not None
        memo = self._gate.to_dict()
        target = self._graph.target
        memo["target"] = {target: self._channels.get(target)} if target else None
        memo["version"] = self._graph.version
        memo["opened_at"] = workflow.now().isoformat()
        return memo

    # Signals -----------------------------------------------------------------------------------

    @workflow.signal(dynamic=True)
    def receive_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """Every signal: ``decide`` and ``resume`` are judged on the worker; others refused.

        Nothing is dropped: a payload that cannot be decoded is still judged (and refused), so
        it is audited and lands in the trail.
        """
        converter = workflow.payload_converter()
        values: list[Any] = []
        decodable = len(args) == 1
        for raw in args:
            try:
                values.append(converter.from_payload(raw.payload))
            except Exception:
                decodable = False
        self._inbox.append(GateInbox(name, values[0] if len(values) == 1 else values, decodable))

    async def _judge_next_signal(self) -> _Accepted | None:
        entry = self._inbox.pop(0)
        judged = await self._judge(entry)
        if judged.accepted and judged.actor is not None:
            kind = "decide" if entry.name == "decide" else "resume"
            if judged.actor.authorization:
                self._spent.append(judged.actor.authorization)
            return _Accepted(kind, judged.actor, judged.choice)
        # A signal without a valid proof still came from someone: record them the way an unsigned
        # Temporal caller is recorded everywhere else, so every trail row's `by` has one shape.
        sender = judged.actor or Actor.unverified("temporal")
        self._trail.append(
            {
                "node": self._state,
                "operation": f"signal:{entry.name}",
                "outcome": "refused",
                "by": sender.to_dict(),
                "needs": list(judged.needs),
                "answer": judged.choice,
                "code": judged.code,
                "why": judged.reason,
            }
        )
        return None

    async def _judge(self, entry: GateInbox) -> Judgement:
        kind = entry.name if entry.name in ("decide", "resume") else "invalid"
        if not entry.decodable:
            kind = "invalid"
        verdict = await workflow.execute_local_activity(
            "lockgate.judge",
            JudgeInput(
                kind=kind,
                name=entry.name,
                value=entry.value if entry.decodable else None,
                graph=self._graph.name,
                run=self._run_id,
                status=self._status,
                gate=self._gate.to_dict() if self._gate else None,
                parked=self._parked.to_dict() if self._parked else None,
                spent_nonces=list(self._spent),
            ),
            start_to_close_timeout=_LOCAL,
            result_type=dict,
        )
        return Judgement.from_dict(verdict)

    # Updates -----------------------------------------------------------------------------------

    @workflow.update(
        name="decide",
        description=(
            "Answer the open gate. Paste the signed answer that `lockgate sign decide RUN "
            "CHOICE --as YOU` prints; unsigned answers are refused."
        ),
    )
    async def decide(self, answer: Any) -> dict[str, Any]:
        """Records an answer the validator accepted, then returns once the run settles."""
        proof = Proof.parse(answer)
        choice = str(proof.authorizes["choice"])
        gate = self._gate
        if gate is None or self._answer is not None or proof.authorizes.get("gate") != gate.gate:
            # Another answer got in first, after this one was validated in the same task.
            raise ApplicationError(
                f"Run '{self._run_id}' is not waiting for a decision.",
                type=ErrorCode.GATE_NOT_PENDING.value,
            )
        actor = Actor.of_proof(proof)
        _audit(
            "gate.decide",
            True,
            actor,
            graph=self._graph.name,
            run=self._run_id,
            gate=gate.gate,
            answer=choice,
        )
        self._answer = (choice, actor)
        return await self._after_settling(self._settles)

    @decide.validator
    def validate_decide(self, answer: Any) -> None:
        """Refuses, before anything is written, every answer the gate rules refuse."""
        authority = _authority()
        judgement = judge_answer(
            authority,
            answer,
            graph=self._graph.name,
            run=self._run_id,
            gate=self._gate if self._answer is None else None,
            spent_nonces=self._spent,
        )
        if not judgement.accepted:
            self._refuse(
                authority,
                "gate.decide",
                judgement,
                gate=self._gate.gate if self._gate else None,
                answer=judgement.choice,
            )

    @workflow.update(
        name="resume",
        description=(
            "Carry on a run parked at a node its caller could not run, as a caller who can. "
            "Paste what `lockgate sign resume RUN --as YOU` prints."
        ),
    )
    async def resume(self, proof_value: Any) -> dict[str, Any]:
        """Records a resume the validator accepted, then returns once the run settles."""
        proof = Proof.parse(proof_value)
        parked = self._parked
        if (
            parked is None
            or self._resumer is not None
            or proof.authorizes.get("node") != parked.node
        ):
            raise ApplicationError(
                f"Run '{self._run_id}' is not parked: there is nothing to resume.",
                type=ErrorCode.NOTHING_TO_RESUME.value,
            )
        actor = Actor.of_proof(proof)
        if actor.authorization:
            self._spent.append(actor.authorization)
        _audit(
            "run.resume", True, actor, graph=self._graph.name, run=self._run_id, node=parked.node
        )
        self._resumer = actor
        return await self._after_settling(self._settles)

    @resume.validator
    def validate_resume(self, proof_value: Any) -> None:
        """Refuses, before anything is written, a resume the rules refuse."""
        authority = _authority()
        judgement = judge_resume(
            authority,
            proof_value,
            graph=self._graph.name,
            run=self._run_id,
            status=self._status,
            parked=self._parked if self._resumer is None else None,
            spent_nonces=self._spent,
        )
        if not judgement.accepted:
            self._refuse(
                authority,
                "run.resume",
                judgement,
                node=self._parked.node if self._parked else None,
            )

    def _refuse(
        self, authority: Authority, event: str, judgement: Judgement, **facts: Any
    ) -> NoReturn:
        """Audits a validator's refusal (validators never replay: exactly once), then raises it."""
        authority.audit.event(
            event,
            accepted=False,
            actor=judgement.actor.to_dict() if judgement.actor else None,
            reason=judgement.reason,
            code=judgement.code,
            graph=self._graph.name,
            run=self._run_id,
            **facts,
        )
        raise ApplicationError(judgement.reason or "Refused.", type=judgement.code)

    @workflow.update(
        name="settle",
        description="Wait until the run settles: a gate opens, a node parks, or the run ends.",
    )
    async def settle(self, wait: SettleInput) -> dict[str, Any]:
        """Returns :meth:`show` once the run has settled more than ``wait.after`` times."""
        return await self._after_settling(wait.after)

    async def _after_settling(self, after: int) -> dict[str, Any]:
        await workflow.wait_condition(lambda: self._settles > after)
        return self.show()

    # Reading -----------------------------------------------------------------------------------

    @workflow.query(name="show", description="The run: state, channels, trail, gate, budgets.")
    def show(self) -> dict[str, Any]:
        """The run as it stands; holds nothing of what anyone holds."""
        graph = self._graph
        shown: dict[str, Any] = {
            "ok": self._refusal is None,
            "run_id": self._run_id,
            "graph": graph.name,
            "version": graph.version,
            "status": self._status,
            "state": self._state if self._state != _END else None,
            "requester": self._requester.to_dict(),
            "awaiting": self._gate_view() if self._gate else None,
            "parked": self._parked.to_dict() if self._parked else None,
            "channels": dict(self._channels),
            "budgets": {
                code: {"taken": self._taken.get(code, 0), "at_most": at_most}
                for code, at_most in graph.budgets.items()
            },
            "trail": list(self._trail),
            "settles": self._settles,
        }
        if self._dropped_inputs:
            shown["ignored_inputs"] = list(self._dropped_inputs)
        if self._refusal is not None:
            shown.update(code=self._refusal["code"], error=self._refusal["error"])
        return shown

    def _gate_view(self) -> dict[str, Any]:
        assert self._gate is not None
        view = self._gate.to_dict()
        view["options"] = self._gate.options
        return view

    # State changes -----------------------------------------------------------------------------

    def _settled(self) -> None:
        self._settles += 1

    def _mark(self) -> None:
        """Brings the run's search attributes up to date, writing only what changed."""
        current = workflow.info().typed_search_attributes
        wanted = {
            LOCKGATE_GRAPH: self._graph.name,
            LOCKGATE_STATE: self._status,
            LOCKGATE_AWAITING: self._gate.role if self._gate is not None else None,
        }
        updates: list[SearchAttributeUpdate[Any]] = []
        for key, value in wanted.items():
            if current.get(key) == value:
                continue
            updates.append(key.value_set(value) if value is not None else key.value_unset())
        if updates:
            workflow.upsert_search_attributes(updates)

    async def _finish(self) -> dict[str, Any]:
        if self._status != "refused":
            self._status = "finished"
            self._state = _END
            self._settled()
        self._mark()
        while True:
            while self._inbox:
                await self._judge_next_signal()
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._inbox:
                # A signal that arrived while handlers finished is judged too: none is dropped.
                return self.show()

    def _carry(self) -> StartGraphInput:
        # Trail rows name their actor by index into one table: a long run's carried trail is
        # then a fraction of its shown size, and stays far inside Temporal's payload limit.
        actors: list[dict[str, Any]] = []
        index: dict[str, int] = {}
        rows: list[dict[str, Any]] = []
        for row in self._trail:
            by = row.get("by")
            key = repr(sorted(by.items())) if isinstance(by, dict) else ""
            if key not in index:
                index[key] = len(actors)
                actors.append(by or {})
            rows.append({**row, "by": index[key]})
        carried = {
            "state": self._state,
            "channels": self._channels,
            "actors": actors,
            "trail": rows,
            "taken": self._taken,
            "visits": self._visits,
            "requester": self._requester.to_dict(),
            "driver": self._driver.to_dict(),
            "gate": self._gate.to_dict() if self._gate is not None else None,
            "gate_openings": self._gate_openings,
            "parkings": self._parkings,
            "spent": self._spent,
            "settles": self._settles,
            "ignored_inputs": self._dropped_inputs,
        }
        return StartGraphInput(version=self._graph.version, carried=carried)

    def _restore(self, carried: dict[str, Any]) -> None:
        actors = carried["actors"]
        self._state = carried["state"]
        self._channels = carried["channels"]
        self._trail = [{**row, "by": actors[row["by"]]} for row in carried["trail"]]
        self._taken = carried["taken"]
        self._visits = carried["visits"]
        self._requester = Actor.from_dict(carried["requester"])
        self._driver = Actor.from_dict(carried["driver"])
        gate = carried.get("gate")
        if gate is not None:
            self._gate = OpenGate.from_dict(gate)
            self._status = "waiting"
        self._gate_openings = carried["gate_openings"]
        self._parkings = carried["parkings"]
        self._spent = carried["spent"]
        self._settles = carried["settles"]
        self._dropped_inputs = carried.get("ignored_inputs", [])


@dataclass(frozen=True)
class _Accepted:
    kind: str
    actor: Actor
    choice: str | None


def _pinned_version(versions: dict[int, CompiledGraph]) -> int:
    """The version a run follows for its whole life, even after newer ones are deployed.

    A new run takes the newest version this worker serves and records it with a patch marker
    (one per version above the oldest); a replayed run finds the marker its first task wrote,
    or none, and so follows the version it started with.
    """
    ordered = sorted(versions)
    name = versions[ordered[0]].name
    for version in reversed(ordered[1:]):
        if workflow.patched(f"lockgate:{name}@v{version}"):
            return version
    return ordered[0]


def _case(enum_type: type[enum.Enum], value: Any) -> str | None:
    try:
        return str(enum_type(value).value)
    except (ValueError, TypeError):
        return None


def _channel_ok(channel: object) -> bool:
    return isinstance(channel, str) and bool(re.fullmatch(r"[A-Za-z0-9._@:-]{1,64}", channel))


def _authority() -> Authority:
    authority = current_authority()
    if authority is None:
        raise ApplicationError(
            "This worker judges no answers: it was built without lockgate's plugin (which "
            "brings the Directory the gate rules need). Add LockgatePlugin to the worker.",
            type=ErrorCode.UNAUTHORIZED.value,
        )
    return authority


def _audit(event: str, accepted: bool, actor: Actor, **facts: Any) -> None:
    # Update handlers run again on replay; the audit record is written only the first time.
    if workflow.unsafe.is_replaying():
        return
    authority = current_authority()
    if authority is not None:
        authority.audit.event(event, accepted=accepted, actor=actor.to_dict(), **facts)


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
    class_name = "Graph_" + re.sub(r"\W", "_", name) + f"_{_sequence}"
    module = _generated.__name__

    def __init__(self: GraphRun, *starts: Any) -> None:
        self._setup(starts)

    async def run(self: GraphRun, *starts: Any) -> dict[str, Any]:
        return await self._run()

    for function in (__init__, run):
        function.__module__ = module
        function.__qualname__ = f"{class_name}.{function.__name__}"
    namespace = {
        "__module__": module,
        "__qualname__": class_name,
        "__doc__": f"The workflow of graph '{name}'.",
        "graphs": dict(versions),
        "__init__": workflow.init(__init__),
        "run": workflow.run(run),
    }
    # A start payload that cannot even be decoded raises RuntimeError before any lockgate code
    # runs; failing that run beats a workflow task retried forever. lockgate's own code raises
    # no RuntimeError, so nothing else is turned into a failed run by this.
    # Unsandboxed: the interpreter is lockgate's own deterministic code (the saved-history
    # replay tests guard it), and the sandbox's per-payload context lookups were the largest
    # single cost of a graph run in bench/throughput.py's profile.
    defined = workflow.defn(name=name, failure_exception_types=[RuntimeError], sandboxed=False)(
        type(class_name, (GraphRun,), namespace)
    )
    _made[key] = defined
    return defined
