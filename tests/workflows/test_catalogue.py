"""Listing what a task queue's workers serve: one catalogue run per queue, read by a query."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

from lockgate import GraphClient, ToolClient, tool
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from lockgate.workflows._catalogue import (
    CATALOGUE_WORKFLOW,
    CatalogueError,
    catalogue_id,
    read_catalogue,
)
from tests.helpers.graphs import eventually

pytestmark = pytest.mark.timeout(60)


@tool("demo:add", "Add two numbers.")
def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b}


@tool("demo:subtract", "Subtract b from a.")
def subtract(a: int, b: int) -> dict[str, Any]:
    return {"difference": a - b}


@workflow.defn(name="mallory.squat", sandboxed=False)
class Squat:
    """A stranger's workflow holding the catalogue's id."""

    @workflow.run
    async def run(self, linger: bool) -> None:
        if linger:
            await workflow.wait_condition(lambda: False)


async def _runs_on(client: Client, task_queue: str) -> list[tuple[str, str]]:
    return [
        (execution.id, execution.workflow_type)
        async for execution in client.list_workflows(f"TaskQueue = '{task_queue}'")
    ]


async def test_listing_ten_times_leaves_one_catalogue_run_on_the_queue(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(tools=[add], graphs=[EssayReview]):
        tools = ToolClient(temporal_client, task_queue)
        listings = [await tools.list() for _ in range(10)]
        graphs = await GraphClient(temporal_client, task_queue).catalogue()

    assert all(listing == listings[0] for listing in listings)
    assert {"demo:add", "essay:write", "essay:publish"} <= {t["name"] for t in listings[0]}
    assert [entry["name"] for entry in graphs["graphs"]] == ["essay:review"]
    # Visibility lags a little behind the runs; once it shows the catalogue, it shows no other.
    runs = await eventually(
        lambda: _runs_on(temporal_client, task_queue),
        lambda runs: len(runs) > 0,
        what="the queue's runs in visibility",
    )
    assert runs == [(catalogue_id(task_queue), CATALOGUE_WORKFLOW)]


async def test_the_list_is_what_the_worker_answering_serves_now(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    tools = ToolClient(temporal_client, task_queue)
    async with lockgate_worker(tools=[add]):
        before = {t["name"] for t in await tools.list()}
    async with lockgate_worker(tools=[add, subtract]):
        after = {t["name"] for t in await tools.list()}

    assert before == {"demo:add"}
    assert after == {"demo:add", "demo:subtract"}


async def test_with_no_worker_on_the_queue_listing_says_so_instead_of_hanging(
    temporal_client: Client, task_queue: str
) -> None:
    with pytest.raises(CatalogueError) as refused:
        await read_catalogue(temporal_client, task_queue, wait=timedelta(seconds=2))

    assert f"No worker of task queue '{task_queue}' answered within 2 s" in str(refused.value)


async def test_a_running_stranger_on_the_catalogue_id_is_named_not_believed(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    squatter_queue = f"{task_queue}-mallory"
    async with Worker(temporal_client, task_queue=squatter_queue, workflows=[Squat]):
        squat = await temporal_client.start_workflow(
            Squat.run, True, id=catalogue_id(task_queue), task_queue=squatter_queue
        )
        async with lockgate_worker(tools=[add]):
            with pytest.raises(CatalogueError) as refused:
                await ToolClient(temporal_client, task_queue).list()
        await squat.terminate()

    message = str(refused.value)
    assert "is a 'mallory.squat'" in message and f"'{squatter_queue}'" in message
    assert "temporal workflow terminate" in message


async def test_a_finished_stranger_on_the_catalogue_id_is_replaced(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    squatter_queue = f"{task_queue}-mallory"
    async with Worker(temporal_client, task_queue=squatter_queue, workflows=[Squat]):
        await temporal_client.execute_workflow(
            Squat.run, False, id=catalogue_id(task_queue), task_queue=squatter_queue
        )
    async with lockgate_worker(tools=[add]):
        listed = await ToolClient(temporal_client, task_queue).list()

    assert [t["name"] for t in listed] == ["demo:add"]
    described = await temporal_client.get_workflow_handle(catalogue_id(task_queue)).describe()
    assert (described.workflow_type, described.task_queue) == (CATALOGUE_WORKFLOW, task_queue)
