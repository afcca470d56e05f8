"""Long runs stay inside Temporal's history limits by continuing as new, losing nothing.

These tests run on their own dev server that suggests continue-as-new after 150 history events
(the default is thousands), so a few hundred steps exercise several hand-overs. The 5,000-step
run is in `make soak`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.devserver import temporal_binary
from lockgate.gates._limits import MAX_REFUSED_SIGNALS_KEPT
from lockgate.identity._bindings import answer_binding
from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES
from lockgate.testing import Identities
from tests.helpers.reliability_graphs import CountTo, DocReviewV1
from tests.helpers.support import SECRET, gate_of

SUGGEST_AFTER_EVENTS = 150


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def short_history_client() -> AsyncIterator[Client]:
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=[
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_AFTER_EVENTS}",
        ],
    )
    yield environment.client
    await environment.shutdown()


async def _executions(client: Client, workflow_id: str) -> list[Any]:
    return [execution async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'")]


async def _history_lengths(client: Client, workflow_id: str) -> list[int]:
    lengths = []
    for execution in await _executions(client, workflow_id):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        lengths.append(len((await handle.fetch_history()).events))
    return lengths


async def test_a_run_of_hundreds_of_steps_continues_as_new_and_keeps_its_whole_trail(
    short_history_client: Client,
) -> None:
    task_queue = f"long-{uuid.uuid4().hex[:8]}"
    client = GraphClient(short_history_client, task_queue)
    async with Worker(
        short_history_client,
        task_queue=task_queue,
        plugins=[LockgatePlugin(graphs=[CountTo], secret=SECRET)],
    ):
        started = await client.start(CountTo, {"target": 300}, wait=False)
        handle = short_history_client.get_workflow_handle(started["run_id"])
        result = await handle.result()
        executions = await _executions(short_history_client, started["run_id"])

    counted = [row for row in result["trail"] if row["node"] == "count"]
    assert result["status"] == "finished"
    assert result["fields"]["counter"] == 300
    assert len(counted) == 300 and all(row["outcome"] == "ran" for row in counted)
    assert [row["node"] for row in result["trail"]][-1] == "finish"
    assert result["budgets"]["AGAIN"]["taken"] == 299
    assert len(executions) > 2
    assert sum(e.status == WorkflowExecutionStatus.CONTINUED_AS_NEW for e in executions) == (
        len(executions) - 1
    )


async def test_each_history_of_a_long_run_stays_near_the_suggested_length(
    short_history_client: Client,
) -> None:
    task_queue = f"long-{uuid.uuid4().hex[:8]}"
    client = GraphClient(short_history_client, task_queue)
    async with Worker(
        short_history_client,
        task_queue=task_queue,
        plugins=[LockgatePlugin(graphs=[CountTo], secret=SECRET)],
    ):
        started = await client.start(CountTo, {"target": 200}, wait=False)
        await short_history_client.get_workflow_handle(started["run_id"]).result()
        lengths = await _history_lengths(short_history_client, started["run_id"])

    # One node step adds a handful of events past the suggestion before the hand-over.
    assert max(lengths) < SUGGEST_AFTER_EVENTS + 20


async def test_a_gate_left_waiting_continues_as_new_with_its_key_and_takes_the_answer(
    short_history_client: Client,
) -> None:
    task_queue = f"long-{uuid.uuid4().hex[:8]}"
    people = Identities({"ada": {}, "ed": {"roles": ["editor"]}})
    plugin = LockgatePlugin(graphs=[DocReviewV1], directory=people.directory, secret=people.secret)
    ada = GraphClient(short_history_client, task_queue, signer=people.signer("ada"))
    async with Worker(short_history_client, task_queue=task_queue, plugins=[plugin]):
        started = await ada.start(DocReviewV1, {"title": "Tides"})
        run_id = started["run_id"]
        answer = people.signer("ed").sign(answer_binding(gate_of(started), "approve"))
        handle = short_history_client.get_workflow_handle(run_id)
        first_run = (await handle.describe()).run_id
        sent = 0
        while (await handle.describe()).run_id == first_run and sent < 1000:
            for _ in range(20):  # refused signals pile up in the history
                await handle.signal("decide", {"choice": "approve", "n": sent})
                sent += 1
            await handle.query("show")  # a query is answered once the worker caught up
        answered = await handle.execute_update("decide", answer, result_type=dict)
        # Signals that came with the answer are judged as the run finishes.
        result = await handle.result()

    refused = [row for row in result["trail"] if row["outcome"] == "refused"]
    assert (await handle.describe()).run_id != first_run
    assert answered["status"] == "finished"
    assert answered["fields"]["outcome"] == "published"
    # Each refused signal is recorded: the first ones as trail rows, the rest counted.
    assert len(refused) == MAX_REFUSED_SIGNALS_KEPT
    assert len(refused) + result["refused_signals_not_kept"] == sent
    assert all(row["code"] == "UNVERIFIED_APPROVER" for row in refused)
    assert {row["answer"] for row in refused} == {"approve"}


@pytest.mark.soak
async def test_a_five_thousand_step_run_finishes_with_its_trail_intact(
    temporal_client: Client, task_queue: str
) -> None:
    client = GraphClient(temporal_client, task_queue)
    async with Worker(
        temporal_client,
        task_queue=task_queue,
        plugins=[LockgatePlugin(graphs=[CountTo], secret=SECRET)],
    ):
        started = await client.start(CountTo, {"target": 5000}, wait=False)
        result = await temporal_client.get_workflow_handle(started["run_id"]).result()
        lengths = await _history_lengths(temporal_client, started["run_id"])

    counted = [row for row in result["trail"] if row["node"] == "count"]
    print(
        json.dumps(
            {
                "soak": "long_run",
                "steps": len(counted),
                "histories": len(lengths),
                "events_total": sum(lengths),
                "events_longest_history": max(lengths),
                "result_bytes": len(json.dumps(result)),
            }
        )
    )
    assert result["status"] == "finished"
    assert len(counted) == 5000
    assert result["fields"]["counter"] == 5000
