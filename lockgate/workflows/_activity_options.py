"""How lockgate's workflows schedule activities: one home for timeouts and retry policies."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

from lockgate.activities import CALLER_MISTAKES, Retry, ToolDefinition

__all__ = [
    "DEFAULT_RETRY",
    "LOCAL_RETRY",
    "LOCAL_TIMEOUT",
    "heartbeat_timeout",
    "local",
    "tool_retry_policy",
]

DEFAULT_RETRY = Retry()
"""A tool's own failures are retried this way unless it declares ``retry=``: :class:`Retry`'s
defaults, the one place they are written."""

LOCAL_TIMEOUT = timedelta(seconds=30)
"""How long one attempt of lockgate's own local activities (judging, verifying) may take."""

LOCAL_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=5),
    maximum_attempts=5,
)
"""Lockgate's own local activities: bounded, so a broken worker fails a step, never a run's task
forever; the workflow turns the failure into a refusal it records."""


def heartbeat_timeout(definition: ToolDefinition) -> timedelta | None:
    """How soon a dead worker running this tool is noticed (see ``heartbeat_seconds``)."""
    seconds = definition.heartbeat_seconds
    return timedelta(seconds=seconds) if seconds is not None else None


def tool_retry_policy(retry: Retry | None) -> RetryPolicy:
    """How a tool's own failures are retried; caller mistakes never are."""
    retry = retry or DEFAULT_RETRY
    return RetryPolicy(
        initial_interval=timedelta(seconds=retry.initial_interval_seconds),
        backoff_coefficient=retry.backoff,
        maximum_interval=timedelta(seconds=retry.max_interval_seconds),
        maximum_attempts=retry.max_attempts,
        non_retryable_error_types=sorted(CALLER_MISTAKES),
    )


async def local(activity: str, *arguments: Any, result_type: type) -> Any:
    """Runs one of lockgate's own local activities with its bounded retries."""
    return await workflow.execute_local_activity(
        activity,
        args=arguments,
        start_to_close_timeout=LOCAL_TIMEOUT,
        retry_policy=LOCAL_RETRY,
        result_type=result_type,
    )
