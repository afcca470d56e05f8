"""The durable single tool call: once per request id, confirmed when asked, expiring on a timer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any
from uuid import uuid4

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import (
    InMemoryRateLimiter,
    LockgatePlugin,
    ToolClient,
    ToolContext,
    ToolRegistry,
    tool,
)
from lockgate.authorization import Authorizer, PolicyDecision
from lockgate.testing import Identities, WorkerFactory
from lockgate.tools._authorization import GovernedTool
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.support import SECRET, error_of, outcome

pytestmark = pytest.mark.timeout(60)

# How often each token has run, across every tool below: the activities run in this process.
runs: Counter[str] = Counter()


@tool("demo:count", "Counts its runs and says which n it ran with.")
def count(token: str, n: int) -> dict[str, Any]:
    runs[token] += 1
    return {"n": n, "runs": runs[token]}


@tool("demo:launch", "Launches something: every call is confirmed first.", confirm=True)
def launch(token: str, n: int) -> dict[str, Any]:
    runs[token] += 1
    return {"n": n, "runs": runs[token]}


class SignedCallersConfirmToo(Authorizer):
    """A host authorizer that asks for a confirmation even when the call is signed.

    The built-in channel policies take a signed call's proof as its consent, so no built-in
    channel hands a signed caller a token; a host may still want a second "yes".
    """

    def authorize(
        self, ctx: ToolContext, tool: GovernedTool, arguments: Mapping[str, Any] | None = None
    ) -> PolicyDecision:
        decision = super().authorize(ctx, tool, arguments)
        if decision.allowed and tool.confirm:
            return PolicyDecision(True, needs_confirmation=True)
        return decision


def people() -> Identities:
    return Identities({"ed": {}, "ada": {}})


def new_request_id() -> str:
    return f"r-{uuid4().hex}"


async def status_of(client: Client, request_id: str) -> dict[str, Any]:
    handle = client.get_workflow_handle(call_workflow_id(request_id))
    status: dict[str, Any] = await handle.query("status")
    return status


# Once per request id -----------------------------------------------------------------------------


async def test_the_same_request_id_twice_returns_the_first_result_and_runs_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=[count]):
        tools = ToolClient(temporal_client, task_queue)
        first = await tools.call("demo:count", {"token": token, "n": 1}, request_id=request_id)
        second = await tools.call("demo:count", {"token": token, "n": 1}, request_id=request_id)

    assert first["success"] is True, first
    assert second == first
    assert runs[token] == 1


async def test_a_refused_call_asked_again_with_its_request_id_returns_the_same_refusal(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=[count]):
        tools = ToolClient(temporal_client, task_queue)
        first = await tools.call("demo:count", {"token": token, "n": "many"}, request_id=request_id)
        second = await tools.call("demo:count", {"token": token, "n": 1}, request_id=request_id)
        described = await temporal_client.get_workflow_handle(
            call_workflow_id(request_id)
        ).describe()

    assert first["success"] is False
    assert error_of(first)["code"] == "VALIDATION_ERROR", first
    assert second == first
    assert described.status == WorkflowExecutionStatus.COMPLETED  # refused, not failed
    assert runs[token] == 0


async def test_a_rate_limited_call_keeps_the_refusals_meta_so_the_caller_knows_when_to_retry(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token = uuid4().hex
    registry = ToolRegistry(rate_limiter=InMemoryRateLimiter(max_tokens=1))
    registry.register(count)
    async with lockgate_worker(tools=registry):
        tools = ToolClient(temporal_client, task_queue)
        first = await tools.call(
            "demo:count", {"token": token, "n": 1}, request_id=new_request_id()
        )
        second = await tools.call(
            "demo:count", {"token": token, "n": 2}, request_id=new_request_id()
        )

    assert first["success"] is True, first
    assert error_of(second)["code"] == "RATE_LIMITED", second
    assert second["meta"]["retry_after_seconds"] > 0, second
    assert runs[token] == 1


async def test_a_repeated_request_id_ignores_the_arguments_it_comes_with(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=[count]):
        tools = ToolClient(temporal_client, task_queue)
        await tools.call("demo:count", {"token": token, "n": 1}, request_id=request_id)
        again = await tools.call("demo:count", {"token": token, "n": 2}, request_id=request_id)

    assert again["data"] == {"n": 1, "runs": 1}
    assert runs[token] == 1


# Confirmation ------------------------------------------------------------------------------------


async def test_an_unsigned_call_of_a_confirm_tool_returns_a_confirmation_with_a_token(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=[launch]):
        asked = await ToolClient(temporal_client, task_queue).call(
            "demo:launch", {"token": token, "n": 1}, request_id=request_id
        )
        status = await status_of(temporal_client, request_id)

    assert asked["meta"]["requires_confirmation"] is True, asked
    assert isinstance(asked["data"]["confirm_token"], str) and asked["data"]["confirm_token"]
    assert asked["data"]["request_id"] == request_id
    assert status["status"] == "awaiting_confirmation"
    assert runs[token] == 0


async def test_confirming_with_the_token_runs_the_call_once_with_the_first_requests_arguments(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=[launch]):
        tools = ToolClient(temporal_client, task_queue)
        asked = await tools.call("demo:launch", {"token": token, "n": 1}, request_id=request_id)
        await tools.call("demo:launch", {"token": token, "n": 2}, request_id=request_id)
        result = await tools.confirm(request_id, asked["data"]["confirm_token"])
        again = await tools.call("demo:launch", {"token": token, "n": 3}, request_id=request_id)

    assert result["success"] is True, result
    assert result["data"] == {"n": 1, "runs": 1}
    assert again == result
    assert runs[token] == 1


async def test_a_wrong_token_is_refused_and_the_call_keeps_waiting(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=[launch]):
        tools = ToolClient(temporal_client, task_queue)
        await tools.call("demo:launch", {"token": token, "n": 1}, request_id=request_id)
        refused = await tools.confirm(request_id, "not-the-token")
        status = await status_of(temporal_client, request_id)

    assert refused["success"] is False
    assert error_of(refused)["code"] == "VALIDATION_ERROR"
    assert "not the one this call handed out" in error_of(refused)["message"]
    assert status["status"] == "awaiting_confirmation"
    assert runs[token] == 0


async def test_an_unconfirmed_call_expires_on_a_workflow_timer(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    client = time_skipping_env.client
    async with Worker(
        client, task_queue=task_queue, plugins=[LockgatePlugin([launch], secret=SECRET)]
    ):
        await ToolClient(client, task_queue).call(
            "demo:launch", {"token": token, "n": 1}, request_id=request_id
        )
        handle = client.get_workflow_handle(call_workflow_id(request_id), result_type=dict)
        result = await outcome(handle)
        history = (await handle.fetch_history()).events

    assert result["success"] is False
    assert result["error"]["code"] == "VALIDATION_ERROR"
    assert "expired" in result["error"]["message"]
    # A refused call (an expired confirmation is the caller's) completes with its refusal as its
    # result: it is no failed run in the Temporal UI's list or in failure metrics.
    assert history[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    completed = history[-1].workflow_execution_completed_event_attributes
    assert client.data_converter.payload_converter.from_payload(completed.result.payloads[0]) == (
        result
    )
    timers = [e for e in history if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]
    (timer,) = timers
    assert timer.timer_started_event_attributes.start_to_fire_timeout.seconds == 60
    assert runs[token] == 0


async def test_a_signed_call_on_the_cli_is_consented_by_its_signature(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    token = uuid4().hex
    async with lockgate_worker(tools=[launch], directory=identities.directory):
        signed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed"))
        result = await signed.call("demo:launch", {"token": token, "n": 1})

    assert result["success"] is True, result
    assert "confirm_token" not in result["data"]
    assert result["data"] == {"n": 1, "runs": 1}


async def test_a_signed_call_cannot_be_confirmed_by_another_principal(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    registry = ToolRegistry(authorizer=SignedCallersConfirmToo())
    registry.register(launch)
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=registry, directory=identities.directory):
        ed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed", channel="web"))
        ada = ToolClient(temporal_client, task_queue, signer=identities.signer("ada", "web"))
        asked = await ed.call("demo:launch", {"token": token, "n": 1}, request_id=request_id)
        refused = await ada.confirm(request_id, asked["data"]["confirm_token"])
        status = await status_of(temporal_client, request_id)

    assert error_of(refused)["code"] == "FORBIDDEN", refused
    assert "issued to ed, not to ada" in error_of(refused)["message"]
    assert status["status"] == "awaiting_confirmation"
    assert runs[token] == 0


async def test_a_signed_call_is_confirmed_by_its_signer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    registry = ToolRegistry(authorizer=SignedCallersConfirmToo())
    registry.register(launch)
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=registry, directory=identities.directory):
        ed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed", channel="web"))
        asked = await ed.call("demo:launch", {"token": token, "n": 1}, request_id=request_id)
        result = await ed.confirm(request_id, asked["data"]["confirm_token"])

    assert result["success"] is True, result
    assert result["meta"]["principal"] == "ed"
    assert result["meta"]["channel"] == "web"
    assert runs[token] == 1


async def test_an_unsigned_confirmation_of_a_signed_call_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    registry = ToolRegistry(authorizer=SignedCallersConfirmToo())
    registry.register(launch)
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=registry, directory=identities.directory):
        ed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed", channel="web"))
        asked = await ed.call("demo:launch", {"token": token, "n": 1}, request_id=request_id)
        refused = await ToolClient(temporal_client, task_queue).confirm(
            request_id, asked["data"]["confirm_token"]
        )

    assert error_of(refused)["code"] == "UNAUTHORIZED", refused
    assert "confirmed by its signer" in error_of(refused)["message"]
    assert runs[token] == 0


async def test_a_planned_call_checks_everything_and_runs_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token, request_id = uuid4().hex, new_request_id()
    async with lockgate_worker(tools=[count]):
        tools = ToolClient(temporal_client, task_queue)
        planned = await tools.call(
            "demo:count", {"token": token, "n": 3}, request_id=request_id, plan=True
        )
        again = await tools.call("demo:count", {"token": token, "n": 3}, request_id=request_id)

    assert planned["success"] is True
    assert planned["data"]["plan"]["args"] == {"token": token, "n": 3}
    # One answer per request id: asking again returns the plan; the tool never ran.
    assert again == planned
    assert runs[token] == 0


async def test_a_call_that_runs_records_no_plan_in_its_check_and_a_planned_call_does(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The plan is what a planned call answers; a call that runs reads nothing of it, so its
    history keeps no copy of its arguments there (its check's sealed result)."""
    token = uuid4().hex
    ran, planned = new_request_id(), new_request_id()
    async with lockgate_worker(tools=[count]):
        tools = ToolClient(temporal_client, task_queue)
        await tools.call("demo:count", {"token": token, "n": 1}, request_id=ran)
        await tools.call("demo:count", {"token": token, "n": 1}, request_id=planned, plan=True)

    checks = [await recorded_check(temporal_client, request_id) for request_id in (ran, planned)]
    assert checks[0]["ok"] is True and "plan" not in checks[0], checks[0]
    assert checks[1]["plan"]["args"] == {"token": token, "n": 1}, checks[1]


async def recorded_check(client: Client, request_id: str) -> dict[str, Any]:
    """The result of a call's check (``lockgate.prepare_call``) as its history records it."""
    history = await client.get_workflow_handle(call_workflow_id(request_id)).fetch_history()
    converter = client.data_converter.payload_converter
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            details = event.marker_recorded_event_attributes.details
            marker = converter.from_payload(details["data"].payloads[0], dict)
            if marker["activity_type"] == "lockgate.prepare_call":
                result: dict[str, Any] = converter.from_payload(details["result"].payloads[0], dict)
                return result
    raise AssertionError(f"call {request_id} recorded no check")
