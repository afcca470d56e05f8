"""The durable tool call's client: one call per request id, however often asked."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from typing import Any, cast

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from lockgate.clients._client_support import (
    DEFAULT_TASK_QUEUE,
    execution_closed,
    quote_literal,
    refused_by_update,
    settle_operation,
    status_name,
    tool_refusal,
)
from lockgate.contracts import ToolCallResult
from lockgate.identity._bindings import confirm_binding, tool_binding
from lockgate.identity._proofs import Signer
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._catalogue import read_catalogue
from lockgate.workflows._failures import outcome_of
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN, withdraw
from lockgate.workflows._tool_call import (
    CallToolInput,
    ConfirmCallInput,
    WaitCallInput,
    call_workflow_id,
)

__all__ = ["ToolClient"]

_VISIBILITY_READS = 20
_VISIBILITY_PAUSE = 0.05
"""How often, and how far apart, a listing is read again until it catches up with a start."""


class ToolClient:
    """Calls tools through Temporal, durably: one call per request id, however often asked.

    Args:
        client: A Temporal client.
        task_queue: Where the lockgate worker listens.
        signer: Signs each call (its principal's scopes then apply); unsigned calls are
            ``unverified:<channel>`` and hold nothing.
        channel: The channel of unsigned calls.
    """

    def __init__(
        self,
        client: Client,
        task_queue: str = DEFAULT_TASK_QUEUE,
        signer: Signer | None = None,
        *,
        channel: str = "temporal",
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.signer = signer
        self.channel = channel

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        plan: bool = False,
    ) -> ToolCallResult:
        """Calls ``tool``; returns its result, or the request to confirm it (with the token).

        Asking again with the same ``request_id`` returns the first answer, never runs twice.
        With ``plan``, the worker checks everything a call is checked for and runs nothing: the
        result's ``data["plan"]`` says what would run (a plan spends no rate budget).

        A signed call is started first and held back; the signer then signs for the execution
        the server started, the tool, these arguments and the request id, and the proof goes to
        the call as its ``call`` update. A proof the call refuses is returned as the refusal,
        and the call, which ran nothing, is withdrawn.
        """
        request_id = request_id or uuid.uuid4().hex
        arguments = dict(arguments or {})
        signer = self.signer
        call = CallToolInput(
            tool, arguments, None, self.channel, request_id, plan, signed=signer is not None
        )
        workflow_id = call_workflow_id(request_id)
        options: dict[str, Any] = {
            "id": workflow_id,
            "task_queue": self.task_queue,
            "id_reuse_policy": WorkflowIDReusePolicy.REJECT_DUPLICATE,
            "static_summary": f"{tool} ({request_id})",
        }
        if signer is None:
            return await self._call_unsigned(call, options)
        try:
            # Held back until the proof, which names the execution about to start, arrives.
            started = await self.client.start_workflow(
                "lockgate.tool_call",
                call,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                start_delay=SIGNED_START_WITHIN,
                **options,
            )
        except WorkflowAlreadyStartedError as running:
            # Asked before: the call runs once, and answers every ask with its first outcome.
            return await self._asked_again(workflow_id, request_id, running.run_id)
        execution = started.first_execution_run_id or ""
        handle = self.client.get_workflow_handle(workflow_id, run_id=execution)
        proof = signer.sign(tool_binding(tool, arguments, request_id, execution))
        try:
            result: ToolCallResult = await handle.execute_update("call", proof, result_type=dict)
        except WorkflowUpdateFailedError as error:
            await withdraw(handle)  # it ran nothing, and without a proof never will
            return tool_refusal(*refused_by_update(error), request_id=request_id)
        except RPCError as error:
            if not execution_closed(error):
                raise
            # Someone ended the execution this client started before its proof reached it.
            return await self._answer_of(handle, request_id)
        return await self._with_token(result, workflow_id)

    async def _call_unsigned(self, call: CallToolInput, options: dict[str, Any]) -> ToolCallResult:
        request_id = str(call.request_id)
        operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            "lockgate.tool_call",
            call,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            **options,
        )
        try:
            result: ToolCallResult = await self.client.execute_update_with_start_workflow(
                "outcome",
                WaitCallInput(),
                start_workflow_operation=operation,
                result_type=dict,
            )
        except WorkflowAlreadyStartedError:
            # The call already ran and closed: its first answer stands.
            await settle_operation(operation)
            return await self._first_answer(options["id"], request_id)
        except WorkflowUpdateFailedError as error:
            return tool_refusal(*refused_by_update(error), request_id=request_id)
        return await self._with_token(result, options["id"])

    async def _asked_again(
        self, workflow_id: str, request_id: str, current_run: str | None
    ) -> ToolCallResult:
        """The outcome of a call asked for before, from its first execution (never one someone
        started later under its request id): its confirmation request while it waits for one,
        else its result once it has one."""
        handle = await self._first_execution(workflow_id, current_run)
        try:
            result: ToolCallResult = await handle.execute_update(
                "outcome", WaitCallInput(), result_type=dict
            )
        except WorkflowUpdateFailedError as error:
            return tool_refusal(*refused_by_update(error), request_id=request_id)
        except RPCError as error:
            if not execution_closed(error):
                raise
            return await self._answer_of(handle, request_id)  # it closed
        return await self._with_token(result, workflow_id)

    async def _first_answer(self, workflow_id: str, request_id: str) -> ToolCallResult:
        """What a closed call answered first."""
        return await self._answer_of(await self._first_execution(workflow_id, None), request_id)

    async def _first_execution(
        self, workflow_id: str, current_run: str | None
    ) -> WorkflowHandle[Any, Any]:
        """The first execution of a call's workflow id: the call its request id made. Anyone
        may start another under that id once it closed; asking again answers from the first.

        Visibility is written after the fact: the listing is read until it shows the execution
        running now (``current_run``, when known), so that one before it is listed too.
        """
        query = f"WorkflowId = {quote_literal(workflow_id)}"
        listed: list[Any] = []
        for _ in range(_VISIBILITY_READS):
            listed = [execution async for execution in self.client.list_workflows(query)]
            if current_run is None or any(e.run_id == current_run for e in listed):
                break
            await asyncio.sleep(_VISIBILITY_PAUSE)
        first = min(listed, key=lambda e: (e.start_time, e.run_id), default=None)
        # Not listed at all: the current one.
        run_id = first.run_id if first is not None else current_run
        return self.client.get_workflow_handle(workflow_id, run_id=run_id, result_type=dict)

    async def _answer_of(self, handle: WorkflowHandle[Any, Any], request_id: str) -> ToolCallResult:
        """How the call execution ``handle`` names ended: its result (a refused call's is its
        refusal), or a refusal saying how it ended."""
        try:
            finished: ToolCallResult = await handle.result(follow_runs=False)
        except WorkflowFailureError as error:
            outcome = outcome_of(error)
            if outcome is not None:
                return cast(ToolCallResult, outcome)
            description = await handle.describe()
            return tool_refusal(
                ErrorCode.INTERNAL_ERROR,
                f"Call '{request_id}' ended {status_name(description.status)}: "
                f"{error.cause or error}",
                request_id=request_id,
            )
        return finished

    async def _with_token(self, result: ToolCallResult, workflow_id: str) -> ToolCallResult:
        """A request to confirm, with its token: not in the update's result (history keeps
        that), but from the call's ``confirmation`` query."""
        if (result.get("meta") or {}).get("requires_confirmation"):
            handle = self.client.get_workflow_handle(workflow_id)
            with contextlib.suppress(WorkflowQueryFailedError):
                # Fails only if the call expired meanwhile; the result says it needed one.
                result["data"] = await handle.query("confirmation", result_type=dict)
        return result

    async def confirm(self, request_id: str, token: str) -> ToolCallResult:
        """Confirms a pending call with its token; returns the call's result."""
        proof = None
        if self.signer is not None:
            proof = self.signer.sign(confirm_binding(request_id, token))
        handle = self.client.get_workflow_handle(call_workflow_id(request_id))
        try:
            result: ToolCallResult = await handle.execute_update(
                "confirm", ConfirmCallInput(token, proof), result_type=dict
            )
            return result
        except WorkflowUpdateFailedError as error:
            return tool_refusal(*refused_by_update(error), request_id=request_id)
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return tool_refusal(ErrorCode.NOT_FOUND, f"No call '{request_id}'.", request_id)
            raise

    async def list(self) -> list[dict[str, Any]]:
        """The tools the worker on this task queue serves, in the MCP / LLM wire shape."""
        tools: list[dict[str, Any]] = (await read_catalogue(self.client, self.task_queue))["tools"]
        return tools
