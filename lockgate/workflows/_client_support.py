"""What lockgate's clients share: the refusal shapes and the default task queue."""

from __future__ import annotations

import contextlib
from typing import Any, cast

from temporalio.client import WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from lockgate.contracts import RunView, ToolCallResult
from lockgate.gating import ErrorCode, ToolResult

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "refusal",
    "settle_operation",
    "tool_refusal",
    "update_refusal",
]

DEFAULT_TASK_QUEUE = "lockgate"


def refusal(code: str | ErrorCode, message: str, **facts: Any) -> RunView:
    """A graph client's refusal: ``{ok: False, error: {code, message}}`` plus facts."""
    refused: dict[str, Any] = {"ok": False, "error": {"code": str(code), "message": message}}
    return cast(RunView, refused | facts)


def tool_refusal(code: str | ErrorCode, message: str, request_id: str) -> ToolCallResult:
    """A tool client's refusal, in the shape of every tool result (``success: False``)."""
    refused = ToolResult.error(code, message, meta={"request_id": request_id})
    return cast(ToolCallResult, refused.to_dict())


def refused_by_update(error: WorkflowUpdateFailedError) -> tuple[str, str]:
    """The code and sentence an update's validator (or handler) refused with."""
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return cause.type or ErrorCode.INTERNAL_ERROR.value, cause.message
    return ErrorCode.INTERNAL_ERROR.value, str(cause or error)


def update_refusal(error: WorkflowUpdateFailedError, **facts: Any) -> RunView:
    """The refusal an update's validator (or handler) raised, in the shape of :func:`refusal`."""
    return refusal(*refused_by_update(error), **facts)


async def settle_operation(operation: WithStartWorkflowOperation[Any, Any]) -> None:
    """Retrieves an update-with-start operation's own failure, already answered as a refusal.

    The operation keeps it in a future; left alone, asyncio logs "Future exception was never
    retrieved".
    """
    with contextlib.suppress(Exception):
        await operation.workflow_handle()
