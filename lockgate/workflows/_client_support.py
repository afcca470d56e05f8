"""What lockgate's clients share: the refusal shape, the task queue, and the worker's catalogue."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from lockgate.gating import ErrorCode
from lockgate.workflows._tool_call import DescribeWorkflow

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "describe_worker",
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


async def describe_worker(client: Client, task_queue: str) -> dict[str, Any]:
    """``{tools, graphs}`` the worker on ``task_queue`` serves, asked through a short workflow."""
    described: dict[str, Any] = await client.execute_workflow(
        DescribeWorkflow.run,
        id=f"lockgate-describe-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
    )
    return described


async def settle_operation(operation: WithStartWorkflowOperation[Any, Any]) -> None:
    """Retrieves an update-with-start operation's own failure, already answered as a refusal.

    The operation keeps it in a future; left alone, asyncio logs "Future exception was never
    retrieved".
    """
    with contextlib.suppress(Exception):
        await operation.workflow_handle()
