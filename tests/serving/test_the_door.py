"""The door every surface goes through (``lockgate.operations.Operations``): what it refuses
itself, before any run or worker is asked, names the value by the wire's name and says why.

What it answers from runs and workers is tested through each surface (test_mcp.py,
test_http_api.py, test_inbox.py, the CLI's tests)."""

from __future__ import annotations

import pytest
from temporalio.client import Client as TemporalClient

from lockgate.operations import Operations
from lockgate.testing import Identities

pytestmark = pytest.mark.timeout(60)


def _door(temporal_client: TemporalClient, task_queue: str) -> Operations:
    return Operations(temporal_client, task_queue, channel="web")


async def test_an_answer_without_a_proof_is_refused_with_the_command_that_signs_one(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    refused = await _door(temporal_client, task_queue).decide_signed("essay-1", None)

    assert refused["ok"] is False and refused["run_id"] == "essay-1"
    assert refused["error"]["code"] == "UNVERIFIED_APPROVER"
    assert "lockgate sign decide essay-1 <choice> --as <approver>" in refused["error"]["message"]


async def test_a_binding_names_the_choice_it_lacks_by_its_wire_name(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    refused = await _door(temporal_client, task_queue).decide_binding("essay-1", "")

    assert refused["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "decide: `choice` is required, as a non-empty string, and this is not one: .",
    }


async def test_evidence_that_is_not_a_json_object_is_refused_quoting_it(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    refused = await _door(temporal_client, task_queue).decide_binding(
        "essay-1", "publish_as_is", evidence=[1, 2]
    )

    assert refused["error"]["message"] == (
        "decide: `evidence` must be a JSON object, and this is not one: [1, 2]."
    )


async def test_a_gate_shown_that_is_not_a_key_is_refused(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    refused = await _door(temporal_client, task_queue).decide_binding(
        "essay-1", "publish_as_is", gate=7
    )

    assert refused["error"]["code"] == "VALIDATION_ERROR"
    assert "`gate` is the key of the gate shown" in refused["error"]["message"]


async def test_a_door_without_a_signer_signs_nothing(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    door = _door(temporal_client, task_queue)

    answer = await door.sign_decide("essay-1", "publish_as_is")
    resume = await door.sign_resume("essay-1")

    assert answer["error"]["code"] == resume["error"]["code"] == "UNAUTHORIZED"
    assert answer["error"]["message"] == (
        "An answer is signed with its principal's own key, and unverified:web holds none here: "
        "nothing was signed."
    )


async def test_inputs_no_proof_can_name_are_refused_before_any_run_exists(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    signer = Identities({"ada": {}}).signer("ada", "cli")
    door = Operations(temporal_client, task_queue, signer, channel="cli")

    refused = await door.start("essay:review", {"title": float("nan")})
    runs = [run async for run in temporal_client.list_workflows(f"TaskQueue = '{task_queue}'")]

    assert refused["error"]["code"] == "VALIDATION_ERROR"
    assert "not plain JSON" in refused["error"]["message"]
    assert runs == []


async def test_a_tool_call_whose_arguments_are_not_an_object_is_a_failed_tool_result(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    result = await _door(temporal_client, task_queue).call_tool("essay:grade", [1])

    assert result["success"] is False
    assert result["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "The arguments of 'essay:grade' are a JSON object, and these are not one: [1].",
    }


async def test_a_list_of_runs_of_a_graph_that_is_not_a_name_is_refused(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    refused = await _door(temporal_client, task_queue).list_runs(graph=["essay:review"])

    assert refused["ok"] is False
    assert refused["error"]["message"] == (
        'list: `graph` is a graph\'s name, and this is not one: ["essay:review"].'
    )
