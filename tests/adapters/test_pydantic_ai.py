"""A Pydantic AI agent run durably by Pydantic AI's Temporal integration, with lockgate: the tool
approvals it defers are answered by verified gates, and lockgate tools are a governed toolset,
on the real dev server with Pydantic AI's deterministic FunctionModel (no network)."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from uuid import uuid4

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI needs Python 3.11 or later")

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer, Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.testing import Identities
from tests.helpers.graphs import eventually
from tests.helpers.pydantic_ai_workflows import (
    LOCKGATE_TOOLS,
    DurableAgentWorkflow,
    SupportAgentWorkflow,
)
from tests.helpers.support import audit_facts

pytestmark = pytest.mark.timeout(120)

AGENT_KINDS: dict[str, Callable[..., Any]] = {
    "TemporalAgent": SupportAgentWorkflow.run,
    "TemporalDurability": DurableAgentWorkflow.run,
}


def support_people() -> Identities:
    """ada asks (and is a lead herself); lee and mo lead and may refund; clerk leads but may
    not refund; payer may refund but is no lead."""
    return Identities(
        {
            "ada": {"roles": ["support-lead"], "scopes": ["tickets:read", "refunds:issue"]},
            "lee": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
            "mo": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
            "clerk": {"roles": ["support-lead"]},
            "payer": {"scopes": ["refunds:issue"]},
        }
    )


def lockgate_plugin(people: Identities) -> LockgatePlugin:
    return LockgatePlugin(tools=LOCKGATE_TOOLS, directory=people.directory, secret=people.secret)


class Desk:
    """The test's client (with Pydantic AI's plugin, whose payload converter a client of these
    runs needs), its task queue and its people."""

    def __init__(self, temporal_client: Client, task_queue: str, people: Identities) -> None:
        self.client = Client(
            temporal_client.service_client,
            namespace=temporal_client.namespace,
            plugins=[PydanticAIPlugin()],
        )
        self.task_queue = task_queue
        self.people = people

    def as_(self, who: str | None) -> GraphClient:
        signer = self.people.signer(who) if who is not None else None
        return GraphClient(self.client, self.task_queue, signer)

    @asynccontextmanager
    async def worker(self) -> AsyncIterator[Worker]:
        """A worker with both plugins: Pydantic AI's comes from the client."""
        async with Worker(
            self.client,
            task_queue=self.task_queue,
            workflows=[SupportAgentWorkflow, DurableAgentWorkflow],
            plugins=[lockgate_plugin(self.people)],
        ) as worker:
            yield worker

    async def start(
        self,
        prompt: str,
        as_: str | None = "ada",
        agent: Callable[..., Any] = SupportAgentWorkflow.run,
    ) -> WorkflowHandle[Any, Any]:
        return await self.as_(as_).start_workflow(
            agent, prompt, id=f"pydantic-agent-{uuid4().hex[:8]}"
        )

    async def open_gate(self, run_id: str, gate: str) -> dict[str, Any]:
        async def shown() -> dict[str, Any]:
            return dict(await self.as_(None).show(run_id))

        view = await eventually(
            shown,
            lambda run: (run.get("awaiting") or {}).get("gate") == gate,
            what=f"gate {gate} open",
        )
        return dict(view["awaiting"])

    async def trail(self, run_id: str) -> list[tuple[str, str, str]]:
        shown = await self.as_(None).show(run_id)
        return [(r["operation"], r["outcome"], r["by"]["actor"]) for r in shown["trail"]]


@pytest.fixture
def desk(temporal_client: Client, task_queue: str) -> Desk:
    return Desk(temporal_client, task_queue, support_people())


def audited(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [audit_facts(r) for r in caplog.records if "lockgate_audit" in r.__dict__]


async def test_an_approval_the_agent_asks_opens_a_gate_that_shows_in_pending(desk: Desk) -> None:
    async with desk.worker():
        handle = await desk.start("refund")
        opened = await desk.open_gate(handle.id, "approval#1")
        pending = await eventually(
            lambda: desk.as_("lee").pending(of="support-lead"),
            lambda rows: any(row["run_id"] == handle.id for row in rows),
            what="the gate in pending",
        )
        await handle.terminate("the test saw what it needed")

    (row,) = [row for row in pending if row["run_id"] == handle.id]
    assert row["graph"] == "support:pydantic-agent" and row["requester"] == "ada"
    assert row["target"] == {"tool": "refunds__issue", "arguments": {"ticket": 42, "amount": 120}}
    # Approving leads to the lockgate tool, so an approver must be allowed to run it.
    assert [(c["option"], c["needs"]) for c in row["choices"]] == [
        ("approve", ["refunds:issue"]),
        ("reject", []),
    ]
    assert opened["role"] == "support-lead"
    assert opened["because"] == "A refund needs a support lead."


async def test_the_gate_refuses_the_unsigned_the_requester_a_lead_who_may_not_refund_and_a_non_lead(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    async with desk.worker():
        handle = await desk.start("refund")
        await desk.open_gate(handle.id, "approval#1")
        unsigned = await desk.as_(None).decide(handle.id, "approve")
        requester = await desk.as_("ada").decide(handle.id, "approve")
        without_scope = await desk.as_("clerk").decide(handle.id, "approve")
        without_role = await desk.as_("payer").decide(handle.id, "approve")
        still = await desk.open_gate(handle.id, "approval#1")
        trail = await desk.trail(handle.id)
        await handle.terminate("the test saw what it needed")

    assert unsigned["error"]["code"] == "UNVERIFIED_APPROVER"
    assert requester["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert without_scope["error"]["code"] == "FORBIDDEN"
    assert "refunds:issue" in without_scope["error"]["message"]
    assert without_role["error"]["code"] == "FORBIDDEN"
    assert "support-lead" in without_role["error"]["message"]
    assert still["gate"] == "approval#1"  # nothing was approved
    assert ("refunds:issue", "ran", "ada") not in trail
    refusals = [
        facts
        for facts in audited(caplog)
        if facts.get("event") == "gate.decide" and facts["outcome"] == "refused"
    ]
    assert len(refusals) == 4  # each refusal audited, before anything was written


@pytest.mark.parametrize("kind", list(AGENT_KINDS))
async def test_a_verified_lead_approves_and_the_tool_runs_as_that_lead_and_the_agent_finishes(
    desk: Desk, kind: str
) -> None:
    async with desk.worker():
        handle = await desk.start("refund", agent=AGENT_KINDS[kind])
        await desk.open_gate(handle.id, "approval#1")
        approved = await desk.as_("lee").decide(handle.id, "approve")
        result = await handle.result()
        trail = await desk.trail(handle.id)

    assert approved["ok"] is True
    assert result["seen"] == [
        {
            "tool": "refunds__issue",
            "outcome": "success",
            "content": '{"refunded":120,"ticket":42}',
        }
    ]
    assert trail == [
        ("ask:support-lead", "answered", "lee"),
        ("refunds:issue", "ran", "lee"),
    ]


async def test_whoever_drove_a_governed_call_since_the_last_gate_may_not_approve_the_next(
    desk: Desk,
) -> None:
    """lee approves the refund, which then runs as lee; the next approval (closing the ticket,
    a tool of Pydantic AI's own) is refused to lee and taken from mo. The run replays alike."""
    async with desk.worker():
        handle = await desk.start("refund and close")
        await desk.open_gate(handle.id, "approval#1")
        await desk.as_("lee").decide(handle.id, "approve")
        second = await desk.open_gate(handle.id, "approval#2")
        maker = await desk.as_("lee").decide(handle.id, "approve")
        checker = await desk.as_("mo").decide(handle.id, "approve")
        result = await handle.result()
        trail = await desk.trail(handle.id)
        history = await handle.fetch_history()
    replayed = await Replayer(
        workflows=[SupportAgentWorkflow],
        plugins=[PydanticAIPlugin(), lockgate_plugin(desk.people)],
    ).replay_workflow(history, raise_on_replay_failure=False)

    assert second["makers"] == ["lee"]
    assert second["target"] == {"tool": "close_ticket", "arguments": {"ticket": 42}}
    assert maker["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert checker["ok"] is True
    assert [(seen["tool"], seen["outcome"]) for seen in result["seen"]] == [
        ("tickets__read", "success"),
        ("refunds__issue", "success"),
        ("close_ticket", "success"),
    ]
    assert trail == [
        ("tickets:read", "ran", "ada"),
        ("ask:support-lead", "answered", "lee"),
        ("refunds:issue", "ran", "lee"),
        ("ask:support-lead", "answered", "mo"),
    ]
    assert replayed.replay_failure is None


async def test_approvals_asked_together_each_get_a_gate_and_run_as_the_last_approver_may(
    desk: Desk,
) -> None:
    """The model asks for the refund and the closing in one response. lee approves the refund,
    clerk (a lead who may not refund) the closing: the calls then run as clerk, and the refund
    is refused to the model instead of running on lee's word."""
    async with desk.worker():
        handle = await desk.start("refund and close at once")
        first = await desk.open_gate(handle.id, "approval#1")
        await desk.as_("lee").decide(handle.id, "approve")
        second = await desk.open_gate(handle.id, "approval#2")
        await desk.as_("clerk").decide(handle.id, "approve")
        result = await handle.result()
        trail = await desk.trail(handle.id)

    assert first["target"]["tool"] == "refunds__issue"
    assert second["target"]["tool"] == "close_ticket"
    outcomes = {seen["tool"]: seen for seen in result["seen"]}
    assert outcomes["close_ticket"]["outcome"] == "success"
    assert outcomes["refunds__issue"]["outcome"] == "failed"
    assert outcomes["refunds__issue"]["content"].startswith("FORBIDDEN: ")
    assert trail == [
        ("ask:support-lead", "answered", "lee"),
        ("ask:support-lead", "answered", "clerk"),
        ("refunds:issue", "refused", "clerk"),
    ]


async def test_a_declined_approval_reaches_the_model_as_a_denial_naming_who_declined(
    desk: Desk,
) -> None:
    async with desk.worker():
        handle = await desk.start("refund")
        await desk.open_gate(handle.id, "approval#1")
        await desk.as_("lee").decide(handle.id, "reject")
        result = await handle.result()
        trail = await desk.trail(handle.id)

    (seen,) = result["seen"]
    assert seen["tool"] == "refunds__issue" and seen["outcome"] == "denied"
    assert seen["content"] == (
        "The call to refunds__issue was declined by lee, who chose 'reject' at lockgate's gate "
        "for 'support-lead'."
    )
    assert trail == [("ask:support-lead", "answered", "lee")]  # the refund never ran


@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        ("refund with a long note", "PAYLOAD_TOO_LARGE: "),
        ("refund NaN", "VALIDATION_ERROR: The call's arguments are not JSON data"),
    ],
)
async def test_a_call_whose_arguments_no_approver_could_be_shown_is_declined_without_a_gate(
    desk: Desk, prompt: str, why: str
) -> None:
    async with desk.worker():
        handle = await desk.start(prompt)
        result = await handle.result()
        memo = await (await handle.describe()).memo()

    (seen,) = result["seen"]
    assert seen["tool"] == "refunds__issue" and seen["outcome"] == "denied"
    assert seen["content"].startswith(why)
    assert seen["content"].endswith("No approver was asked; the call did not run.")
    assert "lockgate_gate" not in memo  # no gate was ever opened: nothing for pending to show


async def test_an_approval_for_a_tool_without_a_gate_fails_the_run_naming_what_to_declare(
    desk: Desk,
) -> None:
    async with desk.worker():
        handle = await desk.start("archive")
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        history = await handle.fetch_history()

    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "NOT_FOUND"
    assert "archive_ticket" in cause.message
    assert "run_agent(gates={'archive_ticket': Ask(Approval, of='<role>')})" in cause.message
    scheduled = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert not any(name.endswith("__call_tool") for name in scheduled)  # never approved


@pytest.mark.parametrize("kind", list(AGENT_KINDS))
async def test_a_governed_tool_the_driver_may_not_call_is_a_tool_error_the_model_reads_and_audited(
    desk: Desk, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """lee is verified but does not hold ``tickets:read``: the model is told, and goes on."""
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    async with desk.worker():
        handle = await desk.start("read", as_="lee", agent=AGENT_KINDS[kind])
        result = await handle.result()
        trail = await desk.trail(handle.id)

    (seen,) = result["seen"]
    assert seen["tool"] == "tickets__read" and seen["outcome"] == "failed"
    assert seen["content"].startswith("FORBIDDEN: ") and "tickets:read" in seen["content"]
    assert trail == [("tickets:read", "refused", "lee")]
    assert any(
        facts.get("tool") == "tickets:read"
        and facts.get("outcome") == "refused"
        and facts.get("actor", {}).get("actor") == "lee"
        for facts in audited(caplog)
    )


async def test_arguments_lockgate_refuses_as_invalid_come_back_as_a_retry_the_model_may_correct(
    desk: Desk,
) -> None:
    async with desk.worker():
        handle = await desk.start("read badly")
        result = await handle.result()

    (seen,) = result["seen"]
    assert seen["tool"] == "tickets__read" and seen["outcome"] == "retried"
    assert "VALIDATION_ERROR: " in seen["content"]


async def test_a_worker_whose_client_lacks_pydantic_ais_plugin_fails_the_run_with_the_fix(
    desk: Desk, temporal_client: Client
) -> None:
    """PydanticAIPlugin given to the Worker only: its converter is not the client's, and a run
    would wait for ever at its second model request."""
    async with Worker(
        temporal_client,
        task_queue=desk.task_queue,
        workflows=[SupportAgentWorkflow],
        plugins=[PydanticAIPlugin(), lockgate_plugin(desk.people)],
    ):
        handle = await GraphClient(temporal_client, desk.task_queue).start_workflow(
            SupportAgentWorkflow.run, "read", id=f"pydantic-agent-{uuid4().hex[:8]}"
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()

    cause = failed.value.cause
    assert isinstance(cause, ApplicationError)
    assert "Client.connect(..., plugins=[PydanticAIPlugin()])" in cause.message


def test_the_adapter_without_pydantic_ai_fails_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)  # `import pydantic_ai` now fails
    monkeypatch.delitem(sys.modules, "lockgate.adapters.pydantic_ai")

    with pytest.raises(ImportError, match=r"pip install 'lockgate\[pydantic-ai\]'"):
        importlib.import_module("lockgate.adapters.pydantic_ai")
