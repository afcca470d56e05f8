"""Garbage from callers is refused with a code and a sentence, and never wedges a workflow task.

A workflow task that fails on a caller's input is retried forever (TEMPORAL-NOTES.md §1, §6), so
each test below also reads the run's history and finds no ``WorkflowTaskFailed`` in it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from uuid import uuid4

import pytest
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution, WorkflowType
from temporalio.api.enums.v1 import EventType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    SignalWorkflowExecutionRequest,
    StartWorkflowExecutionRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError

from lockgate import GraphClient, ToolClient, tool
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.graphs import OpenEssay
from tests.helpers.support import outcome, update_refused

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")

# Fails the rubric on every draft the writer can make in three rounds: the run asks an editor.
NEEDS_AN_EDITOR = {"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}

NOT_A_PROOF = [
    pytest.param(42, id="a number"),
    pytest.param("publish_as_is", id="a string"),
    pytest.param({"choice": "publish_as_is"}, id="an object without a proof"),
    pytest.param(None, id="null"),
]


@tool("demo:launch", "Launches something: every call is confirmed first.", confirm=True)
def launch(n: int) -> dict[str, Any]:
    return {"n": n}


async def assert_no_failed_workflow_task(handle: WorkflowHandle[Any, Any]) -> None:
    history = (await handle.fetch_history()).events
    failed = [e for e in history if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert failed == []


async def eventually(read: Callable[[], Awaitable[T]], holds: Callable[[T], bool], what: str) -> T:
    """Reads until ``holds(value)``; fails with ``what`` after ten seconds."""
    deadline = time.monotonic() + 10
    while True:
        value = await read()
        if holds(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting until {what}; last read {value!r}")
        await asyncio.sleep(0.05)


async def start_raw(
    client: Client, workflow: str, task_queue: str, *args: Any, id: str | None = None
) -> WorkflowHandle[Any, Any]:
    return await client.start_workflow(
        workflow, args=list(args), id=id or f"garbage-{uuid4().hex}", task_queue=task_queue
    )


async def editor_gate(client: Client, task_queue: str) -> WorkflowHandle[Any, Any]:
    """A run of essay:open (essay:review, started unsigned) waiting at its editor gate."""
    shown = await GraphClient(client, task_queue).start(OpenEssay, NEEDS_AN_EDITOR)
    assert shown["status"] == "waiting", shown
    return client.get_workflow_handle(shown["run_id"])


async def a_call_awaiting_confirmation(client: Client, task_queue: str) -> WorkflowHandle[Any, Any]:
    request_id = f"r-{uuid4().hex}"
    asked = await ToolClient(client, task_queue).call(
        "demo:launch", {"n": 1}, request_id=request_id
    )
    assert asked["meta"]["requires_confirmation"] is True, asked
    return client.get_workflow_handle(call_workflow_id(request_id))


@tool("demo:scale", "Scales a number.", scopes=["math"])
def scale(x: float) -> dict[str, Any]:
    return {"x": x * 2}


UNDECODABLE = [
    pytest.param(
        Payload(metadata={"encoding": b"binary/bogus"}, data=b"\x00"), id="bogus encoding"
    ),
    pytest.param(
        Payload(metadata={"encoding": b"json/plain"}, data=b"{not json"), id="broken json"
    ),
]


async def start_undecodable(
    client: Client, workflow: str, task_queue: str, payload: Payload
) -> WorkflowHandle[Any, Any]:
    """Starts ``workflow`` with a payload no converter can read, past the client's converter."""
    workflow_id = f"undecodable-{uuid4().hex}"
    await client.workflow_service.start_workflow_execution(
        StartWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_id=workflow_id,
            workflow_type=WorkflowType(name=workflow),
            task_queue=TaskQueue(name=task_queue),
            input=Payloads(payloads=[payload]),
            identity="test",
            request_id=uuid4().hex,
        )
    )
    return client.get_workflow_handle(workflow_id)


async def closed_or_wedged(handle: WorkflowHandle[Any, Any]) -> list[int]:
    """The run's event types once it has closed or one of its workflow tasks has failed."""

    async def kinds() -> list[int]:
        return [event.event_type for event in (await handle.fetch_history()).events]

    def settled(seen: list[int]) -> bool:
        return EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in seen or any(
            kind
            in (
                EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
                EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
            )
            for kind in seen
        )

    return await eventually(kinds, settled, "the run closed or a workflow task failed")


def refused_signals(shown: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in shown["trail"] if row["outcome"] == "refused"]


# Start inputs ------------------------------------------------------------------------------------

GARBAGE_CALLS = [
    pytest.param([[1, 2, 3]], "one object", id="a list"),
    pytest.param([42], "one object", id="a number"),
    pytest.param([{"tool": "demo:launch", "colour": "red"}], "unknown keys colour", id="unknown"),
    pytest.param([{"arguments": {"n": 1}}], "'tool' is missing", id="no tool"),
    pytest.param([{"tool": "demo:launch"}, {"tool": "demo:launch"}], "one object", id="two args"),
    pytest.param([], "one object", id="none"),
]


@pytest.mark.parametrize(("args", "says"), GARBAGE_CALLS)
async def test_a_tool_call_started_with_garbage_ends_in_a_validation_error(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    args: list[Any],
    says: str,
) -> None:
    async with lockgate_worker(tools=[launch]):
        handle = await start_raw(temporal_client, "lockgate.tool_call", task_queue, *args)
        result = await outcome(handle)
        await assert_no_failed_workflow_task(handle)

    assert result["success"] is False
    assert result["error"]["code"] == "VALIDATION_ERROR"
    assert says in result["error"]["message"]


GARBAGE_CALL_FIELDS = [
    pytest.param({"tool": 7}, "VALIDATION_ERROR", id="tool is a number"),
    pytest.param({"tool": "demo:nope"}, "TOOL_NOT_FOUND", id="unknown tool"),
    pytest.param({"tool": "demo:launch", "arguments": [1]}, "VALIDATION_ERROR", id="list args"),
    pytest.param({"tool": "demo:launch", "arguments": {"n": "x"}}, "VALIDATION_ERROR", id="bad n"),
    pytest.param({"tool": "demo:launch", "proof": "me"}, "UNAUTHORIZED", id="proof is text"),
    pytest.param({"tool": "demo:launch", "proof": {"a": [[[]]]}}, "UNAUTHORIZED", id="proof junk"),
]


@pytest.mark.parametrize(("call", "code"), GARBAGE_CALL_FIELDS)
async def test_a_tool_call_with_garbage_fields_is_refused_with_a_code_and_a_sentence(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    call: object,
    code: str,
) -> None:
    async with lockgate_worker(tools=[launch]):
        handle = await start_raw(temporal_client, "lockgate.tool_call", task_queue, call)
        result = await outcome(handle)
        await assert_no_failed_workflow_task(handle)

    assert result["success"] is False
    assert result["error"]["code"] == code
    assert result["error"]["message"].endswith((".", "?")), result["error"]["message"]


@pytest.mark.parametrize("payload", UNDECODABLE)
async def test_a_tool_call_started_with_an_undecodable_payload_fails_instead_of_wedging(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, payload: Payload
) -> None:
    async with lockgate_worker(tools=[launch]):
        handle = await start_undecodable(temporal_client, "lockgate.tool_call", task_queue, payload)
        seen = await closed_or_wedged(handle)
        with pytest.raises(WorkflowFailureError) as failed:
            await outcome(handle)

    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in seen
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "RuntimeError"
    assert "could not be converted" in str(cause) or "Failed decoding arguments" in str(cause)


async def test_a_signed_call_whose_arguments_no_proof_can_name_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = Identities({"ed": {"scopes": ["math"]}})
    request_id = f"r-{uuid4().hex}"
    call = {"tool": "demo:scale", "arguments": {"x": float("nan")}, "signed": True}
    async with lockgate_worker(tools=[scale], directory=identities.directory):
        handle = await start_raw(
            temporal_client,
            "lockgate.tool_call",
            task_queue,
            {**call, "request_id": request_id},
            id=call_workflow_id(request_id),
        )
        proof = identities.signer("ed").sign(
            {
                "kind": "tool",
                "tool": "demo:scale",
                "arguments": "sha256:0",
                "request": request_id,
                "execution": handle.first_execution_run_id,
            }
        )
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("call", proof)
        await handle.cancel()
        result = await outcome(handle)
        await assert_no_failed_workflow_task(handle)

    assert update_refused(refused.value)["code"] == "VALIDATION_ERROR"
    assert "not JSON data a proof can name" in update_refused(refused.value)["message"]
    assert result["success"] is False and result["meta"].get("principal") is None


GARBAGE_STARTS = [
    pytest.param([[1, 2]], "not list", id="a list"),
    pytest.param([42], "not int", id="a number"),
    pytest.param([{"inputs": {}, "colour": "red"}], "unknown keys (colour)", id="unknown keys"),
    pytest.param([{"inputs": {}}, {"inputs": {}}], "it got 2", id="two args"),
    pytest.param([], "it got 0", id="none"),
    pytest.param([{"inputs": {"title": 5}}], "starting fields", id="bad field value"),
]


@pytest.mark.parametrize(("args", "says"), GARBAGE_STARTS)
async def test_a_graph_run_started_with_garbage_is_refused_with_a_sentence(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    args: list[Any],
    says: str,
) -> None:
    async with lockgate_worker(graphs=[OpenEssay]):
        handle = await start_raw(temporal_client, "essay:open", task_queue, *args)
        shown = await outcome(handle)
        await assert_no_failed_workflow_task(handle)

    assert shown["ok"] is False
    assert shown["status"] == "refused"
    assert shown["error"]["code"] == "VALIDATION_ERROR"
    assert says in shown["error"]["message"]


async def test_a_graph_run_started_with_a_proof_inside_its_start_is_refused_as_unauthorized(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # Where lockgate's clients put it before proofs named their execution.
    async with lockgate_worker(graphs=[OpenEssay]):
        start = {"inputs": NEEDS_AN_EDITOR, "proof": {"lockgate_proof": "yes"}}
        handle = await start_raw(temporal_client, "essay:open", task_queue, start)
        shown = await outcome(handle)
        await assert_no_failed_workflow_task(handle)

    assert shown["error"]["code"] == "UNAUTHORIZED"
    assert "carries its start proof inside its start input" in shown["error"]["message"]
    assert shown["trail"] == []


async def test_a_signed_graph_start_whose_inputs_no_proof_can_name_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = Identities({"ed": {"scopes": ["essay:publish"]}})
    start = {"inputs": {**NEEDS_AN_EDITOR, "weight": float("inf")}, "signed": True}
    async with lockgate_worker(graphs=[OpenEssay], directory=identities.directory):
        handle = await start_raw(temporal_client, "essay:open", task_queue, start)
        proof = identities.signer("ed").sign(
            {
                "kind": "start",
                "graph": "essay:open",
                "run": handle.id,
                "execution": handle.first_execution_run_id,
            }
        )
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("start", proof)
        await handle.cancel()
        shown = await outcome(handle)
        await assert_no_failed_workflow_task(handle)

    assert update_refused(refused.value)["code"] == "VALIDATION_ERROR"
    assert "not JSON data a proof can name" in update_refused(refused.value)["message"]
    assert shown["status"] == "refused" and shown["trail"] == []


@pytest.mark.parametrize("payload", UNDECODABLE)
async def test_a_graph_run_started_with_an_undecodable_payload_fails_instead_of_wedging(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, payload: Payload
) -> None:
    async with lockgate_worker(graphs=[OpenEssay]):
        handle = await start_undecodable(temporal_client, "essay:open", task_queue, payload)
        try:
            seen = await closed_or_wedged(handle)
        finally:
            if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await handle.terminate("wedged by an undecodable start payload")

    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in seen


# Updates -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", NOT_A_PROOF)
async def test_a_garbage_decide_update_is_refused_and_the_gate_keeps_waiting(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, answer: object
) -> None:
    async with lockgate_worker(graphs=[OpenEssay]):
        handle = await editor_gate(temporal_client, task_queue)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("decide", answer)
        shown = await handle.query("show")
        await assert_no_failed_workflow_task(handle)

    cause = refused.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UNVERIFIED_APPROVER"
    assert "carries no valid proof" in cause.message
    assert shown["status"] == "waiting"


@pytest.mark.parametrize("value", NOT_A_PROOF)
async def test_a_garbage_resume_update_is_refused_as_unauthorized(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, value: object
) -> None:
    async with lockgate_worker(graphs=[OpenEssay]):
        handle = await editor_gate(temporal_client, task_queue)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("resume", value)
        await assert_no_failed_workflow_task(handle)

    cause = refused.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UNAUTHORIZED"
    assert "carries no valid proof" in cause.message


GARBAGE_UPDATES = [
    pytest.param("confirm", 42, id="confirm: a number"),
    pytest.param("confirm", "token", id="confirm: a string"),
    pytest.param("confirm", {"nope": 1}, id="confirm: an object without a token"),
    pytest.param("confirm", {"token": 42}, id="confirm: a token that is a number"),
    pytest.param("confirm", None, id="confirm: null"),
    pytest.param("outcome", 42, id="outcome: a number"),
    pytest.param("outcome", "soon", id="outcome: a string"),
    pytest.param("outcome", [True], id="outcome: a list"),
]


@pytest.mark.parametrize(("update", "payload"), GARBAGE_UPDATES)
async def test_a_garbage_confirm_or_outcome_update_is_refused_and_the_call_keeps_waiting(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    update: str,
    payload: object,
) -> None:
    async with lockgate_worker(tools=[launch]):
        handle = await a_call_awaiting_confirmation(temporal_client, task_queue)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(update, payload)
        status = await handle.query("status")
        await assert_no_failed_workflow_task(handle)

    cause = refused.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "VALIDATION_ERROR", (cause.type, cause.message)
    assert status["status"] == "awaiting_confirmation"


# Signals -----------------------------------------------------------------------------------------


async def test_garbage_signals_are_refused_into_the_trail_and_the_gate_keeps_waiting(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(graphs=[OpenEssay]):
        handle = await editor_gate(temporal_client, task_queue)
        await handle.signal("decide", 42)
        await handle.signal("resume", "resume it")
        await handle.signal("make_it_so", {"choice": "publish_as_is"})
        shown = await eventually(
            lambda: handle.query("show"),
            lambda shown: len(refused_signals(shown)) == 3,
            "three signals were refused",
        )
        await assert_no_failed_workflow_task(handle)

    rows = refused_signals(shown)
    assert [row["operation"] for row in rows] == [
        "signal:decide",
        "signal:resume",
        "signal:make_it_so",
    ]
    assert [row["code"] for row in rows] == [
        "UNVERIFIED_APPROVER",
        "UNAUTHORIZED",
        "VALIDATION_ERROR",
    ]
    assert all(row["why"] for row in rows)
    assert shown["status"] == "waiting"


async def test_a_signal_whose_payload_cannot_be_decoded_is_refused_into_the_trail(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(graphs=[OpenEssay]):
        handle = await editor_gate(temporal_client, task_queue)
        undecodable = Payload(metadata={"encoding": b"binary/bogus"}, data=b"\x00\xff")
        await temporal_client.workflow_service.signal_workflow_execution(
            SignalWorkflowExecutionRequest(
                namespace=temporal_client.namespace,
                workflow_execution=WorkflowExecution(workflow_id=handle.id),
                signal_name="decide",
                input=Payloads(payloads=[undecodable]),
                identity="test",
                request_id=uuid4().hex,
            )
        )
        shown = await eventually(
            lambda: handle.query("show"),
            lambda shown: len(refused_signals(shown)) == 1,
            "the undecodable signal was refused",
        )
        await assert_no_failed_workflow_task(handle)

    (row,) = refused_signals(shown)
    assert row["operation"] == "signal:decide"
    assert row["code"] == "VALIDATION_ERROR"
    assert "could not be read" in row["why"]
    assert shown["status"] == "waiting"
