"""Tools as Temporal activities: named after the tool, judged as the caller, retried only for the
tool's own failures, kept alive by heartbeats and reachable by cancellation."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, RetryState
from temporalio.workflow import ActivityCancellationType

from lockgate import Directory, InMemoryRateLimiter, Signer, ToolClient, ToolRegistry, tool
from lockgate.activities._activity_inputs import ToolActivityInput, tool_activity_name
from lockgate.identity._bindings import tool_binding
from lockgate.identity._keys import generate_private_key, public_key_text
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._tool_call import CallToolInput, call_workflow_id

with workflow.unsafe.imports_passed_through():  # this module's test workflows run sandboxed
    from tests.helpers.support import error_of

# No test here waits long for anything: a wedged workflow fails fast instead of hanging.
pytestmark = pytest.mark.timeout(60)

# Tools ------------------------------------------------------------------------------------------


@tool("demo:add", "Add two numbers.", scopes=["math"])
def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b}


@tool("demo:echo", "Say the text back; needs no scope.")
def echo(text: str) -> dict[str, Any]:
    return {"text": text}


# How often each `token` has reached the flaky tool: the activity runs in this process, outside the
# workflow sandbox, so this is the one counter every attempt sees.
flaky_attempts: Counter[str] = Counter()


@tool("demo:flaky", "Fails the first two times it is called with a token, then succeeds.")
def flaky(token: str) -> dict[str, Any]:
    flaky_attempts[token] += 1
    if flaky_attempts[token] < 3:
        raise ConnectionError(f"attempt {flaky_attempts[token]} of {token} lost its connection")
    return {"attempts": flaky_attempts[token]}


@tool("demo:slow", "Sleeps for a while without heartbeating itself.")
async def slow(seconds: float) -> dict[str, Any]:
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@tool("demo:crunch", "A long job: may take up to two minutes.", timeout=120)
async def crunch(n: int) -> dict[str, Any]:
    return {"n": n}


# What the waiting tool saw, per token: "started", then "cancelled" if cancellation reached it.
waiting_seen: dict[str, list[str]] = {}


@tool("demo:wait", "Waits until it is cancelled.")
async def wait_forever(token: str) -> dict[str, Any]:
    waiting_seen.setdefault(token, []).append("started")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        waiting_seen[token].append("cancelled")
        raise
    return {}


@tool("demo:wait_durably", "Waits until it is cancelled; heartbeats every second.", heartbeat=1)
async def wait_durably(token: str) -> dict[str, Any]:
    return await wait_forever(token)


# A workflow that schedules a tool's activity directly -----------------------------------------


@dataclass
class DirectCall:
    tool: str
    arguments: dict[str, Any]
    proof: dict[str, Any] | None = None
    maximum_attempts: int = 5
    heartbeat_seconds: float | None = None


@workflow.defn(name="test.direct_tool_call")
class DirectToolCall:
    @workflow.run
    async def run(self, call: DirectCall) -> dict[str, Any]:
        heartbeat = call.heartbeat_seconds
        result: dict[str, Any] = await workflow.execute_activity(
            tool_activity_name(call.tool),
            ToolActivityInput(arguments=call.arguments, proof=call.proof),
            result_type=dict,
            start_to_close_timeout=timedelta(seconds=30),
            heartbeat_timeout=timedelta(seconds=heartbeat) if heartbeat else None,
            retry_policy=RetryPolicy(
                initial_interval=timedelta(milliseconds=50),
                backoff_coefficient=1.0,
                maximum_attempts=call.maximum_attempts,
            ),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        return result


# Helpers -----------------------------------------------------------------------------------------


def people() -> Identities:
    return Identities({"ed": {"roles": ["editor"], "scopes": ["math"]}, "ada": {}})


async def start_direct(
    client: Client, task_queue: str, call: DirectCall
) -> WorkflowHandle[DirectToolCall, dict[str, Any]]:
    return await client.start_workflow(
        DirectToolCall.run, call, id=f"direct-{uuid4().hex[:12]}", task_queue=task_queue
    )


async def direct_refusal(client: Client, task_queue: str, call: DirectCall) -> ActivityError:
    """Runs ``call`` and returns the activity error that failed the workflow."""
    handle = await start_direct(client, task_queue, call)
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    assert isinstance(failed.value.cause, ActivityError), failed.value.cause
    return failed.value.cause


async def events_of(handle: WorkflowHandle[Any, Any]) -> list[HistoryEvent]:
    return list((await handle.fetch_history()).events)


def events(history: list[HistoryEvent], kind: int) -> list[HistoryEvent]:
    return [event for event in history if event.event_type == kind]


def started_attempts(history: list[HistoryEvent]) -> list[int]:
    started = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    return [event.activity_task_started_event_attributes.attempt for event in started]


async def eventually(condition: Callable[[], bool], what: str, within: float = 10.0) -> None:
    """Waits until ``condition()`` holds, failing with ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {within:g}s waiting until {what}")
        await asyncio.sleep(0.02)


def assert_one_non_retryable_attempt(error: ActivityError, code: str) -> ApplicationError:
    cause = error.cause
    assert isinstance(cause, ApplicationError), cause
    assert cause.type == code, (cause.type, cause.message)
    assert cause.non_retryable is True
    assert error.retry_state == RetryState.NON_RETRYABLE_FAILURE
    return cause


# 1. Tools run as activities named after the tool, with the caller's authority --------------------


async def test_a_tool_runs_as_an_activity_named_after_the_tool(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    async with lockgate_worker(tools=[add], directory=identities.directory):
        signed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed"))
        request_id = f"r-{uuid4().hex}"
        await signed.call("demo:add", {"a": 1, "b": 2}, request_id=request_id)
        history = await events_of(temporal_client.get_workflow_handle(call_workflow_id(request_id)))

    scheduled = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    names = [
        event.activity_task_scheduled_event_attributes.activity_type.name for event in scheduled
    ]
    assert names == ["lockgate.tool:demo:add"]


async def test_the_tool_activity_carries_a_summary_naming_the_tool_and_its_caller(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    async with lockgate_worker(tools=[add], directory=identities.directory):
        signed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed"))
        request_id = f"r-{uuid4().hex}"
        await signed.call("demo:add", {"a": 1, "b": 2}, request_id=request_id)
        history = await events_of(temporal_client.get_workflow_handle(call_workflow_id(request_id)))

    (scheduled,) = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    converter = temporal_client.data_converter.payload_converter
    summary = converter.from_payload(scheduled.user_metadata.summary, str)
    assert summary == "demo:add as ed"


async def test_a_signed_caller_holding_the_scope_runs_the_tool_as_themselves(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    async with lockgate_worker(tools=[add], directory=identities.directory):
        signed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed"))
        result = await signed.call("demo:add", {"a": 1, "b": 2}, request_id=f"r-{uuid4().hex}")

    assert result["success"] is True, result
    assert result["data"] == {"sum": 3}
    assert result["meta"]["principal"] == "ed"
    assert result["meta"]["channel"] == "cli"


async def test_an_unsigned_caller_is_refused_a_tool_that_needs_a_scope(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(tools=[add], directory=people().directory):
        unsigned = ToolClient(temporal_client, task_queue)
        result = await unsigned.call("demo:add", {"a": 1, "b": 2}, request_id=f"r-{uuid4().hex}")

    assert result["success"] is False
    assert error_of(result)["code"] == "FORBIDDEN"
    assert "math" in error_of(result)["message"]


async def test_an_unsigned_caller_reaches_the_activity_as_unverified_temporal_holding_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(
        tools=[add], directory=people().directory, workflows=[DirectToolCall]
    ):
        error = await direct_refusal(
            temporal_client, task_queue, DirectCall("demo:add", {"a": 1, "b": 2})
        )

    cause = assert_one_non_retryable_attempt(error, "FORBIDDEN")
    details = cause.details[0]
    assert details["needs"] == ["math"]
    assert "unverified:temporal" in details["why"]
    assert "math" in cause.message


async def test_a_signed_caller_without_the_scope_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    async with lockgate_worker(tools=[add], directory=identities.directory):
        signed = ToolClient(temporal_client, task_queue, signer=identities.signer("ada"))
        result = await signed.call("demo:add", {"a": 1, "b": 2}, request_id=f"r-{uuid4().hex}")

    assert error_of(result)["code"] == "FORBIDDEN"
    assert "math" in error_of(result)["message"]
    assert result["meta"]["principal"] == "ada"


async def test_the_scopes_a_call_is_judged_by_come_from_the_workers_directory_at_call_time(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    key = generate_private_key()

    def directory_text(scopes: list[str]) -> str:
        return (
            f"[principals.ed]\npublic_key = {json.dumps(public_key_text(key))}\n"
            f"scopes = {json.dumps(scopes)}\n"
        )

    path = tmp_path / "directory.toml"
    path.write_text(directory_text(["math"]))
    now = [0.0]
    directory = Directory.load(path, watch=True, clock=lambda: now[0])
    async with lockgate_worker(tools=[add], directory=directory):
        signed = ToolClient(temporal_client, task_queue, signer=Signer("ed", key))
        granted = await signed.call("demo:add", {"a": 1, "b": 2}, request_id=f"r-{uuid4().hex}")
        path.write_text(directory_text(["reading"]))
        now[0] += 5  # past the Directory's once-a-second look at its file
        directory.refresh()  # what its watcher thread does
        revoked = await signed.call("demo:add", {"a": 1, "b": 2}, request_id=f"r-{uuid4().hex}")

    assert granted["success"] is True, granted
    assert error_of(revoked)["code"] == "FORBIDDEN", revoked
    # What ed holds now is judged, and never written where others read it (the history).
    assert "which ed does not hold" in error_of(revoked)["message"]
    assert "reading" not in error_of(revoked)["message"]


# 2. Each caller mistake is one non-retryable attempt; the tool's own failure is retried ----------


async def test_invalid_arguments_are_one_non_retryable_validation_error(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(tools=[echo], workflows=[DirectToolCall]):
        handle = await start_direct(temporal_client, task_queue, DirectCall("demo:echo", {}))
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        history = await events_of(handle)

    assert isinstance(failed.value.cause, ActivityError)
    cause = assert_one_non_retryable_attempt(failed.value.cause, "VALIDATION_ERROR")
    assert "text" in cause.message
    assert started_attempts(history) == [1]


async def test_a_forbidden_call_is_one_non_retryable_attempt(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(
        tools=[add], directory=people().directory, workflows=[DirectToolCall]
    ):
        handle = await start_direct(
            temporal_client, task_queue, DirectCall("demo:add", {"a": 1, "b": 2})
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        history = await events_of(handle)

    assert isinstance(failed.value.cause, ActivityError)
    assert_one_non_retryable_attempt(failed.value.cause, "FORBIDDEN")
    assert started_attempts(history) == [1]


async def test_a_call_over_the_rate_limit_is_one_non_retryable_attempt(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    registry = ToolRegistry(rate_limiter=InMemoryRateLimiter(max_tokens=1))
    registry.register(echo)
    async with lockgate_worker(tools=registry, workflows=[DirectToolCall]):
        first = await start_direct(
            temporal_client, task_queue, DirectCall("demo:echo", {"text": "a"})
        )
        assert (await first.result())["success"] is True
        handle = await start_direct(
            temporal_client, task_queue, DirectCall("demo:echo", {"text": "b"})
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        history = await events_of(handle)

    assert isinstance(failed.value.cause, ActivityError)
    cause = assert_one_non_retryable_attempt(failed.value.cause, "RATE_LIMITED")
    assert "Rate limit exceeded" in cause.message
    assert started_attempts(history) == [1]


async def test_a_proof_on_a_tool_activity_is_one_non_retryable_unauthorized_attempt(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    arguments = {"a": 1, "b": 2}
    forged = Signer("ed", generate_private_key()).sign(
        tool_binding("demo:add", arguments, "r-1", "an execution")
    )
    async with lockgate_worker(
        tools=[add], directory=people().directory, workflows=[DirectToolCall]
    ):
        handle = await start_direct(
            temporal_client, task_queue, DirectCall("demo:add", arguments, proof=forged)
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        history = await events_of(handle)

    assert isinstance(failed.value.cause, ActivityError)
    cause = assert_one_non_retryable_attempt(failed.value.cause, "UNAUTHORIZED")
    assert "a tool activity takes none" in cause.message
    assert started_attempts(history) == [1]


async def test_a_tools_own_exception_is_retried_by_the_retry_policy(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token = uuid4().hex
    async with lockgate_worker(tools=[flaky], workflows=[DirectToolCall]):
        handle = await start_direct(
            temporal_client, task_queue, DirectCall("demo:flaky", {"token": token})
        )
        result = await handle.result()
        history = await events_of(handle)

    assert result["success"] is True
    assert result["data"] == {"attempts": 3}
    assert started_attempts(history) == [3]


# 3. Long tools heartbeat, and cancellation reaches the tool --------------------------------------


async def test_a_long_tool_outlives_its_heartbeat_timeout_because_the_activity_heartbeats(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(tools=[slow], workflows=[DirectToolCall]):
        handle = await start_direct(
            temporal_client,
            task_queue,
            DirectCall("demo:slow", {"seconds": 2.5}, maximum_attempts=1, heartbeat_seconds=1),
        )
        result = await handle.result()

    assert result["success"] is True
    assert result["data"] == {"slept": 2.5}


async def test_a_durable_call_of_a_long_tool_schedules_it_with_a_heartbeat_timeout(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    request_id = f"r-{uuid4().hex}"
    async with lockgate_worker(tools=[crunch]):
        result = await ToolClient(temporal_client, task_queue).call(
            "demo:crunch", {"n": 1}, request_id=request_id
        )
        history = await events_of(temporal_client.get_workflow_handle(call_workflow_id(request_id)))

    assert result["success"] is True, result
    (scheduled,) = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    attributes = scheduled.activity_task_scheduled_event_attributes
    assert attributes.heartbeat_timeout.ToTimedelta() == timedelta(seconds=30)
    assert attributes.start_to_close_timeout.ToTimedelta() == timedelta(seconds=120)


async def test_cancelling_the_workflow_reaches_the_running_tool_as_cancelled_error(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token = uuid4().hex
    async with lockgate_worker(tools=[wait_forever], workflows=[DirectToolCall]):
        handle = await start_direct(
            temporal_client,
            task_queue,
            DirectCall("demo:wait", {"token": token}, maximum_attempts=1, heartbeat_seconds=1),
        )
        await eventually(lambda: "started" in waiting_seen.get(token, []), "the tool started")
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        await eventually(lambda: "cancelled" in waiting_seen[token], "the tool saw the cancel")

    assert waiting_seen[token] == ["started", "cancelled"]
    assert isinstance(failed.value.cause, CancelledError)


async def test_cancelling_a_durable_call_reaches_its_running_tool_as_cancelled_error(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, f"r-{uuid4().hex}"
    async with lockgate_worker(tools=[wait_durably]):
        handle = await temporal_client.start_workflow(
            "lockgate.tool_call",
            CallToolInput("demo:wait_durably", {"token": token}, request_id=request_id),
            id=call_workflow_id(request_id),
            task_queue=task_queue,
        )
        await eventually(lambda: "started" in waiting_seen.get(token, []), "the tool started")
        await handle.cancel()
        await eventually(lambda: "cancelled" in waiting_seen[token], "the tool saw the cancel")
        history = await events_of(handle)

    (scheduled,) = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    heartbeat = scheduled.activity_task_scheduled_event_attributes.heartbeat_timeout
    assert heartbeat.ToTimedelta() == timedelta(seconds=1)
    assert waiting_seen[token] == ["started", "cancelled"]
