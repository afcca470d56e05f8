"""Attacker review (issue 24): a caller nobody verified passes for one.

- Finding 3: an unsigned call on a channel nobody registered (``evil``) ran a mutating tool that
  needs no scope as ``unverified:evil``, because the fail-closed policy's ``require_auth`` took
  that name for an authenticated principal.
"""

from __future__ import annotations

from collections import Counter
from uuid import uuid4

import pytest
from temporalio.client import Client

from lockgate import ToolClient, tool
from lockgate.testing import WorkerFactory
from tests.support import error_of

pytestmark = pytest.mark.timeout(60)

# How often each token was wiped: the activities run in this process.
wiped: Counter[str] = Counter()


@tool("demo:wipe", "Wipes what a token names; needs no scope.", mutating=True)
def wipe(token: str) -> dict[str, str]:
    wiped[token] += 1
    return {"wiped": token}


# Finding 3 --------------------------------------------------------------------------------------


async def test_an_unsigned_call_on_an_unregistered_channel_is_refused_and_runs_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token = uuid4().hex
    async with lockgate_worker(tools=[wipe]):
        evil = ToolClient(temporal_client, task_queue, channel="evil")
        result = await evil.call("demo:wipe", {"token": token})

    error = error_of(result)
    assert error["code"] == "FORBIDDEN"
    assert error["message"] == (
        "Channel 'evil' requires an authenticated principal (require_auth: it is not a "
        "registered channel, so it fails closed), and unverified:evil is not one: a caller that "
        "sent no proof is never authenticated."
    )
    assert wiped[token] == 0


@pytest.mark.parametrize("channel", ["mcp", "http", "web"])
async def test_an_unsigned_call_on_a_channel_that_requires_auth_is_refused_and_runs_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, channel: str
) -> None:
    token = uuid4().hex
    async with lockgate_worker(tools=[wipe]):
        unsigned = ToolClient(temporal_client, task_queue, channel=channel)
        result = await unsigned.call("demo:wipe", {"token": token})

    error = error_of(result)
    assert error["code"] == "FORBIDDEN"
    assert f"unverified:{channel} is not one" in error["message"]
    assert wiped[token] == 0


async def test_an_unsigned_client_on_the_temporal_channel_still_runs_what_needs_no_scope(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    token = uuid4().hex
    async with lockgate_worker(tools=[wipe]):
        result = await ToolClient(temporal_client, task_queue).call("demo:wipe", {"token": token})

    assert result["success"], result
    assert wiped[token] == 1
