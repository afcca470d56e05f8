"""How lockgate's workflows schedule activities: one home for timeouts and retry policies, and
for reading back their results only under the seal of the worker that ran them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, FailureError

from lockgate.activities._activity_inputs import ToolActivityInput, tool_activity_name
from lockgate.activities._temporal import CALLER_MISTAKES
from lockgate.tools._tool import Retry, ToolDefinition
from lockgate.tools._tool_result import ErrorCode, ToolResult
from lockgate.workflows._history_seals import call_id, opened_result

__all__ = [
    "DEFAULT_RETRY",
    "LOCAL_RETRY",
    "LOCAL_TIMEOUT",
    "MODEL_RETRY",
    "execute_defined",
    "execute_lockgate",
    "execute_tool",
    "failure_cause",
    "failure_message",
    "local",
    "local_tool_names",
    "local_tool_patch",
    "recorded_local_tools",
    "refused_tool_call",
    "runs_local",
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


MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
    non_retryable_error_types=sorted(CALLER_MISTAKES),
)
"""An agent step's model requests: a provider's hiccup is retried, a little; after that the step
parks (a resume carries it on), so a provider that is down never keeps a run busy for ever."""


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


async def local(activity: str, check: Any) -> dict[str, Any]:
    """Runs one of lockgate's own local checks with its bounded retries: its verdict, once the
    seal of the worker that ran it opens.

    Raises:
        ActivityError: It failed on every attempt (its cause says how); the caller records a
            refusal, so the run never fails for it.
        UnsealedHistoryError: The verdict the history records carries no good seal.
    """
    activity_id = call_id()
    try:
        recorded = await workflow.execute_local_activity(
            activity,
            check,
            activity_id=activity_id,
            result_type=RawValue,
            start_to_close_timeout=LOCAL_TIMEOUT,
            retry_policy=LOCAL_RETRY,
        )
    except ActivityError:
        raise
    except FailureError as failure:
        raise _local_failure(activity) from failure
    verdict: dict[str, Any] = opened_result(activity, activity_id, recorded, dict)
    return verdict


def _local_failure(activity: str) -> ActivityError:
    """The ActivityError a regular activity's failure comes wrapped in: the SDK raises a local
    activity's failure (a refusal, the code's own error) as it is, and an exception that
    escaped the workflow would fail the run instead of being recorded."""
    return ActivityError(
        "Local activity failed",
        scheduled_event_id=0,
        started_event_id=0,
        identity="",
        activity_type=activity,
        activity_id="",
        retry_state=None,
    )


def local_tool_patch(tool: str) -> str:
    """The patch marking the first local run of ``tool`` in a run's history."""
    return f"lockgate:local:{tool}"


def runs_local(definition: ToolDefinition, recorded: frozenset[str] | None) -> bool:
    """Whether this run runs the tool as a local activity: declared ``local=True`` (never a
    mutating tool), and named among the run's local tools when it opened.

    Which commands a run issues must not change under it, so a run names the tools it runs local
    once, in its start check's local activity (``local_tools``), and every replay reads the same
    list from the history. A run recorded before it named them (``recorded`` is None) decides as
    it did then: its first local run of each tool recorded the patch :func:`local_tool_patch`, and
    a run in flight when its tool became local, whose history schedules that tool as a regular
    activity, does not find it and keeps doing so. (The way back, a tool no longer local, is not
    covered: let the runs that ran it local finish first.)
    """
    if not definition.local or definition.mutating:
        return False
    if recorded is not None:
        return definition.name in recorded
    return workflow.patched(local_tool_patch(definition.name))


def recorded_local_tools(opened: Mapping[str, Any]) -> frozenset[str] | None:
    """The local tools a start check's result records (``local_tools``); None in a result
    recorded before runs named them, whose run decides by patch (see :func:`runs_local`)."""
    recorded = opened.get("local_tools")
    return frozenset(recorded) if isinstance(recorded, list) else None


def local_tool_names(definitions: Iterable[ToolDefinition]) -> list[str]:
    """The names of the tools among ``definitions`` that may run local (never a mutating one),
    sorted: what a run names as its local tools when it opens."""
    return sorted({each.name for each in definitions if each.local and not each.mutating})


async def execute_defined(
    definition: ToolDefinition, call: ToolActivityInput, *, local: bool, summary: str
) -> dict[str, Any]:
    """Runs ``definition``'s activity with the timeout, heartbeat and retries it declares."""
    return await execute_tool(
        definition.name,
        call,
        local=local,
        timeout_seconds=definition.timeout,
        heartbeat_seconds=definition.heartbeat_seconds,
        retry=definition.retry,
        summary=summary,
    )


async def execute_tool(
    tool: str,
    call: ToolActivityInput,
    *,
    local: bool,
    timeout_seconds: float,
    heartbeat_seconds: float | None,
    retry: Retry | None,
    summary: str,
) -> dict[str, Any]:
    """Runs a tool's activity (``lockgate.tool:<tool>``) with the tool's own timeout and retries.

    Args:
        tool: The tool.
        call: Its input; lockgate's interceptor seals it on the way out, local or not.
        local: Run it as a local activity, in this worker: only for a tool declared
            ``local=True`` (never a mutating one), whose re-run after a crash changes nothing.
        timeout_seconds: The tool's timeout: each attempt's start-to-close timeout.
        heartbeat_seconds: How soon a dead worker running it is noticed (regular activities
            only: a local one cannot heartbeat, and is re-run with its workflow task instead).
        retry: The tool's retry policy; :data:`DEFAULT_RETRY` when None.
        summary: What the UI shows for the step.

    Returns:
        The tool's result as a dict, once the seal of the worker that ran it opens.

    Raises:
        ActivityError: The tool failed (its cause says how), local or not.
        UnsealedHistoryError: The result the history records carries no good seal.
    """
    name = tool_activity_name(tool)
    activity_id = call_id()
    if local:
        try:
            recorded = await workflow.execute_local_activity(
                name,
                call,
                activity_id=activity_id,
                result_type=RawValue,
                start_to_close_timeout=timedelta(seconds=timeout_seconds),
                retry_policy=tool_retry_policy(retry),
                summary=summary,
            )
        except ActivityError:
            raise
        except FailureError as failure:  # as for `local`: parked at the node, not a failed run
            raise _local_failure(name) from failure
    else:
        recorded = await workflow.execute_activity(
            name,
            call,
            activity_id=activity_id,
            result_type=RawValue,
            start_to_close_timeout=timedelta(seconds=timeout_seconds),
            heartbeat_timeout=timedelta(seconds=heartbeat_seconds) if heartbeat_seconds else None,
            retry_policy=tool_retry_policy(retry),
            summary=summary,
        )
    result: dict[str, Any] = opened_result(name, activity_id, recorded, dict)
    return result


async def execute_lockgate(
    activity: str,
    call: Any,
    *,
    result_type: type,
    timeout: timedelta,
    retry: RetryPolicy,
    summary: str,
) -> Any:
    """Runs one of lockgate's own regular activities (a signal judgement, a model request): its
    result, once the seal of the worker that ran it opens.

    Raises:
        ActivityError: It failed (its cause says how).
        UnsealedHistoryError: The result the history records carries no good seal.
    """
    activity_id = call_id()
    recorded = await workflow.execute_activity(
        activity,
        call,
        activity_id=activity_id,
        result_type=RawValue,
        start_to_close_timeout=timeout,
        retry_policy=retry,
        summary=summary,
    )
    return opened_result(activity, activity_id, recorded, result_type)


def failure_cause(error: BaseException) -> BaseException:
    """What made an activity fail, under the activity errors that wrap it."""
    cause = error
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    return cause


def failure_message(error: BaseException) -> str:
    """What made an activity fail (:func:`failure_cause`), in its own words."""
    cause = failure_cause(error)
    return str(getattr(cause, "message", None) or cause)


def refused_tool_call(error: ActivityError, *, tool: str | None = None) -> ToolResult:
    """What a tool activity that refused the call, or failed after its retries, hands back: a
    caller's mistake keeps its code, sentence and details (a refusal's ``why`` names what was
    needed, never what the driver holds); anything else is ``INTERNAL_ERROR``, naming ``tool``
    when given."""
    cause = failure_cause(error)
    if isinstance(cause, ApplicationError) and cause.type in CALLER_MISTAKES:
        details = cause.details[0] if cause.details else {}
        meta = dict(details) if isinstance(details, dict) else {}
        return ToolResult.failed(str(cause.type), cause.message, meta=meta)
    failed = f"'{tool}'" if tool else "The tool"
    return ToolResult.failed(
        ErrorCode.INTERNAL_ERROR,
        f"{failed} failed after its retries: {failure_message(cause)}",
    )
