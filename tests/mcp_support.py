"""What the MCP and HTTP API tests share: their tools, people and a few readers of results."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from mcp_types import CallToolResult, TextContent

from lockgate import InMemoryRateLimiter, ToolRegistry, tool
from lockgate.examples.essay_review import TOOLS as ESSAY_TOOLS
from lockgate.examples.memo_clearance import TOOLS as MEMO_TOOLS
from lockgate.testing import Identities

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
