"""What the MCP and HTTP API tests share: their tools, people, an HTTP server and a few readers
of results."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast
from uuid import uuid4

import httpx2
import uvicorn
from mcp_types import CallToolResult, TextContent
from starlette.applications import Starlette
from temporalio.client import Client as TemporalClient

from lockgate import InMemoryRateLimiter, ToolRegistry, tool
from lockgate.devserver import free_port
from lockgate.examples.essay_review import TOOLS as ESSAY_TOOLS
from lockgate.examples.memo_clearance import TOOLS as MEMO_TOOLS
from lockgate.operations import Operations
from lockgate.serving import BearerToken, build_mcp_server, http_app
from lockgate.testing import Identities
from tests.helpers.graphs import eventually

MCP_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What Claude's hosts accept as a tool name."""

RATE_BUDGET = 3
"""Calls of one tool by one caller the test workers allow."""

# How often each token has run: the tools run in this process's worker.
runs: Counter[str] = Counter()


@tool("demo:count", "Counts its runs for a token.")
def count(token: str) -> dict[str, Any]:
    runs[token] += 1
    return {"token": token, "runs": runs[token]}


@tool("demo:secret", "Reads the secret; needs demo:secret.", scopes=["demo:secret"])
def secret() -> dict[str, Any]:
    return {"secret": "swordfish"}


@tool("demo:launch", "Launches something: every call is confirmed first.", confirm=True)
def launch(token: str) -> dict[str, Any]:
    runs[token] += 1
    return {"launched": token, "runs": runs[token]}


def registry() -> ToolRegistry:
    """The demo tools and the examples' tools, each allowed RATE_BUDGET calls per caller."""
    tools = ToolRegistry(rate_limiter=InMemoryRateLimiter(max_tokens=RATE_BUDGET))
    for each in [count, secret, launch, *ESSAY_TOOLS, *MEMO_TOOLS]:
        tools.register(cast(Callable[..., Any], each))  # the examples' lists mix signatures
    return tools


def people() -> Identities:
    """ada writes; ed edits and publishes; rod releases memos; agent-7 may read the secret."""
    return Identities(
        {
            "ada": {},
            "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
            "rod": {"roles": ["officer"], "scopes": ["memo:release"]},
            "agent-7": {"scopes": ["demo:secret"]},
        }
    )


def data_of(result: CallToolResult) -> dict[str, Any]:
    """A successful result's structured content (checked against its text)."""
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict)
    text = result.content[0]
    assert isinstance(text, TextContent)
    assert json.loads(text.text) == result.structured_content
    return result.structured_content


def refusal_of(result: CallToolResult) -> dict[str, str]:
    """A refused result's ``{code, message}``, checked to be a result (isError), not a trace."""
    assert result.is_error, result
    assert isinstance(result.structured_content, dict)
    assert set(result.structured_content) == {"code", "message"}
    assert "Traceback" not in result.structured_content["message"]
    return result.structured_content


# The HTTP server -------------------------------------------------------------------------------

TOKEN = "a-test-token-" + uuid4().hex
"""The bearer token of the HTTP servers the tests start."""


def api_app(
    temporal_client: TemporalClient, task_queue: str, identities: Identities, principal: str
) -> Starlette:
    """``lockgate mcp --http --as <principal>``'s app."""
    operations = Operations(
        temporal_client, task_queue, identities.signer(principal, "http"), channel="http"
    )
    return http_app(build_mcp_server(operations, poll_seconds=0.1), operations, BearerToken(TOKEN))


@asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[str]:
    """``app`` served by uvicorn on a free port; yields its URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    running = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: asyncio.sleep(0.02), lambda _: server.started, what="uvicorn")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await running


@asynccontextmanager
async def http_server(
    temporal_client: TemporalClient, task_queue: str, identities: Identities, principal: str
) -> AsyncIterator[str]:
    """``lockgate mcp --http``'s app as ``principal``, served on a free port; yields its URL."""
    async with serving(api_app(temporal_client, task_queue, identities, principal)) as url:
        yield url


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def api(
    plain: httpx2.AsyncClient, method: str, url: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    """The status and JSON object a request to the JSON API is answered with (never a trace)."""
    response = await plain.request(method, url, json=body, headers=bearer())
    answer: dict[str, Any] = response.json()
    assert isinstance(answer, dict), answer
    assert "Traceback" not in response.text
    return response.status_code, answer
