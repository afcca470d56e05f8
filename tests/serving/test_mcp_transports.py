"""``lockgate mcp`` over its two transports, and the JSON HTTP API, with real clients.

stdio runs the ``lockgate mcp`` command as a subprocess (as a host runs it); HTTP serves the app
with uvicorn on a free port, and the MCP SDK's client and a plain HTTP client talk to it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import uuid4

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client as TemporalClient

from lockgate.examples.essay_review import EssayReview
from lockgate.serving._gate_watch import GATE_URI_TEMPLATE
from lockgate.serving._http import DEFAULT_MAX_BODY_BYTES
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, eventually, signed_answer
from tests.helpers.serving import (
    MCP_NAME,
    api,
    bearer,
    data_of,
    http_server,
    people,
    refusal_of,
    registry,
    runs,
)

pytestmark = pytest.mark.timeout(120)


def address_of(temporal_client: TemporalClient) -> str:
    return temporal_client.service_client.config.target_host


# stdio ------------------------------------------------------------------------------------------


async def test_over_stdio_the_command_serves_tools_and_refuses_an_unsigned_answer(
    lockgate_worker: WorkerFactory,
    temporal_client: TemporalClient,
    task_queue: str,
    tmp_path: Path,
) -> None:
    token = uuid4().hex
    command = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "lockgate.cli",
            "mcp",
            "--address",
            address_of(temporal_client),
            "--task-queue",
            task_queue,
            "--directory",
            str(tmp_path / "no-directory.toml"),
        ],
        # The stdio client passes on only a few variables of its own.
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
        cwd=str(tmp_path),
    )
    async with (
        lockgate_worker(tools=registry(), graphs=[EssayReview]),
        Client(command, mode="legacy") as client,
    ):
        names = [each.name for each in (await client.list_tools()).tools]
        counted = await client.call_tool("demo__count", {"token": token})
        forbidden = await client.call_tool("demo__secret", {})
        unsigned = await client.call_tool("graph__decide", {"run": "essay:review-x"})
        templates = (await client.list_resource_templates()).resource_templates

    assert "demo__count" in names and "graph__start" in names
    assert [each.uri_template for each in templates] == [GATE_URI_TEMPLATE]
    assert all(MCP_NAME.fullmatch(name) for name in names)
    assert data_of(counted) == {"token": token, "runs": 1}
    assert refusal_of(forbidden)["code"] == "FORBIDDEN"
    assert refusal_of(unsigned)["code"] == "UNVERIFIED_APPROVER"


# HTTP -------------------------------------------------------------------------------------------


async def test_over_http_mcp_needs_the_token_and_then_serves_tools_and_graphs(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd, token = people(), uuid4().hex
    async with (
        lockgate_worker(tools=registry(), graphs=[EssayReview], directory=crowd.directory),
        http_server(temporal_client, task_queue, crowd, "agent-7") as url,
    ):
        async with httpx2.AsyncClient() as plain:
            no_token = await plain.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1})
            wrong = await plain.post(
                f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1}, headers=bearer("not-the-token")
            )
        transport = streamable_http_client(
            f"{url}/mcp", http_client=httpx2.AsyncClient(headers=bearer())
        )
        async with Client(transport, mode="legacy") as client:
            names = [each.name for each in (await client.list_tools()).tools]
            secret = await client.call_tool("demo__secret", {})
            counted = await client.call_tool("demo__count", {"token": token})
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates

    assert (no_token.status_code, wrong.status_code) == (401, 401)
    assert "graph__decide" in names
    # Signed as agent-7, who holds demo:secret in the workers' Directory.
    assert data_of(secret) == {"secret": "swordfish"}
    assert data_of(counted)["runs"] == 1 and runs[token] == 1
    assert [str(each.uri) for each in resources] == ["lockgate://gates"]
    assert [each.uri_template for each in templates] == [GATE_URI_TEMPLATE]


async def test_the_json_api_runs_a_graph_answers_refusals_below_500_and_needs_the_token(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    ed = crowd.signer("ed")
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        http_server(temporal_client, task_queue, crowd, "ada") as url,
        httpx2.AsyncClient(base_url=f"{url}/api") as plain,
    ):
        no_token = await plain.get("/graphs")
        graphs = await api(plain, "GET", "/graphs")
        started = await api(
            plain, "POST", "/runs", {"graph": "essay:review", "inputs": ALWAYS_FAILS}
        )
        run = started[1]
        pending = await eventually(
            lambda: api(plain, "GET", "/pending?role=editor"),
            lambda answer: answer[1]["count"] == 1,
            what="the gate in pending",
        )
        unsigned = await api(plain, "POST", f"/runs/{run['run_id']}/decide", {"choice": "abandon"})
        bad_json = await plain.post(
            f"/runs/{run['run_id']}/decide", content=b"{nope", headers=bearer()
        )
        by_ada = await api(
            plain,
            "POST",
            f"/runs/{run['run_id']}/decide",
            {"proof": signed_answer(crowd.signer("ada"), run, "publish_as_is")},
        )
        answered = await api(
            plain,
            "POST",
            f"/runs/{run['run_id']}/decide",
            {"proof": signed_answer(ed, run, "publish_as_is")},
        )
        again = await api(plain, "POST", f"/runs/{run['run_id']}/decide", {"proof": {}})
        missing = await api(plain, "GET", "/runs/essay:review-nothing")
        unknown_graph = await api(plain, "POST", "/runs", {"graph": "essay:nothing"})

    assert no_token.status_code == 401
    assert no_token.json()["error"]["code"] == "UNAUTHORIZED"
    assert graphs[0] == 200 and graphs[1]["graphs"][0]["name"] == "essay:review"
    assert started[0] == 200 and run["status"] == "waiting"
    assert run["requester"]["actor"] == "ada"
    assert [row["run_id"] for row in pending[1]["pending"]] == [run["run_id"]]
    assert unsigned[0] == 403 and unsigned[1]["error"]["code"] == "UNVERIFIED_APPROVER"
    assert bad_json.status_code == 422
    assert by_ada[0] == 403 and by_ada[1]["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert answered[0] == 200 and answered[1]["status"] == "finished"
    assert again[0] == 409 and again[1]["error"]["code"] == "GATE_NOT_PENDING"
    assert missing[0] == 404 and missing[1]["error"]["code"] == "NOT_FOUND"
    assert unknown_graph[0] == 404


def deep_start(levels: int) -> bytes:
    return b'{"graph": "essay:review", "inputs": {"title": ' + b"[" * levels + b"]" * levels + b"}}"


async def test_the_json_api_refuses_a_body_too_large_or_too_deep_with_a_sentence_naming_the_limit(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    three_megabytes = {"graph": "essay:review", "inputs": {"title": "x" * 3_000_000}}

    async def chunked() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield b" " * DEFAULT_MAX_BODY_BYTES

    async with (
        http_server(temporal_client, task_queue, crowd, "ada") as url,
        httpx2.AsyncClient(base_url=f"{url}/api", timeout=30) as plain,
    ):
        large = await api(plain, "POST", "/runs", three_megabytes)
        undeclared = await plain.post("/runs", content=chunked(), headers=bearer())
        deep = await plain.post("/runs", content=deep_start(200_000), headers=bearer())
        not_utf8 = await plain.post("/tools/essay:grade", content=b"\xff\xfe{", headers=bearer())

    assert large[0] == 413 and large[1]["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert f"over {DEFAULT_MAX_BODY_BYTES} bytes" in large[1]["error"]["message"]
    assert undeclared.status_code == 413
    assert deep.status_code == 422 and deep.json()["error"]["code"] == "VALIDATION_ERROR"
    assert "nested at most 32 levels" in deep.json()["error"]["message"]
    assert not_utf8.status_code == 422
