"""Tools as Temporal activities: one per tool (``lockgate.tool:<tool>``), running the pipeline.

Lockgate's workflows schedule a tool declared ``local=True`` as a local activity of the same name
and input, judged here the same way; any other tool runs only as a regular activity.

The activity judges its caller on the worker: an actor handed over by lockgate's own workflow
code under the worker secret's seal (see :mod:`._sealed_calls`), or nobody
(``unverified:<channel>``). It takes no proof: nothing could keep a proof on an activity from being
used again by another, so a signed call is a durable call (``lockgate.tool_call``), whose proof
names its execution. The scopes come from the worker's Directory.
A caller's mistake is one non-retryable :class:`Refusal` whose ``type`` is the code, with no stack
trace and nothing of what the caller holds; a tool's own exception goes to the retry policy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from lockgate.activities._activity_inputs import (
    JUDGE_SIGNALS,
    OPEN_START,
    PREPARE_CALL,
    RECORD_ACCEPTANCE,
    RUN_PROTOCOL,
    VERIFY_CARRIED,
    JudgeSignalsInput,
    OpenStartInput,
    PrepareCallInput,
    SignalEntry,
    ToolActivityInput,
    VerifyCarriedInput,
    carry_binding,
    tool_activity_name,
)
from lockgate.activities._handover import open_handover, seal_problem
from lockgate.activities._handover import start_refused as _start_refused
from lockgate.activities._opened_fields import recorded_fields
from lockgate.activities._refusal import Refusal
from lockgate.activities._scheduled_starts import open_scheduled_start
from lockgate.activities._sealed_calls import (
    compact_result_wanted,
    handed_holdings,
    own_run_sealed,
    sealed_by_own_run,
)
from lockgate.gates._authority import Authority, why_node_refuses
from lockgate.gates._gates import OpenGate, ParkedNode
from lockgate.gates._judgements import Judgement, judge_answer, judge_resume, unknown_inputs
from lockgate.identity._actors import Actor
from lockgate.identity._identity_errors import IdentityError
from lockgate.tools._events import ToolFailure
from lockgate.tools._registry import ToolRegistry
from lockgate.tools._tool import ToolDefinition
from lockgate.tools._tool_result import ErrorCode, ToolResult

__all__ = ["CALLER_MISTAKES", "ToolActivities", "only_local"]

CALLER_MISTAKES: frozenset[str] = frozenset(
    {
        ErrorCode.TOOL_NOT_FOUND.value,
        ErrorCode.VALIDATION_ERROR.value,
        ErrorCode.FORBIDDEN.value,
        ErrorCode.RATE_LIMITED.value,
        ErrorCode.UNAUTHORIZED.value,
        ErrorCode.NOT_FOUND.value,
    }
)
"""Codes that a retry cannot fix: each is raised once, as a non-retryable ``ApplicationError``."""


def only_local(info: activity.Info) -> None:
    """Refuses one of lockgate's own checks scheduled as a regular activity.

    Lockgate's workflows run these as local activities, which only workflow code on the same
    worker can start; anyone with namespace access could schedule them as regular activities
    from a workflow of their own, to spend someone's proof or write audit records of checks
    no run asked for.
    """
    if not info.is_local:
        raise _refusal(
            ErrorCode.UNAUTHORIZED.value,
            f"{info.activity_type} runs only as a local activity of lockgate's own workflows.",
        )


def _refusal(code: str, message: str, **details: Any) -> ApplicationError:
    return Refusal(code, message, {"code": code, "message": message, **details})


@contextlib.asynccontextmanager
async def _heartbeating() -> AsyncIterator[None]:
    """Heartbeats while the tool runs, when the caller asked for heartbeats.

    Cancellation reaches an activity through its heartbeats, so a long tool needs them even when
    its own code never calls ``activity.heartbeat``.
    """
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        yield
        return

    async def beat(every: float) -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    beating = asyncio.create_task(beat(max(timeout.total_seconds() / 3, 0.05)))
    try:
        yield
    finally:
        beating.cancel()


class ToolActivities:
    """Builds the activities of a registry for one worker, judging callers with its Authority.

    Args:
        registry: The tools.
        authority: The worker's Directory, verifier, secret and audit log.
        catalogue: Lists the graphs the worker serves, for :meth:`tools_and_graphs`.
        models: The field model of a graph's version, for opening a run's start.
        evidence: The evidence models of a gate (by graph, version and gate state), for judging
            signalled answers.
        newest: The newest version of a graph the worker serves, the one a run starts on.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        authority: Authority,
        catalogue: Callable[[], list[dict[str, Any]]] | None = None,
        models: Callable[[str, int], type[BaseModel] | None] | None = None,
        evidence: Callable[[str, int | None, str], Mapping[str, type[BaseModel]]] | None = None,
        newest: Callable[[str], int | None] | None = None,
    ) -> None:
        self.registry = registry
        self.authority = authority
        self._catalogue = catalogue
        self._models = models
        self._evidence = evidence
        self._newest = newest

    def activities(self) -> list[Callable[..., Any]]:
        """One activity per tool, plus lockgate's own: open a start, open a carried state, judge
        signals, prepare a call."""
        tool_activities = [self._tool_activity(definition) for definition in self.registry]
        return [
            *tool_activities,
            self.open_start,
            self.verify_carried,
            self.judge_signals,
            self.prepare_call,
            self.record_acceptance,
        ]

    def _tool_activity(self, definition: ToolDefinition) -> Callable[..., Any]:
        name = definition.name

        async def run_tool(call: ToolActivityInput) -> dict[str, Any]:
            return await self.run_tool(name, call)

        run_tool.__name__ = run_tool.__qualname__ = "tool_" + "".join(
            character if character.isalnum() else "_" for character in name
        )
        return activity.defn(name=tool_activity_name(name))(run_tool)

    async def run_tool(self, name: str, call: ToolActivityInput) -> dict[str, Any]:
        """Runs ``name`` through the pipeline as the caller described in ``call``."""
        info = activity.info()
        definition = self.registry.get(name)
        if info.is_local and (definition is None or not definition.local):
            # Lockgate's workflows never do this; a worker's own workflow might, and a tool not
            # declared local may change something that a crash would then change twice.
            raise _refusal(
                ErrorCode.UNAUTHORIZED.value,
                f"'{name}' is not declared local=True, so it runs only as a regular activity: a "
                "local activity is run again when its worker dies before the workflow task "
                "completes.",
            )
        actor = self._caller(name, call)
        ctx = self.authority.context_for(
            actor,
            # A standalone activity (started by a client, no workflow around it) has no workflow id.
            request_id=call.request_id
            or (f"{info.workflow_id}/{info.activity_id}" if info.workflow_id else info.activity_id),
            idempotency_key=call.idempotency_key,
            attempt=info.attempt,
            workflow_id=info.workflow_id,
        )
        try:
            async with _heartbeating():
                result = await self.registry.run_pipeline(
                    name,
                    call.arguments,
                    ctx,
                    confirmation="confirmed" if call.confirmed else "ask",
                    contain_exceptions=False,
                    offload_sync=True,
                )
        except ToolFailure as failure:
            # The tool's own failure: the activity's retry policy decides what happens next.
            raise failure.cause from None
        if not result.success and result.code in CALLER_MISTAKES:
            if call.node is not None:
                # The tool call's own record has the arguments; this one says which run parks.
                self.authority.audit.refused(
                    "node.run",
                    result.code,
                    result.error.message if result.error else None,
                    actor=actor.to_dict(),
                    run=info.workflow_id,
                    node=call.node,
                    tool=name,
                )
            raise self._mistake(name, actor, result)
        return result.to_compact_dict() if compact_result_wanted() else result.to_dict()

    def _caller(self, name: str, call: ToolActivityInput) -> Actor:
        if call.actor is not None or call.confirmed:
            return self._sealed_caller(name, call)
        if call.proof is not None:
            sentence = (
                f"'{name}' was scheduled with a proof, and a tool activity takes none: nothing "
                "could keep it from being used again by another activity. Make a signed call a "
                "durable call (ToolClient, `lockgate tools call --as YOU`), whose proof names "
                "its execution."
            )
            self.authority.audit.refused("tool.proof", ErrorCode.UNAUTHORIZED, sentence, tool=name)
            raise _refusal(ErrorCode.UNAUTHORIZED.value, sentence)
        return Actor.unverified(call.channel)

    def _sealed_caller(self, name: str, call: ToolActivityInput) -> Actor:
        """The actor lockgate's workflow vouched for, if the seal on this call opens."""
        if not own_run_sealed(self.authority, call, "tool.sealed_call", tool=name):
            raise _refusal(
                ErrorCode.UNAUTHORIZED.value,
                f"'{name}' was scheduled with an actor or a confirmation that lockgate's workers "
                "did not vouch for: a tool runs as someone, or confirmed, only when lockgate's own "
                "workflow scheduled it. Call it with a signed proof instead.",
            )
        if call.actor is None:
            return Actor.unverified(call.channel)
        try:
            actor = Actor.from_dict(call.actor)
        except IdentityError as error:
            raise _refusal(ErrorCode.UNAUTHORIZED.value, str(error)) from None
        handed_holdings(self.authority, actor, call)
        return actor

    def _mistake(self, name: str, actor: Actor, result: ToolResult) -> ApplicationError:
        error = result.error
        assert error is not None
        definition = self.registry.get(name)
        details: dict[str, Any] = {"check": result.meta.get("check")}
        if error.code == ErrorCode.FORBIDDEN.value and definition is not None:
            details["needs"] = sorted(definition.scopes)
            details["why"] = why_node_refuses(
                actor, self.authority.scopes_of(actor), definition.scopes
            )
        if error.code == ErrorCode.RATE_LIMITED.value:
            details["retry_after_seconds"] = result.meta.get("retry_after_seconds")
            store = result.meta.get("rate_limit_store_unavailable")
            if store is not None:
                details["rate_limit_store_unavailable"] = store
        return _refusal(error.code, error.message, **details)

    @activity.defn(name=OPEN_START)
    async def open_start(self, start: OpenStartInput) -> dict[str, Any]:
        """Checks a run's starting fields and its proof; the history keeps the verdict for every
        replay.

        The fields are validated by the graph's own model here, not in workflow code: its
        validators are the user's code, and its default factories (``uuid4``, a clock) make a
        value for this run, which the recorded result keeps the same on every replay. The tools
        the run runs local are handed back as it named them, for the same reason.
        """
        only_local(activity.info())
        opened = self._open_start(start)
        if start.scheduled is not None and opened["fields"] is not None:
            opened = await open_scheduled_start(self.authority, start, opened)
        return {
            # The fields the start's inputs hold as they are are named, not copied.
            **recorded_fields(opened, start.inputs),
            "local_tools": list(start.local_tools),
            "protocol": RUN_PROTOCOL,
            "accepted": start.accepted,
        }

    def _open_start(self, start: OpenStartInput) -> dict[str, Any]:
        model = self._models(start.graph, start.version) if self._models else None
        if model is None:
            return _start_refused(
                ErrorCode.NOT_FOUND, f"This worker serves no version {start.version} of "
                f"'{start.graph}'."
            )  # fmt: skip
        newest = self._newest(start.graph) if self._newest else start.version
        if newest is not None and start.version != newest:
            # A run starts on the newest version served; an older one only finishes its runs. A
            # run that chose another was steered by a history some other worker wrote.
            return _start_refused(
                ErrorCode.VALIDATION_ERROR,
                f"Run '{start.run}' would start on version {start.version} of '{start.graph}', "
                f"and new runs start on its newest ({newest}): older versions only finish the "
                "runs that started on them.",
            )
        fields = model.model_fields
        unknown = unknown_inputs(start.graph, start.inputs, model)
        if unknown is not None:
            return _start_refused(ErrorCode.VALIDATION_ERROR, unknown)
        declared = {key: value for key, value in start.inputs.items() if key in fields}
        ignored = sorted(str(key)[:64] for key in start.inputs if key not in fields)[:20]
        try:
            opened = model.model_validate(declared).model_dump(mode="json")
        except ValidationError as error:
            problems = "; ".join(
                f"'{'.'.join(str(part) for part in detail['loc'])[:64]}': {detail['msg']}"
                for detail in error.errors(include_url=False)[:10]
            )
            return _start_refused(
                ErrorCode.VALIDATION_ERROR,
                f"The starting fields of '{start.graph}' are invalid: {problems}.",
            )
        opened_start: dict[str, Any] = {
            "fields": opened,
            "ignored_inputs": ignored,
            "actor": None,
            "code": None,
            "reason": None,
        }
        if start.handed is not None:
            return open_handover(self.authority, start, opened_start)
        if start.proof is None:
            return opened_start
        # Lockgate before execution-bound proofs sent the start proof inside the start input,
        # naming no execution: a copy read from history could start another run. Such a run
        # recorded then keeps its verdict; one arriving now is refused.
        sentence = (
            f"Run '{start.run}' carries its start proof inside its start input, where lockgate "
            "no longer takes one: a start proof names the execution the server started, and "
            "reaches the run after the start (its `start` update). Start it again with a "
            "current lockgate client."
        )
        self.authority.audit.refused(
            "run.start", ErrorCode.UNAUTHORIZED, sentence, graph=start.graph, run=start.run
        )
        return _start_refused(ErrorCode.UNAUTHORIZED, sentence)

    @activity.defn(name=RECORD_ACCEPTANCE)
    async def record_acceptance(self, sealed: Any) -> Any:
        """Hands back the seal this worker made on an update its own validator accepted (with,
        for a workflow of your own's start, what the run opens with, under the same seal), so
        the run's history records it: replay reads back a local activity's result (see
        :mod:`lockgate.workflows._accepted_updates`). None stays None: nothing is sealed here."""
        only_local(activity.info())
        return sealed

    @activity.defn(name=VERIFY_CARRIED)
    async def verify_carried(self, handed: VerifyCarriedInput) -> dict[str, Any]:
        """Whether the state a run was handed was sealed by a worker, for exactly this handover;
        and the tools the new run runs local, as it named them."""
        only_local(activity.info())
        return {
            **self._verify_carried(handed),
            "local_tools": list(handed.local_tools),
            "protocol": RUN_PROTOCOL,
        }

    def _verify_carried(self, handed: VerifyCarriedInput) -> dict[str, Any]:
        problem: str | None = None
        if handed.previous_run is None:
            problem = "this run was not continued from another run"
        else:
            previous_run = handed.previous_run
            problem = seal_problem(
                self.authority,
                handed.seal,
                "carry",
                lambda: carry_binding(
                    handed.workflow_id, handed.execution, previous_run, handed.carried
                ),
            )
        if problem is None:
            return {"ok": True, "reason": None}
        reason = (
            "'carried' is lockgate's own state, handed from one run to the next by lockgate's "
            f"workers, and this one was refused: {problem}."
        )
        self.authority.audit.refused(
            "run.carried", ErrorCode.UNAUTHORIZED, reason, run=handed.workflow_id
        )
        return {"ok": False, "reason": reason}

    @activity.defn(name=JUDGE_SIGNALS)
    async def judge_signals(self, batch: JudgeSignalsInput) -> list[dict[str, Any]]:
        """Judges signalled answers and resumes by the same rules as the update validators, in
        the order they arrived: once one is accepted, the gate (or park) it answered is closed
        for the rest."""
        if not sealed_by_own_run(self.authority.secret, batch):
            # Only a run's own workflow hands it its signals; anyone else's verdicts would be
            # audit records of answers nobody gave.
            raise _refusal(
                ErrorCode.UNAUTHORIZED.value,
                "lockgate.judge_signals judges the signals of lockgate's own runs only.",
            )
        gate = OpenGate.from_dict(batch.gate) if batch.gate else None
        parked = ParkedNode.from_dict(batch.parked) if batch.parked else None
        spent = list(batch.spent_nonces)
        verdicts: list[dict[str, Any]] = []
        for entry in batch.entries:
            judgement = self._judge_one(entry, batch, gate, parked, spent)
            if judgement.allowed and judgement.actor is not None:
                if judgement.actor.authorization:
                    spent.append(judgement.actor.authorization)
                if entry.name == "decide":
                    gate = None
                else:
                    parked = None
            self.authority.audit.event(
                f"signal.{entry.name if entry.name in ('decide', 'resume') else 'invalid'}",
                accepted=judgement.allowed,
                actor=judgement.actor.to_dict() if judgement.actor else None,
                reason=judgement.reason,
                code=judgement.code,
                graph=batch.graph,
                run=batch.run,
                gate=(batch.gate or {}).get("gate"),
                role=(batch.gate or {}).get("role"),
                answer=judgement.choice,
            )
            verdicts.append(judgement.to_dict())
        return verdicts

    def _judge_one(
        self,
        entry: SignalEntry,
        batch: JudgeSignalsInput,
        gate: OpenGate | None,
        parked: ParkedNode | None,
        spent: list[str],
    ) -> Judgement:
        if entry.problem is not None:
            return Judgement.refuse(ErrorCode(entry.problem["code"]), entry.problem["sentence"])
        if entry.name == "decide":
            evidence = (
                self._evidence(batch.graph, batch.version, gate.ask)
                if gate is not None and self._evidence is not None
                else None
            )
            return judge_answer(
                self.authority,
                entry.value,
                graph=batch.graph,
                run=batch.run,
                gate=gate,
                spent_nonces=spent,
                evidence_models=evidence,
            )
        if entry.name == "resume":
            return judge_resume(
                self.authority,
                entry.value,
                graph=batch.graph,
                run=batch.run,
                execution=batch.execution,
                status=batch.status,
                parked=parked,
                spent_nonces=spent,
            )
        return Judgement.refuse(
            ErrorCode.VALIDATION_ERROR,
            "This signal is not one a run takes (decide and resume take one signed proof "
            "each); it was recorded and refused.",
        )

    @activity.defn(name=PREPARE_CALL)
    async def prepare_call(self, call: PrepareCallInput) -> dict[str, Any]:
        """Everything a durable call checks before it waits: the caller, the tool, a dry run;
        and the protocol the call follows from then on."""
        only_local(activity.info())
        return {
            **await self._prepare_call(call),
            "protocol": RUN_PROTOCOL,
            "accepted": call.accepted,
        }

    async def _prepare_call(self, call: PrepareCallInput) -> dict[str, Any]:
        definition = self.registry.get(call.tool) if isinstance(call.tool, str) else None
        if definition is None:
            caller = self.authority.context_for(
                Actor.unverified(call.channel), request_id=call.request_id
            ).as_plan()
            result = await self.registry.run_pipeline(call.tool, call.arguments, caller)
            return {"ok": False, "result": result.to_dict()}
        if call.proof is not None:
            # As for a start: a proof inside the call's start input names no execution.
            error = ToolResult.failed(
                ErrorCode.UNAUTHORIZED,
                f"Call '{call.request_id}' carries its proof inside its start input, where "
                "lockgate no longer takes one: a call's proof names the execution the server "
                "started, and reaches it after the start (its `call` update). Call again with "
                "a current lockgate client.",
            )
            return {"ok": False, "result": error.to_dict()}
        try:
            actor = (
                Actor.from_dict(call.actor)
                if call.actor is not None
                else Actor.unverified(call.channel)
            )
        except IdentityError as error:
            return {
                "ok": False,
                "result": ToolResult.failed(ErrorCode.UNAUTHORIZED, str(error)).to_dict(),
            }
        ctx = self.authority.context_for(actor, request_id=call.request_id).as_plan()
        plan = await self.registry.run_pipeline(call.tool, call.arguments, ctx, rate_limit=False)
        if not plan.success:
            return {"ok": False, "result": plan.to_dict()}
        planned = plan.data["plan"]
        prepared: dict[str, Any] = {
            "ok": True,
            "actor": actor.to_dict(),
            "needs_confirmation": bool(planned["requires_confirmation"]),
            "summary": f"{definition.name} as {actor.actor}",
            "timeout_seconds": definition.timeout,
            "heartbeat_seconds": definition.heartbeat_seconds,
            # Recorded with this result, so replay schedules the tool the way the call did.
            "local": definition.local,
            "confirmation_ttl_seconds": self.registry.confirmations.ttl_seconds,
            "retry": None
            if definition.retry is None
            else {
                "max_attempts": definition.retry.max_attempts,
                "initial_interval_seconds": definition.retry.initial_interval_seconds,
                "backoff": definition.retry.backoff,
                "max_interval_seconds": definition.retry.max_interval_seconds,
            },
        }
        if call.plan:
            # Only a call that asks for its plan reads it: no other records a copy of it.
            prepared["plan"] = planned
        return prepared

    def tools_and_graphs(self) -> dict[str, Any]:
        """The worker's tools (MCP / LLM wire shape) and graphs, for its catalogue query."""
        graphs = self._catalogue() if self._catalogue is not None else []
        return {"tools": self.registry.definitions(), "graphs": graphs}
