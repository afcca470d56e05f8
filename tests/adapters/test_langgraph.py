"""A LangGraph graph on Temporal's LangGraph plugin: its interrupts are answered by lockgate's
verified gates, by every rule a graph's gate has, and its tools are lockgate's governed tools."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import pytest

pytest.importorskip("temporalio.langgraph")
if sys.version_info < (3, 11):
    pytest.skip(
        "LangGraph's interrupt() needs Python 3.11 or later on Temporal", allow_module_level=True
    )

from temporalio.client import Client, WorkflowHandle
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Replayer, Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.testing import Identities
from tests.helpers.graphs import eventually
from tests.helpers.langgraph_workflows import GRAPH, LangGraphRefund, refund_graph
from tests.helpers.own_workflow_support import open_gate_of, support_people
from tests.helpers.own_workflows import OWN_TOOLS, RefundRequest
from tests.helpers.support import audit_facts

pytestmark = pytest.mark.timeout(120)


def plugins_for(people: Identities) -> list[Any]:
    return [
        LangGraphPlugin(graphs={GRAPH: refund_graph()}),
        LockgatePlugin(tools=OWN_TOOLS, directory=people.directory, secret=people.secret),
    ]


@contextlib.asynccontextmanager
async def langgraph_worker(
    client: Client, task_queue: str, people: Identities
) -> AsyncIterator[Worker]:
    async with Worker(
        client, task_queue=task_queue, workflows=[LangGraphRefund], plugins=plugins_for(people)
    ) as worker:
        yield worker


async def start_refund(
    client: Client, task_queue: str, people: Identities, as_: str | None = "ada"
) -> WorkflowHandle[Any, Any]:
    signer = people.signer(as_) if as_ is not None else None
    return await GraphClient(client, task_queue, signer).start_workflow(
        LangGraphRefund.run, RefundRequest(ticket=42, amount=120), id=f"lg-{uuid4().hex[:8]}"
    )


async def test_an_interrupt_is_answered_only_by_a_verified_lead_who_neither_asked_nor_made_it(
    temporal_client: Client, task_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    people = support_people()
    caplog.set_level(logging.INFO, logger="lockgate.audit")

    def as_(who: str | None) -> GraphClient:
        return GraphClient(temporal_client, task_queue, people.signer(who) if who else None)

    async with langgraph_worker(temporal_client, task_queue, people):
        handle = await start_refund(temporal_client, task_queue, people)
        run_id = handle.id
        opened = await open_gate_of(temporal_client, task_queue, run_id, "refund#1")
        pending = await eventually(
            lambda: as_("lee").pending(of="support-lead"),
            lambda rows: any(row["run_id"] == run_id for row in rows),
            what="the gate in pending",
        )
        unsigned = await as_(None).decide(run_id, "issue")
        requester = await as_("ada").decide(run_id, "issue")
        without_scope = await as_("clerk").decide(run_id, "issue")
        without_role = await as_("nobody").decide(run_id, "issue")
        approved = await as_("lee").decide(run_id, "issue")
        await open_gate_of(temporal_client, task_queue, run_id, "closure#2")
        maker = await as_("lee").decide(run_id, "close")
        closed = await as_("mo").decide(run_id, "close")
        result = await handle.result()
        shown = await as_(None).show(run_id)
        history = await handle.fetch_history()
    replayed = await Replayer(
        workflows=[LangGraphRefund], plugins=plugins_for(people)
    ).replay_workflow(history, raise_on_replay_failure=False)

    (row,) = [row for row in pending if row["run_id"] == run_id]
    assert row["graph"] == "tests:langgraph-refund" and row["requester"] == "ada"
    assert row["target"] == {"ticket": 42, "amount": 120}
    assert [c["needs"] for c in row["choices"]] == [["refunds:issue"], []]
    assert opened["role"] == "support-lead"
    assert unsigned["error"]["code"] == "UNVERIFIED_APPROVER"
    assert requester["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert without_scope["error"]["code"] == "FORBIDDEN"
    assert "refunds:issue" in without_scope["error"]["message"]
    assert without_role["error"]["code"] == "FORBIDDEN"
    assert "support-lead" in without_role["error"]["message"]
    assert approved["ok"] is True
    assert maker["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert closed["ok"] is True
    assert result["decision"]["choice"] == "issue"
    assert result["decision"]["by"]["actor"] == "lee"
    assert result["refunded"] == 120
    assert result["closure"]["choice"] == "close"
    assert result["closure"]["by"]["actor"] == "mo"
    trail = [(r["operation"], r["outcome"], r["by"]["actor"]) for r in shown["trail"]]
    assert trail == [
        ("tickets:read", "ran", "ada"),
        ("ask:support-lead", "answered", "lee"),
        ("refunds:issue", "ran", "lee"),
        ("ask:support-lead", "answered", "mo"),
    ]
    assert replayed.replay_failure is None
    refusals = [
        facts
        for facts in (audit_facts(r) for r in caplog.records if "lockgate_audit" in r.__dict__)
        if facts.get("event") == "gate.decide" and facts.get("outcome") == "refused"
    ]
    assert len(refusals) == 5


async def test_a_governed_tool_the_driver_may_not_call_is_the_nodes_tool_error_and_is_audited(
    temporal_client: Client, task_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    people = support_people()
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    async with langgraph_worker(temporal_client, task_queue, people):
        handle = await start_refund(temporal_client, task_queue, people, as_="nobody")
        result = await handle.result()
        shown = await GraphClient(temporal_client, task_queue).show(handle.id)

    assert result["read_error"].startswith("FORBIDDEN: ")
    assert "tickets:read" in result["read_error"]
    assert "decision" not in result  # the graph went on to its end, asking nobody
    (row,) = shown["trail"]
    assert (row["operation"], row["outcome"], row["by"]["actor"]) == (
        "tickets:read",
        "refused",
        "nobody",
    )
    assert any(
        facts.get("tool") == "tickets:read" and facts.get("outcome") == "refused"
        for facts in (audit_facts(r) for r in caplog.records if "lockgate_audit" in r.__dict__)
    )


async def test_a_run_queried_while_its_start_is_checked_replays_its_local_tool_calls_alike(
    temporal_client: Client, task_queue: str
) -> None:
    """Queries that arrive while the start proof's local activity runs split that workflow task;
    the run still names its local tools where replay finds them (no patch left dangling)."""
    people = support_people()
    async with langgraph_worker(temporal_client, task_queue, people):
        handle = await start_refund(temporal_client, task_queue, people)

        async def keep_asking() -> None:
            for _ in range(40):
                await GraphClient(temporal_client, task_queue).show(handle.id)

        await asyncio.gather(keep_asking(), keep_asking())
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        # The run is taken to its end: a LangGraph run evicted from a stopping worker while it
        # waits is closed outside its event loop by Temporal's LangGraph plugin.
        await GraphClient(temporal_client, task_queue, people.signer("lee")).decide(
            handle.id, "issue"
        )
        await open_gate_of(temporal_client, task_queue, handle.id, "closure#2")
        await GraphClient(temporal_client, task_queue, people.signer("mo")).decide(
            handle.id, "close"
        )
        await handle.result()
        history = await handle.fetch_history()
    replayed = await Replayer(
        workflows=[LangGraphRefund], plugins=plugins_for(people)
    ).replay_workflow(history, raise_on_replay_failure=False)

    assert replayed.replay_failure is None
