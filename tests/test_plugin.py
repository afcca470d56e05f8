"""LockgatePlugin inside a worker the user already runs, and its check of the namespace."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import LockgatePlugin, ToolClient, tool
from lockgate.devserver import temporal_binary
from lockgate.examples.essay_review import EssayReview
from lockgate.namespace import SearchAttributesMissingError
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES

with workflow.unsafe.imports_passed_through():
    # The sandbox re-imports this module for Greet; tests.support reads the file system.
    from tests.support import SECRET

pytestmark = pytest.mark.timeout(60)


@tool("demo:add", "Add two numbers.", scopes=["math"])
def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b}


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn(name="test.greet")
class Greet:
    """A plain user workflow calling a plain user activity: no lockgate in sight."""

    @workflow.run
    async def run(self, name: str) -> str:
        shouted = await workflow.execute_activity(
            shout, f"hello, {name}", start_to_close_timeout=timedelta(seconds=10)
        )
        return f"{shouted}!"


async def test_the_plugin_serves_lockgate_calls_beside_a_plain_user_workflow_and_activity(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities({"ed": {"scopes": ["math"]}})
    async with lockgate_worker(
        tools=[add], directory=people.directory, workflows=[Greet], activities=[shout]
    ):
        greeting = await temporal_client.execute_workflow(
            Greet.run, "ada", id=f"greet-{uuid4().hex}", task_queue=task_queue
        )
        signed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        result = await signed.call("demo:add", {"a": 1, "b": 2})

    assert greeting == "HELLO, ADA!"
    assert result["success"] is True, result
    assert result["data"] == {"sum": 3}


async def test_the_workers_catalogue_lists_the_plugins_tools_and_graphs(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(tools=[add], graphs=[EssayReview], workflows=[Greet]):
        tools = await ToolClient(temporal_client, task_queue).list()

    names = {entry["name"] for entry in tools}
    assert {"demo:add", "essay:write", "essay:grade", "essay:publish"} <= names


async def test_a_worker_refuses_to_start_on_a_namespace_without_lockgates_search_attributes(
    task_queue: str,
) -> None:
    bare = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()), ui=False
    )
    try:
        worker = Worker(
            bare.client,
            task_queue=task_queue,
            workflows=[Greet],
            activities=[shout],
            plugins=[LockgatePlugin(graphs=[EssayReview], secret=SECRET)],
        )
        with pytest.raises(SearchAttributesMissingError) as refused:
            await worker.run()
    finally:
        await bare.shutdown()

    message = str(refused.value)
    for key in LOCKGATE_SEARCH_ATTRIBUTES:
        assert key.name in message
        assert (
            f"temporal operator search-attribute create --namespace default --name {key.name} "
            "--type Keyword"
        ) in message
    # And for a namespace on Temporal Cloud, where the operator service may not add them:
    assert "tcld namespace search-attributes add --namespace default" in message


async def test_a_directory_file_the_plugin_loads_is_watched_only_while_its_worker_runs(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    people = Identities({"ed": {"scopes": ["math"]}})
    file = tmp_path / "directory.toml"
    file.write_text(people.toml)
    plugin = LockgatePlugin(tools=[add], directory=file, secret=SECRET)

    def watchers() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name == f"lockgate-directory:{file}"]

    async with Worker(temporal_client, task_queue=task_queue, plugins=[plugin]):
        while_running = watchers()
        signed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        result = await signed.call("demo:add", {"a": 2, "b": 3})
    for thread in threading.enumerate():
        if thread.name == f"lockgate-directory:{file}":
            thread.join(timeout=5)  # it stops within its next wait

    assert while_running == [f"lockgate-directory:{file}"]
    assert result["data"] == {"sum": 5}
    assert watchers() == []


@activity.defn(name="demo:add")
async def users_own_add(a: int, b: int) -> str:
    return f"the worker's own demo:add of {a} and {b}"


@workflow.defn(name="test.own-add")
class OwnAdd:
    """The worker's own workflow, calling the worker's own activity named like a lockgate tool."""

    @workflow.run
    async def run(self) -> str:
        added: str = await workflow.execute_activity(
            "demo:add", args=[1, 2], result_type=str, start_to_close_timeout=timedelta(seconds=10)
        )
        return added


async def test_a_worker_activity_named_like_a_tool_does_not_collide_with_it(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities({"ed": {"scopes": ["math"]}})
    async with lockgate_worker(
        tools=[add], directory=people.directory, workflows=[OwnAdd], activities=[users_own_add]
    ):
        own = await temporal_client.execute_workflow(
            OwnAdd.run, id=f"own-add-{uuid4().hex}", task_queue=task_queue
        )
        signed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        governed = await signed.call("demo:add", {"a": 1, "b": 2})

    assert own == "the worker's own demo:add of 1 and 2"
    assert governed["data"] == {"sum": 3}
