"""What lockgate's clients share: refusals of updates and tool calls, the default task queue, small
helpers."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, cast

from temporalio.client import (
    WithStartWorkflowOperation,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from lockgate._defaults import DEFAULT_TASK_QUEUE
from lockgate.contracts import RunView, ToolCallResult, refusal
from lockgate.graphs._declare import graph_spec
from lockgate.tools._tool_result import ErrorCode, ToolResult

__all__ = [
    "DEFAULT_POLL_SECONDS",
    "DEFAULT_TASK_QUEUE",
    "describe_run",
    "execution_closed",
    "graph_name",
    "quote_literal",
    "refused_by_update",
    "settle_operation",
    "status_name",
    "summary_of",
    "tool_refusal",
    "update_refusal",
    "updated",
]

DEFAULT_POLL_SECONDS = 20.0
"""How long one update call waits for its result before the client asks again by its id."""


def tool_refusal(code: str | ErrorCode, message: str, request_id: str) -> ToolCallResult:
    """A tool client's refusal, in the shape of every tool result (``success: False``)."""
    refused = ToolResult.failed(code, message, meta={"request_id": request_id})
    return cast(ToolCallResult, refused.to_dict())


def refused_by_update(error: WorkflowUpdateFailedError) -> tuple[str, str]:
    """The code and sentence an update's validator (or handler) refused with."""
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return cause.type or ErrorCode.INTERNAL_ERROR.value, cause.message
    return ErrorCode.INTERNAL_ERROR.value, str(cause or error)


def update_refusal(error: WorkflowUpdateFailedError, **facts: Any) -> RunView:
    """The refusal an update's validator (or handler) raised, as a refusal with ``facts``."""
    return refusal(*refused_by_update(error), **facts)


async def settle_operation(operation: WithStartWorkflowOperation[Any, Any]) -> None:
    """Retrieves an update-with-start operation's own failure, already answered as a refusal.

    The operation keeps it in a future; left alone, asyncio logs "Future exception was never
    retrieved".
    """
    with contextlib.suppress(Exception):
        await operation.workflow_handle()


def quote_literal(value: str) -> str:
    """``value`` as a string literal of a visibility query."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


async def describe_run(
    handle: WorkflowHandle[Any, Any],
) -> WorkflowExecutionDescription | RunView:
    """The server's description of a run, or the NOT_FOUND refusal if there is no such run."""
    try:
        return await handle.describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return refusal(ErrorCode.NOT_FOUND, f"No run '{handle.id}'.", run_id=handle.id)
        raise


def execution_closed(error: RPCError) -> bool:
    """Whether an update failed because the execution it names has closed (or is gone): the
    caller then reads how it ended instead."""
    return error.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION)


def status_name(status: WorkflowExecutionStatus | None) -> str:
    """How a run's execution stands, in a word (``completed``, ``terminated``...)."""
    return status.name.lower() if status is not None else "in an unknown state"


def summary_of(inputs: Mapping[str, Any]) -> str:
    """A run's one-line summary in the Temporal UI: its first non-empty text input."""
    for value in inputs.values():
        if isinstance(value, str) and value:
            return value[:80]
    return "run"


def graph_name(graph: str | type) -> str:
    """A graph's name, given it or its ``@graph`` class."""
    if isinstance(graph, str):
        return graph
    spec = graph_spec(graph)
    if spec is None:
        raise TypeError(f"{graph!r} is not a @graph class")
    return spec.name


async def updated(
    handle: WorkflowHandle[Any, Any], update: str, arg: Any, *, poll_seconds: float
) -> dict[str, Any]:
    """What the run's ``update`` handler returned for ``arg``.

    Each call to the server waits at most ``poll_seconds``. When that passes first (a busy
    server, a worker restarting, an answer that leads to a long node), the same update is asked
    for again by its id: the server hands back the update it already holds, so it is applied
    once however often it is asked for. A caller that stops waiting (``asyncio.wait_for``)
    cancels this as usual.
    """
    update_id = f"{update}-{uuid.uuid4().hex}"
    while True:
        try:
            result: dict[str, Any] = await handle.execute_update(
                update,
                arg,
                id=update_id,
                result_type=dict,
                rpc_timeout=timedelta(seconds=poll_seconds),
            )
        except WorkflowUpdateRPCTimeoutOrCancelledError as error:
            if isinstance(error.__cause__, asyncio.CancelledError):
                raise asyncio.CancelledError() from error
            continue
        return result
