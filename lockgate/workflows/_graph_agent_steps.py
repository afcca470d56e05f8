"""Agent steps of a graph run: a node where a model works with the node's tools, as the driver.

Each model request is one activity, ``lockgate.model`` (sealed: only lockgate's own runs spend
the deployment's models), whose result is recorded, so a worker that dies after the model
answered replays without asking it again. Each tool call the model asks for is that tool's own
sealed activity, run as the run's driver through the whole pipeline, as a tool node's is; a
call the driver may not make, or of a tool the step does not offer, goes back to the model as
the tool's return (``denied``) and is a trail row; the run does not park for it.

The conversation lives in the run's state, as Pydantic AI's messages (JSON), only while the step
needs it across a wait: while the gate its spent budget opened is open (an answer that leads
back to the step carries it on with a fresh budget), and across a continue-as-new in the middle
of the step. It is carried to the next run under the worker secret's seal with the rest of the
state, and dropped once the step ends, parks, or its gate leads elsewhere. It is bounded
(:data:`MAX_CONVERSATION_BYTES`); a step whose conversation outgrows it parks.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate.activities._activity_inputs import MODEL_CALL, ModelCallInput, ToolActivityInput
from lockgate.activities._temporal import CALLER_MISTAKES
from lockgate.gates._limits import MAX_DEPTH, measure, shorten
from lockgate.gates._trail import trail_row
from lockgate.graphs._compiled import CompiledAgent, CompiledNode
from lockgate.tools._tool import ToolDefinition
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._activity_options import (
    MODEL_RETRY,
    execute_defined,
    execute_lockgate,
    failure_cause,
    failure_message,
    refused_tool_call,
)
from lockgate.workflows._authority_context import compact_results, current_audit, record_once
from lockgate.workflows._carry import RunState, ThisRun
from lockgate.workflows._trail_rows import record_row

__all__ = [
    "MAX_CONVERSATION_BYTES",
    "MAX_TOOL_CALLS_PER_RESPONSE",
    "AgentEnd",
    "AgentStepRunner",
]


MAX_CONVERSATION_BYTES = 256_000


"""How large an agent step's conversation may grow: every model request carries all of it, and
a run carries it across a gate and into its next history."""


MAX_TOOL_CALLS_PER_RESPONSE = 16


"""How many tool calls of one model response run; the rest are refused back to the model (a
budget counts requests, and one response could otherwise ask for any number of calls)."""


_DENIED = frozenset(
    {
        ErrorCode.FORBIDDEN.value,
        ErrorCode.UNAUTHORIZED.value,
        ErrorCode.TOOL_NOT_FOUND.value,
        ErrorCode.NOT_FOUND.value,
        ErrorCode.RATE_LIMITED.value,
        ErrorCode.CONFIRMATION_REQUIRED.value,
    }
)


"""Refusals a model is told of as a denial (a decision, not a fault); a validation error asks it
to retry the call; anything else is the tool's failure."""


_NAME_SHOWN = 64


@dataclass
class AgentEnd:
    """How an agent step ended: its output (the field it writes), or why it could not finish;
    neither when its budget was spent and the run moved on to the gate that decides."""

    output: dict[str, Any] | None = None
    problem: str | None = None
    ran: dict[str, Any] = field(default_factory=dict)


_TOO_LARGE = (
    f"its conversation outgrew what a step carries ({MAX_CONVERSATION_BYTES // 1000} kB, "
    f"{2 * MAX_DEPTH} levels deep)"
)


def _too_large(record: dict[str, Any]) -> bool:
    """Whether the conversation (and what the next request adds) outgrew its bound."""
    problem = measure(
        [record["messages"], record["next"]],
        what="The conversation",
        max_bytes=MAX_CONVERSATION_BYTES,
        # The messages' own nesting comes on top of what the tools returned.
        max_depth=2 * MAX_DEPTH,
    )
    return problem is not None


def _spent(agent: CompiledAgent, record: dict[str, Any]) -> str | None:
    """What of the step's budget is spent, in words, or None while it lasts."""
    if agent.requests is not None and record["requests"] >= agent.requests:
        return f"{agent.requests} model request{'s' if agent.requests != 1 else ''}"
    if agent.tokens is not None and record["tokens"] >= agent.tokens:
        return f"{record['tokens']} of {agent.tokens} tokens"
    return None


def _tool_refusal(error: ActivityError) -> tuple[str, str]:
    """The code and sentence of a tool activity that refused or failed."""
    refused = refused_tool_call(error)
    assert refused.error is not None
    return refused.error.code, str(refused.meta.get("why") or refused.error.message)


def _model_failure(error: ActivityError) -> str:
    cause = failure_cause(error)
    if isinstance(cause, ApplicationError) and cause.type in CALLER_MISTAKES:
        return f"its model request was refused: {cause.message.rstrip('.')} ({cause.type})"
    return f"its model request failed after its retries: {failure_message(cause)}"


class AgentStepRunner:
    """Runs a graph run's agent steps: its model's requests, the tool calls it asks for, and
    its budget.

    It works on the run's state (the driver it runs as, the trail, the makers, the
    conversations kept across a wait); everything else it needs is named here.

    Args:
        run: The run's state.
        this: Which run it is (its graph's name, as audit records name it; its workflow id and
            execution, in each tool call's idempotency key).
        runs_local: Whether this run runs a tool as a local activity.
        continue_as_new_if_due: Moves the run to a new history when the server suggests it
            (a step goes on there from where it was).
    """

    def __init__(
        self,
        run: RunState,
        this: ThisRun,
        *,
        runs_local: Callable[[ToolDefinition], bool],
        continue_as_new_if_due: Callable[[], Awaitable[None]],
    ) -> None:
        self._run = run
        self._this = this
        self._runs_local = runs_local
        self._continue_as_new_if_due = continue_as_new_if_due

    async def run(self, node: CompiledNode, visit: int) -> AgentEnd:
        """Runs agent step ``node`` (its ``visit``-th run) until its model has finished, its
        budget is spent (the run's state is then the gate that decides), or it cannot go on."""
        agent = node.agent
        assert agent is not None
        record = self._run.conversations.pop(node.state, None) or self._new_conversation(agent)
        if record.get("paused_at") is not None:
            # Back from the gate its spent budget opened: carried on, with a fresh budget.
            record |= {"paused_at": None, "requests": 0, "tokens": 0}
        while True:
            spent = _spent(agent, record)
            if spent is not None:
                self._pause_for_budget(node, agent, record, spent)
                return AgentEnd()
            if _too_large(record):
                return AgentEnd(problem=_TOO_LARGE)
            try:
                reply = await self._ask_model(node, agent, record)
            except ActivityError as error:
                return AgentEnd(problem=_model_failure(error))
            usage = reply.get("usage") or {}
            used = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
            record["messages"] = [*record["messages"], *reply["messages"]]
            record["requests"] += 1
            record["tokens"] += sum(used)
            total = record["total"]
            total["requests"] += 1
            total["input_tokens"] += used[0]
            total["output_tokens"] += used[1]
            record_row(
                self._run.trail,
                trail_row(
                    node.state,
                    f"model:{agent.model}",
                    "ran",
                    self._run.driver,
                    usage={"input_tokens": used[0], "output_tokens": used[1]},
                ),
            )
            self._run.add_maker()
            if _too_large(record):
                return AgentEnd(problem=_TOO_LARGE)
            asked = reply.get("tool_calls") or []
            if not asked:
                return AgentEnd(
                    output={agent.output_into: str(reply.get("text") or "")},
                    ran={"usage": dict(total)},
                )
            results = []
            for index, call in enumerate(asked, start=1):
                if index > MAX_TOOL_CALLS_PER_RESPONSE:
                    results.append(self._too_many_calls(node, agent, call))
                    continue
                results.append(
                    await self._tool_call(node, agent, visit, total["requests"], index, call)
                )
            record["next"] = {"prompt": None, "tool_results": results}
            if workflow.info().is_continue_as_new_suggested():
                # The step goes on in the next history, from here.
                self._run.conversations[node.state] = record
                await self._continue_as_new_if_due()
                del self._run.conversations[node.state]

    def gate_decided(self, gate: str) -> None:
        """Gate ``gate`` was decided: a conversation its spent budget kept goes on only where
        the decision leads back to the step."""
        for step, record in list(self._run.conversations.items()):
            if record.get("paused_at") == gate and self._run.state != step:
                del self._run.conversations[step]

    def _new_conversation(self, agent: CompiledAgent) -> dict[str, Any]:
        value = self._run.fields.get(agent.prompt_from)
        prompt = (
            value
            if isinstance(value, str)
            else ""
            if value is None
            else json.dumps(value, sort_keys=True, default=str)
        )
        return {
            "messages": [],
            "next": {"prompt": prompt, "tool_results": []},
            "requests": 0,
            "tokens": 0,
            "total": {"requests": 0, "input_tokens": 0, "output_tokens": 0},
            "paused_at": None,
        }

    async def _ask_model(
        self, node: CompiledNode, agent: CompiledAgent, record: dict[str, Any]
    ) -> dict[str, Any]:
        number = record["total"]["requests"] + 1
        reply: dict[str, Any] = await execute_lockgate(
            MODEL_CALL,
            ModelCallInput(
                model=agent.model,
                history=record["messages"],
                prompt=record["next"]["prompt"],
                tool_results=record["next"]["tool_results"],
                instructions=agent.instructions,
                tools=[
                    {
                        "name": offered_as,
                        "description": definition.description,
                        "parameters": definition.input_schema,
                    }
                    for offered_as, definition in agent.tools.items()
                ],
                node=node.state,
            ),
            result_type=dict,
            timeout=timedelta(seconds=agent.timeout_seconds),
            retry=MODEL_RETRY,
            summary=f"{node.tool}: request {number} to {agent.model}",
        )
        return reply

    async def _tool_call(
        self,
        node: CompiledNode,
        agent: CompiledAgent,
        visit: int,
        request: int,
        index: int,
        asked: dict[str, Any],
    ) -> dict[str, Any]:
        """Runs one tool call the model asked for, as the run's driver: what the model is told
        it returned. Every call is a trail row, a refusal with who was refused and its code."""
        name = str(asked.get("name"))
        returned: dict[str, Any] = {"tool_name": name, "tool_call_id": str(asked.get("id"))}
        operation = shorten(name, _NAME_SHOWN)
        asked_by = f"model:{agent.model}"
        definition = agent.tools.get(name)
        arguments = asked.get("arguments")
        scheduled = False
        if definition is None:
            offered = ", ".join(agent.tools) or "none"
            code, message = (
                ErrorCode.TOOL_NOT_FOUND.value,
                f"'{shorten(name, _NAME_SHOWN)}' is not a tool this step offers (it offers: "
                f"{offered}).",
            )
        elif not isinstance(arguments, dict):
            operation = definition.name
            code, message = (
                ErrorCode.VALIDATION_ERROR.value,
                f"The arguments of '{name}' must be a JSON object of named arguments.",
            )
        else:
            operation = definition.name
            scheduled = True
            step = f"{node.state}:{visit}:{request}:{index}"
            call = ToolActivityInput(
                arguments=arguments,
                actor=self._run.driver.to_dict(),
                request_id=f"{self._this.run_id}:{step}",
                idempotency_key=f"{self._this.run_id}/{self._this.execution}:{step}",
                # The model asked, and a model cannot consent: a tool that needs confirmation
                # on the driver's channel is refused back to it.
                confirmed=False,
                node=node.state,
            )
            try:
                with compact_results():
                    result = await execute_defined(
                        definition,
                        call,
                        local=self._runs_local(definition),
                        summary=(
                            f"{definition.name} as {self._run.driver.actor}, asked by {agent.model}"
                        ),
                    )
            except ActivityError as error:
                code, message = _tool_refusal(error)
            else:
                if result.get("success"):
                    record_row(
                        self._run.trail,
                        trail_row(
                            node.state, operation, "ran", self._run.driver, asked_by=asked_by
                        ),
                    )
                    return returned | {"outcome": "success", "content": result.get("data")}
                error_of = result.get("error") or {}
                code = str(error_of.get("code") or ErrorCode.INTERNAL_ERROR.value)
                message = str(error_of.get("message") or "it reported a failure")
        refused = code in CALLER_MISTAKES or code in _DENIED
        record_row(
            self._run.trail,
            trail_row(
                node.state,
                operation,
                "refused" if refused else "failed",
                self._run.driver,
                asked_by=asked_by,
                needs=sorted(definition.scopes) if definition is not None else [],
                code=code,
                why=shorten(message, 600),
            ),
        )
        if not scheduled:
            # A call scheduled is audited by its tool's activity; this one never reached one.
            self._audit_refusal(node, operation, code, message)
        outcome = (
            "denied"
            if code in _DENIED
            else "retried"
            if code == ErrorCode.VALIDATION_ERROR.value
            else "failed"
        )
        return returned | {
            "outcome": outcome,
            "content": {"error": {"code": code, "message": message}},
        }

    def _too_many_calls(
        self, node: CompiledNode, agent: CompiledAgent, asked: dict[str, Any]
    ) -> dict[str, Any]:
        name = str(asked.get("name"))
        message = (
            f"One response may ask for at most {MAX_TOOL_CALLS_PER_RESPONSE} tool calls; this "
            "one was not run. Ask for it again."
        )
        record_row(
            self._run.trail,
            trail_row(
                node.state,
                shorten(name, _NAME_SHOWN),
                "refused",
                self._run.driver,
                asked_by=f"model:{agent.model}",
                needs=[],
                code=ErrorCode.RATE_LIMITED.value,
                why=message,
            ),
        )
        self._audit_refusal(node, name, ErrorCode.RATE_LIMITED.value, message)
        return {
            "tool_name": name,
            "tool_call_id": str(asked.get("id")),
            "outcome": "denied",
            "content": {"error": {"code": ErrorCode.RATE_LIMITED.value, "message": message}},
        }

    def _audit_refusal(self, node: CompiledNode, operation: str, code: str, message: str) -> None:
        """The audit record of a tool call refused before any activity ran, written the first
        time only, never again on replay."""
        audit = current_audit()
        if audit is None or workflow.unsafe.is_replaying():
            return
        audit.refused(
            "agent.tool_call",
            code,
            message,
            actor=self._run.driver.to_dict(),
            graph=self._this.graph.name,
            run=self._this.run_id,
            node=node.state,
            tool=shorten(operation, _NAME_SHOWN),
        )

    def _pause_for_budget(
        self, node: CompiledNode, agent: CompiledAgent, record: dict[str, Any], spent: str
    ) -> None:
        """Keeps the conversation and moves the run to the gate the spent budget opens."""
        record["paused_at"] = agent.then_ask
        self._run.conversations[node.state] = record
        record_row(
            self._run.trail,
            trail_row(
                node.state,
                node.tool,
                "budget_spent",
                self._run.driver,
                why=f"The step used its budget ({spent}) before its model finished: the gate "
                f"'{agent.then_ask}' decides whether it goes on.",
            ),
        )
        self._run.add_maker()
        record_once(
            "node.budget_spent",
            self._run.driver,
            self._this.graph.name,
            self._this.run_id,
            node=node.state,
            operation=node.tool,
            gate=agent.then_ask,
        )
        self._run.state = agent.then_ask
