"""A stranger's payload must not write the worker's stack trace into history.

Anyone with namespace access can start ``lockgate.tool_call`` or a graph type with a start payload
that does not decode, and anyone can read every history. A failure with a stack trace would show
them the worker's source lines and install paths. Each test below walks every failure of the run's
history, causes included, and finds no stack trace and no install path in the whole history.

A workflow of the shop's own on the same worker keeps its traces: lockgate strips only what its
own workflow types and activities write.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import temporalio
from google.protobuf.message import Message
from temporalio import workflow
from temporalio.api.common.v1 import Payload, Payloads, WorkflowType
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import History
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import StartWorkflowExecutionRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

import lockgate
from lockgate import Retry, ToolClient, tool
from lockgate.testing import WorkerFactory
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.graphs import OpenEssay

pytestmark = pytest.mark.timeout(60)

UNDECODABLE = [
    pytest.param(
        Payload(metadata={"encoding": b"binary/bogus"}, data=b"\x00"), id="bogus encoding"
    ),
    pytest.param(
        Payload(metadata={"encoding": b"json/plain"}, data=b"{not json"), id="broken json"
    ),
]


def install_paths() -> list[str]:
    """Where the worker runs from: lockgate's and temporalio's install folders."""
    return [str(Path(module.__file__ or "").parent.parent) for module in (lockgate, temporalio)]


CLOSED = (
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
)


def failures_in(message: Message) -> Iterator[Failure]:
    """Every ``Failure`` anywhere in ``message``, the causes of each included."""
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        if isinstance(value, Message):
            values: Any = [value]
        elif isinstance(value, Mapping):
            values = value.values()
        else:
            values = value
        for item in values:
            if isinstance(item, Message):
                if isinstance(item, Failure):
                    yield item
                yield from failures_in(item)


def assert_no_stack_trace(history: History) -> None:
    failures = list(failures_in(history))
    assert failures, "the history holds no failure: the attack did not fail anything"
    traced = [failure.message for failure in failures if failure.stack_trace]
    assert traced == [], f"failures with a stack trace in history: {traced}"
    raw = history.SerializeToString()
    for path in install_paths():
        assert path.encode() not in raw, f"the install path {path} is in the history"


async def start_undecodable(
    client: Client, workflow_type: str, task_queue: str, payload: Payload
) -> WorkflowHandle[Any, Any]:
    """Starts ``workflow_type`` with a payload no converter reads, past the client's converter."""
    workflow_id = f"undecodable-{uuid4().hex}"
    await client.workflow_service.start_workflow_execution(
        StartWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_id=workflow_id,
            workflow_type=WorkflowType(name=workflow_type),
            task_queue=TaskQueue(name=task_queue),
            input=Payloads(payloads=[payload]),
            identity="stranger",
            request_id=uuid4().hex,
        )
    )
    return client.get_workflow_handle(workflow_id)


async def history_once_closed_or_failed(handle: WorkflowHandle[Any, Any]) -> History:
    """The run's history once it has closed, or once a workflow task of it has failed."""
    deadline = time.monotonic() + 20
    while True:
        history = History(events=(await handle.fetch_history()).events)
        kinds = {event.event_type for event in history.events}
        if kinds & {*CLOSED, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED}:
            return history
        if time.monotonic() > deadline:
            raise AssertionError(f"the run neither closed nor failed a task: {sorted(kinds)}")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("payload", UNDECODABLE)
@pytest.mark.parametrize("workflow_type", ["lockgate.tool_call", "essay:open"])
async def test_an_undecodable_start_writes_no_stack_trace_into_history(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    workflow_type: str,
    payload: Payload,
) -> None:
    async with lockgate_worker(tools=[explode], graphs=[OpenEssay]):
        handle = await start_undecodable(temporal_client, workflow_type, task_queue, payload)
        history = await history_once_closed_or_failed(handle)

    assert_no_stack_trace(history)


@tool("demo:explode", "Raises, as a tool with a bug does.", retry=Retry(max_attempts=1))
def explode(n: int) -> dict[str, Any]:
    raise RuntimeError(f"the tool broke on {n}")


async def test_a_tool_that_raises_writes_no_stack_trace_into_history(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    request_id = f"r-{uuid4().hex}"
    async with lockgate_worker(tools=[explode]):
        result = await ToolClient(temporal_client, task_queue).call(
            "demo:explode", {"n": 1}, request_id=request_id
        )
        handle = temporal_client.get_workflow_handle(call_workflow_id(request_id))
        history = await history_once_closed_or_failed(handle)

    assert result["success"] is False
    kinds = [event.event_type for event in history.events]
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED in kinds
    assert_no_stack_trace(history)


@workflow.defn(name="shop.breaks")
class ShopBreaks:
    @workflow.run
    async def run(self) -> None:
        raise ApplicationError("the shop's own workflow broke", non_retryable=True)


async def test_a_workflow_of_the_shops_own_on_the_same_worker_keeps_its_stack_trace(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(tools=[explode], workflows=[ShopBreaks]):
        handle = await temporal_client.start_workflow(
            ShopBreaks.run, id=f"shop-{uuid4().hex}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        history = await history_once_closed_or_failed(handle)

    assert any(failure.stack_trace for failure in failures_in(history))
