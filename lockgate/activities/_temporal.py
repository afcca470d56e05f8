"""Tools as Temporal activities: one activity per tool, named after it, running the pipeline.

The activity judges its caller on the worker: a verified actor handed over by lockgate's own
workflow code, a signed proof it verifies itself, or nobody (``unverified:<channel>``). The
scopes come from the worker's Directory. A caller's mistake is one non-retryable
``ApplicationError`` whose ``type`` is the code; a tool's own exception goes to the retry policy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from lockgate.activities._registry import ToolFailure, ToolRegistry
from lockgate.activities._tool import ToolDefinition
from lockgate.gating import (
    Actor,
    Authority,
    ErrorCode,
    IdentityError,
    Judgement,
    OpenGate,
    ParkedNode,
    ProofRefused,
    ToolResult,
    judge_answer,
    judge_resume,
    start_binding,
    tool_binding,
    why_node_refuses,
)

__all__ = [
    "CALLER_MISTAKES",
    "JudgeInput",
    "PrepareCallInput",
    "ToolActivities",
    "ToolActivityInput",
    "VerifyStartInput",
]

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


@dataclass
class ToolActivityInput:
    """The input of a tool's activity.

    Attributes:
        arguments: The tool's arguments.
        actor: Who calls, already verified by lockgate's workflow code (trusted as given: only
            workflow code schedules activities).
        proof: A signed proof of ``{kind: "tool", tool, arguments}`` (the arguments' digest) to
            verify here, when no ``actor`` is given.
        channel: The channel of an unsigned caller (``temporal`` by default).
        request_id: Correlates the call in results and audit records.
        idempotency_key: Stable across retries of one step (run, node, visit): a tool with side
            effects can use it to make them happen once. Handed to the tool in ``ctx.extra``.
        confirmed: The workflow received the confirmation this call needed.
        node: The graph node this call runs, for the audit record of a refusal.
    """

    arguments: dict[str, Any] = field(default_factory=dict)
    actor: dict[str, Any] | None = None
    proof: dict[str, Any] | None = None
    channel: str = "temporal"
    request_id: str | None = None
    idempotency_key: str | None = None
    confirmed: bool = False
    node: str | None = None


@dataclass
class VerifyStartInput:
    """Verifies the proof a graph run was started with."""

    proof: Any
    graph: str
    run: str
    inputs: dict[str, Any]


@dataclass
class JudgeInput:
    """Judges an answer or resume that arrived as a signal (the `temporal` CLI / UI path)."""

    kind: str
    value: Any
    graph: str
    run: str
    status: str
    name: str = ""
    gate: dict[str, Any] | None = None
    parked: dict[str, Any] | None = None
    spent_nonces: list[str] = field(default_factory=list)


@dataclass
class PrepareCallInput:
    """Checks a durable tool call before it waits for anything: who, which tool, may they."""

    tool: str
    arguments: Any
    proof: Any = None
    channel: str = "temporal"
    request_id: str | None = None


_NOT_JSON = (
    "{what} are not JSON data a proof can name (NaN, infinity or an unpaired surrogate); send "
    "plain JSON."
)


def _binding_or_refusal(
    tool: str, arguments: object, request: str | None = None
) -> dict[str, Any] | ToolResult:
    """What a proof for this call must authorize, or a VALIDATION_ERROR if no proof can.

    Computing the binding raises on arguments canonical JSON refuses; uncaught, that would be a
    retryable activity failure (retried forever for a local activity) caused by the caller.
    """
    if not isinstance(arguments, Mapping):
        return ToolResult.error(
            ErrorCode.VALIDATION_ERROR,
            f"Arguments for '{tool}' must be a JSON object of named arguments.",
        )
    try:
        return tool_binding(tool, arguments, request)
    except (TypeError, ValueError):
        return ToolResult.error(
            ErrorCode.VALIDATION_ERROR, _NOT_JSON.format(what=f"The arguments of '{tool}'")
        )


def _refusal(code: str, message: str, **details: Any) -> ApplicationError:
    return ApplicationError(
        message, {"code": code, "message": message, **details}, type=code, non_retryable=True
    )


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
        authority: The worker's Directory, verifiers and audit log.
        catalogue: Lists the graphs the worker serves, for ``lockgate.describe``.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        authority: Authority,
        catalogue: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.registry = registry
        self.authority = authority
        self._catalogue = catalogue

    def activities(self) -> list[Callable[..., Any]]:
        """One activity per tool, plus lockgate's own: verify a start, judge a signal, prepare."""
        tool_activities = [self._tool_activity(definition) for definition in self.registry]
        return [*tool_activities, self.verify_start, self.judge, self.prepare_call, self.describe]

    def _tool_activity(self, definition: ToolDefinition) -> Callable[..., Any]:
        name = definition.name

        async def run_tool(call: ToolActivityInput) -> dict[str, Any]:
            return await self.run_tool(name, call)

        run_tool.__name__ = run_tool.__qualname__ = "tool_" + "".join(
            character if character.isalnum() else "_" for character in name
        )
        return activity.defn(name=name)(run_tool)

    async def run_tool(self, name: str, call: ToolActivityInput) -> dict[str, Any]:
        """Runs ``name`` through the pipeline as the caller described in ``call``."""
        info = activity.info()
        # The run id is part of the use: a new run of the same workflow id (allowed once the first
        # closed) must not pass for a retry of the first run's activity.
        holder = f"{info.workflow_id}/{info.workflow_run_id}/{info.activity_id}"
        actor = self._caller(name, call, holder=holder)
        ctx = self.authority.context_for(
            actor,
            request_id=call.request_id or f"{info.workflow_id}/{info.activity_id}",
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
                self.authority.audit.event(
                    "node.run",
                    accepted=False,
                    actor=actor.to_dict(),
                    reason=result.error.message if result.error else None,
                    code=result.code,
                    run=info.workflow_id,
                    node=call.node,
                    tool=name,
                )
            raise self._mistake(name, actor, result)
        return result.to_dict()

    def _caller(self, name: str, call: ToolActivityInput, holder: str) -> Actor:
        if call.actor is not None:
            try:
                return Actor.from_dict(call.actor)
            except IdentityError as error:
                raise _refusal(ErrorCode.UNAUTHORIZED.value, str(error)) from None
        if call.proof is not None:
            binding = _binding_or_refusal(name, call.arguments)
            if isinstance(binding, ToolResult):
                assert binding.error is not None
                raise _refusal(binding.error.code, binding.error.message)
            try:
                return self.authority.verifier.verify(call.proof, binding, holder=holder)
            except ProofRefused as refused:
                self.authority.audit.event(
                    "tool.proof",
                    accepted=False,
                    actor=None,
                    reason=refused.sentence,
                    code=refused.code,
                    tool=name,
                )
                raise _refusal(refused.code, refused.sentence, reason=refused.reason) from None
        return Actor.unverified(call.channel)

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
        return _refusal(error.code, error.message, **details)

    @activity.defn(name="lockgate.verify_start")
    async def verify_start(self, start: VerifyStartInput) -> dict[str, Any]:
        """Verifies a start proof once; the history keeps the verdict for every replay."""
        try:
            binding = start_binding(start.graph, start.run, start.inputs)
        except (TypeError, ValueError):
            # NaN, infinity or a lone surrogate: no proof can name them, and raising would retry
            # this local activity forever.
            return {
                "actor": None,
                "code": ErrorCode.VALIDATION_ERROR.value,
                "reason": _NOT_JSON.format(what=f"The inputs of '{start.graph}'"),
            }
        # Spent per run: a new run under the same id is not a retry of this one.
        holder = f"{start.run}/{activity.info().workflow_run_id}"
        try:
            actor = self.authority.verifier.verify(start.proof, binding, holder=holder)
        except ProofRefused as refused:
            self.authority.audit.event(
                "run.start",
                accepted=False,
                actor=None,
                reason=refused.sentence,
                code=refused.code,
                graph=start.graph,
                run=start.run,
            )
            return {"actor": None, "code": refused.code, "reason": refused.sentence}
        return {"actor": actor.to_dict(), "code": None, "reason": None}

    @activity.defn(name="lockgate.judge")
    async def judge(self, judged: JudgeInput) -> dict[str, Any]:
        """Judges a signalled answer or resume by the same rules as the update validators."""
        if judged.kind not in ("decide", "resume"):
            judgement = Judgement.refuse(
                ErrorCode.VALIDATION_ERROR,
                f"The signal '{judged.name}' is not one this run takes (decide, resume take one "
                "signed proof each), or its payload could not be read; it was recorded and "
                "refused.",
            )
        elif judged.kind == "decide":
            judgement = judge_answer(
                self.authority,
                judged.value,
                graph=judged.graph,
                run=judged.run,
                gate=OpenGate.from_dict(judged.gate) if judged.gate else None,
                spent_nonces=judged.spent_nonces,
            )
        else:
            parked = judged.parked
            judgement = judge_resume(
                self.authority,
                judged.value,
                graph=judged.graph,
                run=judged.run,
                status=judged.status,
                parked=ParkedNode(**parked) if parked else None,
                spent_nonces=judged.spent_nonces,
            )
        self.authority.audit.event(
            f"signal.{judged.kind}",
            accepted=judgement.accepted,
            actor=judgement.actor.to_dict() if judgement.actor else None,
            reason=judgement.reason,
            code=judgement.code,
            graph=judged.graph,
            run=judged.run,
            gate=(judged.gate or {}).get("gate"),
            answer=judgement.choice,
        )
        return judgement.to_dict()

    @activity.defn(name="lockgate.prepare_call")
    async def prepare_call(self, call: PrepareCallInput) -> dict[str, Any]:
        """Everything a durable call checks before it waits: the caller, the tool, a dry run."""
        definition = self.registry.get(call.tool) if isinstance(call.tool, str) else None
        if definition is None:
            caller = self.authority.context_for(
                Actor.unverified(call.channel), request_id=call.request_id
            ).as_plan()
            result = await self.registry.run_pipeline(call.tool, call.arguments, caller)
            return {"ok": False, "result": result.to_dict()}
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        actor: Actor
        if call.proof is not None:
            binding = _binding_or_refusal(definition.name, arguments, call.request_id)
            if isinstance(binding, ToolResult):
                return {"ok": False, "result": binding.to_dict()}
            # Spent per run, not per request id: a start under another workflow id, or a new run
            # of this one, carries the same request id and must not pass for a retry.
            info = activity.info()
            try:
                actor = self.authority.verifier.verify(
                    call.proof, binding, holder=f"call:{info.workflow_id}/{info.workflow_run_id}"
                )
            except ProofRefused as refused:
                error = ToolResult.error(refused.code, refused.sentence)
                return {"ok": False, "result": error.to_dict()}
        else:
            actor = Actor.unverified(call.channel)
        ctx = self.authority.context_for(actor, request_id=call.request_id).as_plan()
        plan = await self.registry.run_pipeline(call.tool, call.arguments, ctx, rate_limit=False)
        if not plan.success:
            return {"ok": False, "result": plan.to_dict()}
        planned = plan.data["plan"]
        return {
            "ok": True,
            "actor": actor.to_dict(),
            "needs_confirmation": bool(planned["requires_confirmation"]),
            "summary": f"{definition.name} as {actor.actor}",
            "timeout_seconds": definition.timeout,
            "heartbeat_seconds": definition.heartbeat_seconds,
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

    @activity.defn(name="lockgate.describe")
    async def describe(self) -> dict[str, Any]:
        """The worker's tools (MCP / LLM wire shape) and graphs."""
        graphs = self._catalogue() if self._catalogue is not None else []
        return {"tools": self.registry.definitions(), "graphs": graphs}
