"""Bad proofs reaching a worker are refused with a sentence saying what is wrong, and never wedge a
workflow task."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate import Signer, tool
from lockgate.activities._activity_inputs import ToolActivityInput
from lockgate.examples.essay_review import EssayReview
from lockgate.gating import digest, generate_private_key, tool_binding
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows import StartGraphInput
from lockgate.workflows._tool_call import CallToolInput, call_workflow_id

with workflow.unsafe.imports_passed_through():  # this module's test workflow runs sandboxed
    from tests.support import outcome

pytestmark = pytest.mark.timeout(60)

ARGUMENTS = {"a": 1, "b": 2}


@tool("demo:add", "Add two numbers.", scopes=["math"])
def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b}


@tool("demo:subtract", "Subtract two numbers.", scopes=["math"])
def subtract(a: int, b: int) -> dict[str, Any]:
    return {"difference": a - b}


@dataclass
class ProvenCall:
    arguments: dict[str, Any]
    proof: dict[str, Any]


@workflow.defn(name="test.proven_tool_activity")
class ProvenToolActivity:
    """Schedules the tool's activity with a proof, as a workflow of the user's own might."""

    @workflow.run
    async def run(self, call: ProvenCall) -> dict[str, Any]:
        result: dict[str, Any] = await workflow.execute_activity(
            "lockgate.tool:demo:add",
            ToolActivityInput(arguments=call.arguments, proof=call.proof),
            result_type=dict,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        return result


def people() -> Identities:
    return Identities({"ed": {"scopes": ["math"]}})


def bound_to(tool_name: str, arguments: dict[str, Any], request_id: str) -> dict[str, Any]:
    """What a durable call's proof authorizes: the tool, its arguments' digest, the request."""
    return {**tool_binding(tool_name, arguments), "request": request_id}


async def assert_no_failed_workflow_task(handle: WorkflowHandle[Any, Any]) -> None:
    history = (await handle.fetch_history()).events
    failed = [e for e in history if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert failed == []


async def call_with_proof(
    client: Client,
    task_queue: str,
    proof: Any,
    *,
    arguments: dict[str, Any] = ARGUMENTS,
    request_id: str,
) -> dict[str, Any]:
    """Runs a durable call of ``demo:add`` carrying ``proof``; returns its result."""
    handle = await client.start_workflow(
        "lockgate.tool_call",
        CallToolInput("demo:add", arguments, proof, "temporal", request_id),
        id=call_workflow_id(request_id),
        task_queue=task_queue,
        result_type=dict,
    )
    result: dict[str, Any] = await outcome(handle)
    await assert_no_failed_workflow_task(handle)
    return result


def refusal_sentence(result: dict[str, Any]) -> str:
    assert result["success"] is False, result
    assert result["error"]["code"] == "UNAUTHORIZED", result
    sentence: str = result["error"]["message"]
    return sentence


def new_request_id() -> str:
    return f"r-{uuid4().hex}"


async def test_a_good_proof_runs_the_call_as_its_signer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    proof = identities.signer("ed").sign(bound_to("demo:add", ARGUMENTS, request_id))
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)

    assert result["success"] is True, result
    assert result["meta"]["principal"] == "ed"


async def test_a_forged_proof_is_refused_as_not_signed_by_its_principal(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    request_id = new_request_id()
    forger = Signer("ed", generate_private_key())
    proof = forger.sign(bound_to("demo:add", ARGUMENTS, request_id))
    async with lockgate_worker(tools=[add], directory=people().directory):
        result = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)

    assert "signature does not match: it was not signed by ed" in refusal_sentence(result)


async def test_a_proof_altered_after_signing_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    proof = identities.signer("ed").sign(bound_to("demo:add", ARGUMENTS, request_id))
    changed = {"a": 1, "b": 3}
    proof["authorizes"] = bound_to("demo:add", changed, request_id)
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(
            temporal_client, task_queue, proof, arguments=changed, request_id=request_id
        )

    assert "or it was altered after signing" in refusal_sentence(result)


async def test_an_expired_proof_is_refused_as_expired(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    an_hour_ago = Signer("ed", identities.key("ed"), clock=lambda: time.time() - 3600)
    proof = an_hour_ago.sign(bound_to("demo:add", ARGUMENTS, request_id))
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)

    sentence = refusal_sentence(result)
    assert "expired at" in sentence
    assert "sign a fresh one" in sentence


async def test_a_proof_from_the_future_is_refused_as_not_yet_valid(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    ahead = Signer("ed", identities.key("ed"), clock=lambda: time.time() + 3600)
    proof = ahead.sign(bound_to("demo:add", ARGUMENTS, request_id))
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)

    assert "check the signer's clock" in refusal_sentence(result)


async def test_a_proof_replayed_on_another_request_is_refused_as_bound_to_its_own(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, first_request, second_request = people(), new_request_id(), new_request_id()
    proof = identities.signer("ed").sign(bound_to("demo:add", ARGUMENTS, first_request))
    async with lockgate_worker(tools=[add], directory=identities.directory):
        first = await call_with_proof(temporal_client, task_queue, proof, request_id=first_request)
        replayed = await call_with_proof(
            temporal_client, task_queue, proof, request_id=second_request
        )

    assert first["success"] is True, first
    sentence = refusal_sentence(replayed)
    assert f"authorizes request '{first_request}'" in sentence
    assert f"this call is on request '{second_request}'" in sentence


async def test_a_proof_replayed_for_the_same_act_is_refused_as_already_used(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    proof = identities.signer("ed").sign(tool_binding("demo:add", ARGUMENTS))
    async with lockgate_worker(
        tools=[add], directory=identities.directory, workflows=[ProvenToolActivity]
    ):
        first = await temporal_client.execute_workflow(
            ProvenToolActivity.run,
            ProvenCall(ARGUMENTS, proof),
            id=f"proven-{uuid4().hex}",
            task_queue=task_queue,
        )
        replay = await temporal_client.start_workflow(
            ProvenToolActivity.run,
            ProvenCall(ARGUMENTS, proof),
            id=f"proven-{uuid4().hex}",
            task_queue=task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await outcome(replay)
        await assert_no_failed_workflow_task(replay)

    assert first["success"] is True, first
    activity_error = failed.value.cause
    assert isinstance(activity_error, ActivityError)
    cause = activity_error.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UNAUTHORIZED"
    assert cause.non_retryable is True
    assert f"The proof {proof['nonce']} has already been used" in cause.message


async def test_a_proof_for_another_tool_is_refused_as_wrongly_bound(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    proof = identities.signer("ed").sign(bound_to("demo:subtract", ARGUMENTS, request_id))
    async with lockgate_worker(tools=[add, subtract], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)

    sentence = refusal_sentence(result)
    assert "authorizes tool 'demo:subtract', but this call is on tool 'demo:add'" in sentence
    assert "good only for the exact act it names" in sentence


async def test_a_proof_for_other_arguments_is_refused_as_wrongly_bound(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    proof = identities.signer("ed").sign(bound_to("demo:add", {"a": 1, "b": 3}, request_id))
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)

    sentence = refusal_sentence(result)
    assert "The proof authorizes arguments" in sentence
    assert "good only for the exact act it names" in sentence


async def test_a_proof_from_a_principal_the_directory_does_not_list_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    request_id = new_request_id()
    stranger = Signer("mallory", generate_private_key())
    proof = stranger.sign(bound_to("demo:add", ARGUMENTS, request_id))
    async with lockgate_worker(tools=[add], directory=people().directory):
        result = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)

    assert "The directory lists no principal 'mallory'" in refusal_sentence(result)
    assert result["meta"].get("principal") is None


async def test_something_that_is_not_a_proof_is_refused_as_malformed(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    request_id = new_request_id()
    async with lockgate_worker(tools=[add], directory=people().directory):
        result = await call_with_proof(
            temporal_client, task_queue, "trust me, I am ed", request_id=request_id
        )

    assert "This is not a valid lockgate proof" in refusal_sentence(result)


REPLAYED_UNDER = [
    pytest.param(
        lambda request_id: call_workflow_id(request_id),
        "has already been used",
        id="a new run of the same id",
    ),
    pytest.param(
        lambda request_id: f"elsewhere-{uuid4().hex}",
        "A signed call runs under the workflow id",
        id="another workflow id",
    ),
]


@pytest.mark.parametrize(("workflow_id_for", "why"), REPLAYED_UNDER)
async def test_a_durable_calls_proof_replayed_in_another_run_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    workflow_id_for: Callable[[str], str],
    why: str,
) -> None:
    identities, request_id = people(), new_request_id()
    proof = identities.signer("ed").sign(bound_to("demo:add", ARGUMENTS, request_id))
    call = CallToolInput("demo:add", ARGUMENTS, proof, "temporal", request_id)
    async with lockgate_worker(tools=[add], directory=identities.directory):
        first = await call_with_proof(temporal_client, task_queue, proof, request_id=request_id)
        replay = await temporal_client.start_workflow(
            "lockgate.tool_call",
            call,
            id=workflow_id_for(request_id),
            task_queue=task_queue,
            result_type=dict,
        )
        replayed = await outcome(replay)
        await assert_no_failed_workflow_task(replay)

    assert first["success"] is True, first
    assert replayed["error"]["code"] == "UNAUTHORIZED"
    assert why in refusal_sentence(replayed)


async def test_a_tool_activitys_proof_replayed_in_a_new_run_of_the_same_workflow_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, workflow_id = people(), f"proven-{uuid4().hex}"
    proof = identities.signer("ed").sign(tool_binding("demo:add", ARGUMENTS))
    async with lockgate_worker(
        tools=[add], directory=identities.directory, workflows=[ProvenToolActivity]
    ):
        first = await temporal_client.execute_workflow(
            ProvenToolActivity.run,
            ProvenCall(ARGUMENTS, proof),
            id=workflow_id,
            task_queue=task_queue,
        )
        replay = await temporal_client.start_workflow(
            ProvenToolActivity.run,
            ProvenCall(ARGUMENTS, proof),
            id=workflow_id,
            task_queue=task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await outcome(replay)

    assert first["success"] is True, first
    activity_error = failed.value.cause
    assert isinstance(activity_error, ActivityError)
    assert isinstance(activity_error.cause, ApplicationError)
    assert activity_error.cause.type == "UNAUTHORIZED"
    assert "has already been used" in activity_error.cause.message


async def test_a_graph_start_proof_replayed_in_a_new_run_of_the_same_id_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = Identities({"ed": {"scopes": ["essay:publish"]}})
    inputs = {"title": "Tides and the moon", "rubric": "tides, moon"}
    run_id = f"essay:review-{uuid4().hex[:12]}"
    proof = identities.signer("ed").sign(
        {"kind": "start", "graph": "essay:review", "run": run_id, "inputs": digest(inputs)}
    )
    async with lockgate_worker(graphs=[EssayReview], directory=identities.directory):
        runs = []
        for _ in range(2):
            handle = await temporal_client.start_workflow(
                "essay:review",
                StartGraphInput(inputs=inputs, proof=proof),
                id=run_id,
                task_queue=task_queue,
                result_type=dict,
            )
            runs.append(await outcome(handle))

    first, replayed = runs
    assert first["status"] == "finished", first
    assert first["requester"]["principal"] == "ed"
    assert replayed["status"] == "refused", replayed
    assert replayed["error"]["code"] == "UNAUTHORIZED"
    assert "has already been used" in replayed["error"]["message"]
