"""A caller nobody verified passes for one.

- An unsigned call on a channel nobody registered (``evil``) ran a mutating tool that
  needs no scope as ``unverified:evil``, because the fail-closed policy's ``require_auth`` took
  that name for an authenticated principal.
- ``pending(viewer=...)`` (and so the inbox's view for a name) called a name the
  Directory holds no key or passkey for a verified viewer, and judged its options as if it were.
"""

from __future__ import annotations

from collections import Counter
from uuid import uuid4

import pytest
from temporalio.client import Client

from lockgate import Directory, GraphClient, ToolClient, tool
from lockgate.contracts import PendingGate
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._directory import DirectoryEntry
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, essay_people, eventually
from tests.helpers.support import error_of

pytestmark = pytest.mark.timeout(60)

# How often each token was wiped: the activities run in this process.
wiped: Counter[str] = Counter()


@tool("demo:wipe", "Wipes what a token names; needs no scope.", mutating=True)
def wipe(token: str) -> dict[str, str]:
    wiped[token] += 1
    return {"wiped": token}


# Unregistered channels ----------------------------------------------------------------------------


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


# Unknown viewers ----------------------------------------------------------------------------------


async def pending_row_for(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    viewer: str,
    *also_listed: DirectoryEntry,
) -> PendingGate:
    """The editor gate of a fresh essay:review run, as ``pending`` shows it to ``viewer``, judged
    against the essay people's Directory and ``also_listed``."""
    people = essay_people()
    listed = [people.directory.entry(name) for name in people.directory.principals()]
    directory = Directory([entry for entry in listed if entry is not None] + list(also_listed))
    async with lockgate_worker(graphs=[EssayReview], directory=directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
    reader = GraphClient(temporal_client, task_queue, directory=directory)
    rows = await eventually(
        lambda: reader.pending(of="editor", viewer=viewer),
        lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
        what="the run listed as pending",
    )
    return next(row for row in rows if row["run_id"] == run["run_id"])


async def test_pending_never_calls_an_unknown_name_a_verified_viewer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    row = await pending_row_for(lockgate_worker, temporal_client, task_queue, "ghost")

    assert row["viewer"] == {
        "principal": "ghost",
        "is_requester": False,
        "made_the_work": False,
        "verified": False,
    }
    assert {(choice["may"], choice["because"]) for choice in row["choices"]} == {
        (False, "unverified")
    }
    assert row["choices"][0]["why_not"] == (
        "a gate is answered by a verified actor, a signed call, and the Directory holds no key or "
        "passkey for ghost, so nobody can sign as them"
    )


async def test_a_listed_name_without_a_key_or_passkey_is_not_a_verified_viewer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # keyless holds the role and the scope, and no key: nobody could ever sign as keyless.
    keyless = DirectoryEntry(
        "keyless", roles=frozenset({"editor"}), scopes=frozenset({"essay:publish"})
    )

    row = await pending_row_for(lockgate_worker, temporal_client, task_queue, "keyless", keyless)

    assert row["viewer"]["verified"] is False
    assert {(choice["may"], choice["because"]) for choice in row["choices"]} == {
        (False, "unverified")
    }


async def test_a_viewer_the_directory_can_verify_is_judged_by_the_rules_of_an_answer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    row = await pending_row_for(lockgate_worker, temporal_client, task_queue, "ed")

    assert row["viewer"]["verified"] is True
    assert {choice["may"] for choice in row["choices"]} == {True}
