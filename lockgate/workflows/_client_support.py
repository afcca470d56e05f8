"""What lockgate's clients share: the refusal shape and the default task queue."""

from __future__ import annotations

import contextlib
from typing import Any

from temporalio.client import WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from lockgate.gating import ErrorCode

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "refusal",
    "settle_operation",
    "update_refusal",
]

DEFAULT_TASK_QUEUE = "lockgate"


def refusal(code: str | ErrorCode, error: str, **facts: Any) -> dict[str, Any]:
    """The shape of every refusal: ``{ok: False, code, error}`` plus facts."""
    return {"ok": False, "code": str(code), "error": error, **facts}


def update_refusal(error: WorkflowUpdateFailedError, **facts: Any) -> dict[str, Any]:
    """The refusal an update's validator (or handler) raised, in the shape of :func:`refusal`."""
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return refusal(cause.type or ErrorCode.INTERNAL_ERROR, cause.message, **facts)
    return refusal(ErrorCode.INTERNAL_ERROR, str(cause or error), **facts)


async def settle_operation(operation: WithStartWorkflowOperation[Any, Any]) -> None:
    """Retrieves an update-with-start operation's own failure, already answered as a refusal.

    The operation keeps it in a future; left alone, asyncio logs "Future exception was never
    retrieved".
    """
    with contextlib.suppress(Exception):
        await operation.workflow_handle()
