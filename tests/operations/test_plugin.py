"""LockgatePlugin inside a worker the user already runs, and its check of the namespace."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import pytest_asyncio
from google.protobuf.duration_pb2 import Duration
from temporalio import activity, workflow
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from lockgate import LockgatePlugin, ToolClient, tool
from lockgate.authorization import ChannelPolicy
from lockgate.examples.essay_review import EssayReview
from lockgate.namespace import SearchAttributesMissingError, check_search_attributes
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES

with workflow.unsafe.imports_passed_through():
    # The sandbox re-imports this module for Greet; tests.helpers.support reads the file system.
    from tests.helpers.graphs import eventually
    from tests.helpers.support import REPOSITORY, SECRET, error_of

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


@tool("demo:post", "Posts a message where everyone reads it.", scopes=["math"], mutating=True)
def post(text: str) -> dict[str, Any]:
    return {"posted": text}


async def test_a_channel_of_ones_own_is_governed_by_the_plugins_setting(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities({"ed": {"scopes": ["math"]}})
    plugin = LockgatePlugin(
        tools=[add, post],
        directory=people.directory,
        secret=SECRET,
        channels={"slack": ChannelPolicy(require_auth=True, block_mutating=True)},
    )
    async with lockgate_worker(plugin=plugin):
        slack = ToolClient(temporal_client, task_queue, signer=people.signer("ed", "slack"))
        posted = await slack.call("demo:post", {"text": "hello"})
        added = await slack.call("demo:add", {"a": 1, "b": 2})
        unsigned = await ToolClient(temporal_client, task_queue, channel="slack").call(
            "demo:add", {"a": 1, "b": 2}
        )

    assert error_of(posted) == {
        "code": "FORBIDDEN",
        "message": "Mutating tool 'demo:post' is blocked on channel 'slack' (block_mutating "
        "policy).",
    }
    assert added["data"] == {"sum": 3}, added
    assert error_of(unsigned)["code"] == "FORBIDDEN"
    assert "Channel 'slack' requires an authenticated principal" in error_of(unsigned)["message"]


async def test_the_workers_catalogue_lists_the_plugins_tools_and_graphs(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(tools=[add], graphs=[EssayReview], workflows=[Greet]):
        tools = await ToolClient(temporal_client, task_queue).list()

    names = {entry["name"] for entry in tools}
    assert {"demo:add", "essay:write", "essay:grade", "essay:publish"} <= names


@pytest_asyncio.fixture
async def bare_namespace(temporal_client: Client) -> Client:
    """A client of a fresh namespace on the test server, made without lockgate's search
    attributes (the server registers them on ``default`` only)."""
    name = f"bare-{uuid4().hex[:12]}"
    await temporal_client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=name, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )
    bare = Client(temporal_client.service_client, namespace=name)

    async def attributes_readable() -> bool:
        # A namespace serves once the server's namespace cache has it.
        try:
            await check_search_attributes(bare)
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            return False
        return True

    await eventually(attributes_readable, bool, seconds=30, what=f"namespace {name} serving")
    return bare


def assert_names_the_commands(refused: SearchAttributesMissingError, namespace: str) -> None:
    message = str(refused)
    assert "lockgate setup" in message
    for key in LOCKGATE_SEARCH_ATTRIBUTES:
        assert key.name in message
        assert (
            f"temporal operator search-attribute create --namespace {namespace} "
            f"--name {key.name} --type Keyword"
        ) in message
    # And for a namespace on Temporal Cloud, where the operator service may not add them:
    assert f"tcld namespace search-attributes add --namespace {namespace}" in message


def greeting_worker(client: Client, task_queue: str) -> Worker:
    """A shop's worker: its own workflow and activity, and lockgate's plugin with a graph."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[Greet],
        activities=[shout],
        plugins=[LockgatePlugin(graphs=[EssayReview], secret=SECRET)],
    )


async def test_worker_run_refuses_a_namespace_without_lockgates_search_attributes_at_once(
    bare_namespace: Client, task_queue: str
) -> None:
    worker = greeting_worker(bare_namespace, task_queue)
    with pytest.raises(SearchAttributesMissingError) as refused:
        await asyncio.wait_for(worker.run(), 30)
    # The worker it refused counts as shut down: shutting it down again does not wait for ever.
    await asyncio.wait_for(worker.shutdown(), 10)

    assert_names_the_commands(refused.value, bare_namespace.namespace)


async def test_async_with_worker_raises_the_refusal_instead_of_hanging_the_shops_code(
    bare_namespace: Client, task_queue: str
) -> None:
    # The README's way: the shop's own code runs inside the block. Before, the refusal was
    # swallowed: the block was cancelled, its exit waited for a shutdown that never came, and
    # nothing was printed.
    async def the_shops_code() -> None:
        async with greeting_worker(bare_namespace, task_queue):
            await bare_namespace.execute_workflow(
                Greet.run, "ada", id=f"greet-{uuid4().hex}", task_queue=task_queue
            )

    with pytest.raises(SearchAttributesMissingError) as refused:
        await asyncio.wait_for(the_shops_code(), 30)

    assert_names_the_commands(refused.value, bare_namespace.namespace)


async def test_the_worker_command_refuses_a_namespace_without_them_and_exits_one(
    bare_namespace: Client, task_queue: str, tmp_path: Path
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lockgate.cli", "worker",
        "--graphs", "lockgate.examples.essay_review", "--allow-examples",
        "--address", bare_namespace.service_client.config.target_host,
        "--namespace", bare_namespace.namespace,
        "--task-queue", task_queue,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(REPOSITORY),
            "LOCKGATE_WORKER_SECRET": SECRET.to_text(),
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)

    assert process.returncode == 1
    assert b"worker ready" not in out
    assert "Traceback" not in err.decode()
    assert f"lockgate: Namespace '{bare_namespace.namespace}' lacks" in err.decode()
    assert_names_the_commands(SearchAttributesMissingError(err.decode()), bare_namespace.namespace)


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
