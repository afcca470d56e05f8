"""Bad proofs reaching a worker are refused with a sentence saying what is wrong, before anything
is written, and never wedge a workflow task.

A signed durable call is started first and held back; its proof names the execution the server
started and comes as the call's ``call`` update, judged by the update's validator. Proofs read
from history and offered to another execution are the attacker's, in
``tests/attacker/test_execution_bound_proofs.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate import Signer, tool
from lockgate.activities._activity_inputs import ToolActivityInput
from lockgate.identity._bindings import tool_binding
from lockgate.identity._keys import generate_private_key
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN
from lockgate.workflows._tool_call import CallToolInput, call_workflow_id

with workflow.unsafe.imports_passed_through():  # this module's test workflow runs sandboxed
    from tests.helpers.support import failed_workflow_tasks, outcome, update_refused

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


Sign = Callable[[str], Any]
"""Makes the proof to send, given the execution the server started."""


def signed_by(signer: Signer, tool_name: str, arguments: dict[str, Any], request_id: str) -> Sign:
    return lambda execution: signer.sign(tool_binding(tool_name, arguments, request_id, execution))


async def start_signed_call(
    client: Client,
    task_queue: str,
    request_id: str,
    *,
    arguments: dict[str, Any] = ARGUMENTS,
    workflow_id: str | None = None,
    reuse: WorkflowIDReusePolicy = WorkflowIDReusePolicy.ALLOW_DUPLICATE,
) -> WorkflowHandle[Any, Any]:
    """A durable call of ``demo:add`` started as signed and held back, as ToolClient starts one."""
    return await client.start_workflow(
        "lockgate.tool_call",
        CallToolInput("demo:add", arguments, None, "temporal", request_id, signed=True),
        id=workflow_id or call_workflow_id(request_id),
        task_queue=task_queue,
        result_type=dict,
        start_delay=SIGNED_START_WITHIN,
        id_reuse_policy=reuse,
    )


async def call_with_proof(
    client: Client,
    task_queue: str,
    sign: Sign,
    *,
    arguments: dict[str, Any] = ARGUMENTS,
    request_id: str,
) -> dict[str, Any]:
    """Makes a signed durable call of ``demo:add`` with the proof ``sign`` makes for its
    execution: its result, or the refusal of its ``call`` update (the call is then withdrawn,
    as ToolClient withdraws it, and ends refused having run nothing)."""
    handle = await start_signed_call(client, task_queue, request_id, arguments=arguments)
    proof = sign(handle.first_execution_run_id or "")
    try:
        result: dict[str, Any] = await handle.execute_update("call", proof, result_type=dict)
    except Exception as error:
        refused = update_refused(error)
        await handle.cancel()
        ended = await outcome(handle)
        assert ended["success"] is False and ended["error"]["code"] == "UNAUTHORIZED", ended
        assert "withdrew it" in ended["error"]["message"]
        result = {"success": False, "error": refused, "meta": ended["meta"]}
    assert await failed_workflow_tasks(handle) == []
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
    sign = signed_by(identities.signer("ed"), "demo:add", ARGUMENTS, request_id)
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, sign, request_id=request_id)

    assert result["success"] is True, result
    assert result["data"] == {"sum": 3}
    assert result["meta"]["principal"] == "ed"


@pytest.mark.parametrize(
    ("principal", "sentence"),
    [
        pytest.param("ed", "signature does not match: it was not signed by ed", id="forged as ed"),
        pytest.param(
            "mallory",
            "The directory lists no principal 'mallory'",
            id="from a principal the directory does not list",
        ),
    ],
)
async def test_a_proof_signed_by_a_key_the_directory_does_not_list_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    principal: str,
    sentence: str,
) -> None:
    request_id = new_request_id()
    sign = signed_by(Signer(principal, generate_private_key()), "demo:add", ARGUMENTS, request_id)
    async with lockgate_worker(tools=[add], directory=people().directory):
        result = await call_with_proof(temporal_client, task_queue, sign, request_id=request_id)

    assert sentence in refusal_sentence(result)
    assert result["meta"].get("principal") is None


async def test_a_proof_altered_after_signing_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    changed = {"a": 1, "b": 3}

    def altered(execution: str) -> Any:
        proof = identities.signer("ed").sign(
            tool_binding("demo:add", ARGUMENTS, request_id, execution)
        )
        proof["authorizes"] = tool_binding("demo:add", changed, request_id, execution)
        return proof

    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(
            temporal_client, task_queue, altered, arguments=changed, request_id=request_id
        )

    assert "or it was altered after signing" in refusal_sentence(result)


async def test_an_expired_proof_is_refused_as_expired(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    an_hour_ago = Signer("ed", identities.key("ed"), clock=lambda: time.time() - 3600)
    sign = signed_by(an_hour_ago, "demo:add", ARGUMENTS, request_id)
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, sign, request_id=request_id)

    sentence = refusal_sentence(result)
    assert "expired at" in sentence
    assert "sign a fresh one" in sentence


async def test_a_proof_from_the_future_is_refused_as_not_yet_valid(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    ahead = Signer("ed", identities.key("ed"), clock=lambda: time.time() + 3600)
    sign = signed_by(ahead, "demo:add", ARGUMENTS, request_id)
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, sign, request_id=request_id)

    assert "check the signer's clock" in refusal_sentence(result)


async def test_a_proof_for_another_request_is_refused_as_bound_to_its_own(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, first_request, second_request = people(), new_request_id(), new_request_id()
    sign = signed_by(identities.signer("ed"), "demo:add", ARGUMENTS, first_request)
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, sign, request_id=second_request)

    sentence = refusal_sentence(result)
    assert f"authorizes request '{first_request}'" in sentence
    assert f"this call is on request '{second_request}'" in sentence


async def test_a_tool_activity_scheduled_with_a_proof_is_refused_whoever_signed_it(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # Nothing could keep a proof on an activity from being used again by another activity.
    identities = people()
    proof = identities.signer("ed").sign(
        tool_binding("demo:add", ARGUMENTS, "any", "any execution")
    )
    async with lockgate_worker(
        tools=[add], directory=identities.directory, workflows=[ProvenToolActivity]
    ):
        proven = await temporal_client.start_workflow(
            ProvenToolActivity.run,
            ProvenCall(ARGUMENTS, proof),
            id=f"proven-{uuid4().hex}",
            task_queue=task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await outcome(proven)
        assert await failed_workflow_tasks(proven) == []

    activity_error = failed.value.cause
    assert isinstance(activity_error, ActivityError)
    cause = activity_error.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UNAUTHORIZED"
    assert cause.non_retryable is True
    assert "a tool activity takes none" in cause.message
    assert "durable call" in cause.message


async def test_a_proof_for_another_tool_is_refused_naming_both(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    sign = signed_by(identities.signer("ed"), "demo:subtract", ARGUMENTS, request_id)
    async with lockgate_worker(tools=[add, subtract], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, sign, request_id=request_id)

    sentence = refusal_sentence(result)
    assert f"The proof calls 'demo:subtract', and call '{request_id}' is a call of" in sentence


async def test_a_proof_for_other_arguments_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, request_id = people(), new_request_id()
    sign = signed_by(identities.signer("ed"), "demo:add", {"a": 1, "b": 3}, request_id)
    async with lockgate_worker(tools=[add], directory=identities.directory):
        result = await call_with_proof(temporal_client, task_queue, sign, request_id=request_id)

    assert "with other arguments than call" in refusal_sentence(result)


async def test_something_that_is_not_a_proof_is_refused_as_malformed(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    request_id = new_request_id()
    async with lockgate_worker(tools=[add], directory=people().directory):
        result = await call_with_proof(
            temporal_client,
            task_queue,
            lambda execution: "trust me, I am ed",
            request_id=request_id,
        )

    assert "This is not a valid lockgate proof" in refusal_sentence(result)


async def test_a_signed_call_under_another_workflow_id_than_its_request_is_refused_at_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    request_id = new_request_id()
    async with lockgate_worker(tools=[add], directory=people().directory):
        handle = await start_signed_call(
            temporal_client, task_queue, request_id, workflow_id=f"elsewhere-{uuid4().hex}"
        )
        with pytest.raises(Exception) as refused:
            await handle.execute_update("call", {"not": "read"}, result_type=dict)
        await handle.cancel()
        ended = await outcome(handle)

    assert update_refused(refused.value)["code"] == "VALIDATION_ERROR"
    assert ended["error"]["code"] == "UNAUTHORIZED"
    assert "runs under the workflow id" in ended["error"]["message"]
