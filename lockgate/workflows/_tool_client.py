"""The durable tool call's client: one call per request id, however often asked."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from typing import Any, cast

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowFailureError,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from lockgate.contracts import ToolCallResult
from lockgate.gating import ErrorCode, Signer, confirm_binding, tool_binding
from lockgate.workflows._catalogue import describe_worker
from lockgate.workflows._client_support import (
    DEFAULT_TASK_QUEUE,
    refused_by_update,
    settle_operation,
    tool_refusal,
)
from lockgate.workflows._failures import outcome_of
from lockgate.workflows._tool_call import (
    CallToolInput,
    ConfirmCallInput,
    WaitCallInput,
    call_workflow_id,
)

__all__ = ["ToolClient"]


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
        """
        request_id = request_id or uuid.uuid4().hex
        arguments = dict(arguments or {})
        proof = None
        if self.signer is not None:
            proof = self.signer.sign(tool_binding(tool, arguments, request_id))
        call = CallToolInput(tool, arguments, proof, self.channel, request_id, plan)
        workflow_id = call_workflow_id(request_id)
        operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            "lockgate.tool_call",
            call,
            id=workflow_id,
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            static_summary=f"{tool} ({request_id})",
        )
        try:
            result: ToolCallResult = await self.client.execute_update_with_start_workflow(
                "outcome",
                WaitCallInput(),
                start_workflow_operation=operation,
                result_type=dict,
            )
            if (result.get("meta") or {}).get("requires_confirmation"):
                # The token is not in the update's result (history keeps that); ask for it.
                handle = self.client.get_workflow_handle(workflow_id)
                with contextlib.suppress(WorkflowQueryFailedError):
                    # Fails only if the call expired meanwhile; the result says it needed one.
                    result["data"] = await handle.query("confirmation", result_type=dict)
            return result
        except WorkflowAlreadyStartedError:
            # The call already ran and closed: its first answer stands.
            await settle_operation(operation)
            handle = self.client.get_workflow_handle(workflow_id, result_type=dict)
            try:
                finished: ToolCallResult = await handle.result()
            except WorkflowFailureError as error:
                outcome = outcome_of(error)
                if outcome is None:
                    raise
                return cast(ToolCallResult, outcome)
            return finished
        except WorkflowUpdateFailedError as error:
            return tool_refusal(*refused_by_update(error), request_id=request_id)

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
        tools: list[dict[str, Any]] = (await describe_worker(self.client, self.task_queue))["tools"]
        return tools
