"""The example support agent (lockgate/examples/support_agent.py): a LangGraph graph on
Temporal's plugin that refunds small amounts itself and asks a support lead above the threshold."""

from __future__ import annotations

import sys
from typing import Any
from uuid import uuid4

import pytest

pytest.importorskip("temporalio.langgraph")
if sys.version_info < (3, 11):
    pytest.skip(
        "LangGraph's interrupt() needs Python 3.11 or later on Temporal", allow_module_level=True
    )

from temporalio.client import Client
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.examples.support_agent import (
    GRAPH,
    THRESHOLD,
    TOOLS,
    RefundRequest,
    SupportAgent,
    support_graph,
)
from lockgate.testing import Identities
from tests.helpers.graphs import eventually

pytestmark = pytest.mark.timeout(120)

PEOPLE = Identities(
    {
        "agent-7": {"scopes": ["tickets:read", "refunds:issue"]},
        "lena": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
    }
)


def worker(client: Client, task_queue: str) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[SupportAgent],
        plugins=[
            LangGraphPlugin(graphs={GRAPH: support_graph()}),
            LockgatePlugin(tools=TOOLS, directory=PEOPLE.directory, secret=PEOPLE.secret),
        ],
    )


async def refund(client: Client, task_queue: str, amount: int) -> Any:
    return await GraphClient(client, task_queue, PEOPLE.signer("agent-7")).start_workflow(
        SupportAgent.run, RefundRequest(ticket=42, amount=amount), id=f"refund-{uuid4().hex[:8]}"
    )


async def test_a_refund_up_to_the_threshold_is_the_agents_own_to_issue(
    temporal_client: Client, task_queue: str
) -> None:
    async with worker(temporal_client, task_queue):
        handle = await refund(temporal_client, task_queue, THRESHOLD)
        result = await handle.result()

    assert result == {"outcome": "refunded", "refunded": THRESHOLD, "decision": None}


async def test_a_larger_refund_waits_for_a_lead_the_agent_cannot_stand_in_for(
    temporal_client: Client, task_queue: str
) -> None:
    async with worker(temporal_client, task_queue):
        handle = await refund(temporal_client, task_queue, 250)
        run = handle.id
        pending = await eventually(
            lambda: GraphClient(temporal_client, task_queue).pending(of="support-lead"),
            lambda rows: any(row["run_id"] == run for row in rows),
            what="the refund gate in pending",
        )
        by_agent = await GraphClient(temporal_client, task_queue, PEOPLE.signer("agent-7")).decide(
            run, "issue"
        )
        by_lead = await GraphClient(temporal_client, task_queue, PEOPLE.signer("lena")).decide(
            run, "issue"
        )
        result = await handle.result()
        shown = await GraphClient(temporal_client, task_queue).show(run)

    (row,) = [row for row in pending if row["run_id"] == run]
    assert (row["target"] or {}).get("amount") == 250
    assert by_agent["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert by_lead["ok"] is True
    assert result["outcome"] == "refunded" and result["refunded"] == 250
    assert [(r["operation"], r["by"]["actor"]) for r in shown["trail"]] == [
        ("tickets:read", "agent-7"),
        ("ask:support-lead", "lena"),
        ("refunds:issue", "lena"),
    ]
