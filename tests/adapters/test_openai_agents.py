"""An OpenAI Agents SDK agent on Temporal's plugin, with lockgate's gates answering its tool
approvals and lockgate's tools as its function tools: on the real dev server, with a
deterministic test model (no network, no key)."""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest

pytest.importorskip("agents", reason="the OpenAI Agents SDK is lockgate[openai-agents]'s")
pytest.importorskip(
    "temporalio.openai_agents",
    reason="Temporal's OpenAI Agents plugin is lockgate[openai-agents]'s",
)

from agents import ModelResponse, Usage
from openai.types.responses import ResponseFunctionToolCall
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import ResponseBuilders, TestModel, TestModelProvider
from temporalio.worker import Replayer, Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.adapters.openai_agents import MAX_SUBJECT_BYTES, governed_tool, governed_tools
from lockgate.encryption import PayloadKeys
from lockgate.encryption._codec import ENCRYPTED_ENCODING
from lockgate.testing import Identities
from lockgate.tools._tool import definition_of
from lockgate.workflows._search_attributes import LOCKGATE_AWAITING, LOCKGATE_STATE
from tests.helpers.graphs import eventually
from tests.helpers.openai_agents_workflows import (
    AGENT_TOOLS,
    AgentRequest,
    SupportAgentWorkflow,
)
from tests.helpers.own_workflow_support import open_gate_of
from tests.helpers.own_workflows import issue_refund, read_ticket
from tests.helpers.support import audit_facts, failed_workflow_tasks

pytestmark = pytest.mark.timeout(120)


def support_people() -> Identities:
    """ada asks (and leads herself); lee and mo lead and may refund and close; clerk holds
    nothing the agent's tools need."""
    return Identities(
        {
            "ada": {"roles": ["support-lead"], "scopes": ["tickets:read", "refunds:issue"]},
            "lee": {
                "roles": ["support-lead"],
                "scopes": ["tickets:read", "refunds:issue", "tickets:close"],
            },
            "mo": {
                "roles": ["support-lead"],
                "scopes": ["tickets:read", "refunds:issue", "tickets:close"],
            },
            "clerk": {},
        }
    )


class ScriptedModel(TestModel):
    """The test model: answers from a script, and keeps what it was given each turn."""

    def __init__(self, responses: list[ModelResponse]) -> None:
        script = iter(responses)
        super().__init__(lambda: next(script))
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        return await super().get_response(system_instructions, input, *args, **kwargs)


def call(tool: str, arguments: str, call_id: str) -> ModelResponse:
    return ModelResponse(
        output=[
            ResponseFunctionToolCall(
                arguments=arguments,
                call_id=call_id,
                name=tool,
                type="function_call",
                id=f"item-{call_id}",
                status="completed",
            )
        ],
        usage=Usage(),
        response_id=None,
    )


def agents_plugin(model: ScriptedModel) -> OpenAIAgentsPlugin:
    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=TestModelProvider(model),
    )


def lockgate_plugin(people: Identities) -> LockgatePlugin:
    return LockgatePlugin(tools=AGENT_TOOLS, directory=people.directory, secret=people.secret)


@contextlib.asynccontextmanager
async def agent_worker(
    temporal_client: Client, task_queue: str, people: Identities, model: ScriptedModel
) -> AsyncIterator[Client]:
    """A worker with both plugins. OpenAIAgentsPlugin rides on the client (its payload converter
    is a client's setting); the worker takes it from there, and LockgatePlugin itself."""
    config = temporal_client.config()
    config["plugins"] = [*config.get("plugins", []), agents_plugin(model)]
    client = Client(**config)
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[SupportAgentWorkflow],
        plugins=[lockgate_plugin(people)],
    ):
        yield client


async def start_agent(
    client: Client, task_queue: str, people: Identities, as_: str, request: AgentRequest
) -> WorkflowHandle[Any, Any]:
    return await GraphClient(client, task_queue, people.signer(as_)).start_workflow(
        SupportAgentWorkflow.run, request, id=f"agent-{uuid4().hex[:8]}"
    )


REFUND_SCRIPT = [
    call("tickets__read", '{"ticket": 42}', "c1"),
    call("refunds__issue", '{"ticket": 42, "amount": 120}', "c2"),
    call("tickets__close", '{"ticket": 42}', "c3"),
    ResponseBuilders.output_message("Refunded 120 and closed ticket 42."),
]


async def test_an_agents_tool_approval_is_a_gate_only_a_verified_lead_who_is_no_maker_answers(
    temporal_client: Client, task_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    people = support_people()
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    model = ScriptedModel(list(REFUND_SCRIPT))

    async with agent_worker(temporal_client, task_queue, people, model) as client:

        def as_(who: str | None) -> GraphClient:
            return GraphClient(client, task_queue, people.signer(who) if who else None)

        handle = await start_agent(
            client, task_queue, people, "ada", AgentRequest("Refund ticket 42 and close it.")
        )
        run_id = handle.id
        opened = await open_gate_of(client, task_queue, run_id, "approval#1")
        pending = await eventually(
            lambda: as_("lee").pending(of="support-lead"),
            lambda rows: any(row["run_id"] == run_id for row in rows),
            what="the gate in pending",
        )
        unsigned = await as_(None).decide(run_id, "approve")
        requester = await as_("ada").decide(run_id, "approve")
        approved = await as_("lee").decide(run_id, "approve")
        await open_gate_of(client, task_queue, run_id, "approval#2")
        maker = await as_("lee").decide(run_id, "approve")
        closed = await as_("mo").decide(run_id, "approve")
        result = await handle.result()
        shown = await as_(None).show(run_id)
        description = await handle.describe()
        attributes = description.typed_search_attributes
        history = await handle.fetch_history()
        failed = await failed_workflow_tasks(handle)
    replayed = await Replayer(
        workflows=[SupportAgentWorkflow],
        plugins=[agents_plugin(ScriptedModel([])), lockgate_plugin(people)],
    ).replay_workflow(history, raise_on_replay_failure=False)

    (row,) = [row for row in pending if row["run_id"] == run_id]
    assert row["requester"] == "ada"
    assert row["target"] == {
        "agent": "support",
        "tool": "refunds__issue",
        "arguments": {"ticket": 42, "amount": 120},
    }
    assert [c["needs"] for c in row["choices"]] == [["refunds:issue"], []]
    assert opened["role"] == "support-lead"
    assert unsigned["error"]["code"] == "UNVERIFIED_APPROVER"
    assert requester["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert approved["ok"] is True
    assert maker["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert closed["ok"] is True
    assert result["final"] == "Refunded 120 and closed ticket 42."
    assert result["outputs"] == [
        '{"ticket": 42, "customer": "c-7", "paid": 250}',
        '{"refunded": 120, "ticket": 42}',
        '{"closed": 42}',
    ]
    trail = [(r["operation"], r["outcome"], r["by"]["actor"]) for r in shown["trail"]]
    assert trail == [
        ("tickets:read", "ran", "ada"),
        ("ask:support-lead", "answered", "lee"),
        ("refunds:issue", "ran", "lee"),
        ("ask:support-lead", "answered", "mo"),
        ("tickets:close", "ran", "mo"),
    ]
    # Its search attributes are written as a gate opens, and neither at an answer nor as it
    # ends: pending and list believe the memo, and ExecutionStatus says it closed.
    assert description.status == WorkflowExecutionStatus.COMPLETED
    assert str(attributes.get(LOCKGATE_STATE)) == "waiting"
    assert attributes.get(LOCKGATE_AWAITING) == "support-lead"
    assert replayed.replay_failure is None
    assert failed == []
    assert len(model.inputs) == 4  # each model turn once: a gate's wait calls no model again
    refusals = [
        facts
        for facts in (audit_facts(r) for r in caplog.records if "lockgate_audit" in r.__dict__)
        if facts.get("event") == "gate.decide" and facts["outcome"] == "refused"
    ]
    assert len(refusals) == 3


async def test_a_governed_tool_the_driver_lacks_the_scope_for_is_refused_to_the_model_and_audited(
    temporal_client: Client, task_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    people = support_people()
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    model = ScriptedModel(
        [
            call("tickets__read", '{"ticket": 42}', "c1"),
            ResponseBuilders.output_message("I may not read ticket 42."),
        ]
    )
    async with agent_worker(temporal_client, task_queue, people, model) as client:
        handle = await start_agent(
            client, task_queue, people, "clerk", AgentRequest("Refund ticket 42.")
        )
        result = await handle.result()
        shown = await GraphClient(client, task_queue).show(handle.id)
        failed = await failed_workflow_tasks(handle)

    (refused,) = result["outputs"]
    assert refused.startswith("FORBIDDEN: ") and "tickets:read" in refused
    told = [item for item in model.inputs[1] if item.get("type") == "function_call_output"]
    assert [item["output"] for item in told] == [refused]  # what the model read next turn
    assert result["final"] == "I may not read ticket 42."  # the run went on
    (row,) = shown["trail"]
    assert (row["operation"], row["outcome"], row["by"]["actor"], row["code"]) == (
        "tickets:read",
        "refused",
        "clerk",
        "FORBIDDEN",
    )
    assert any(
        facts.get("tool") == "tickets:read" and facts.get("outcome") == "refused"
        for facts in (audit_facts(r) for r in caplog.records if "lockgate_audit" in r.__dict__)
    )
    assert failed == []


async def test_arguments_that_are_no_json_object_come_back_to_the_model_as_a_validation_error(
    temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    model = ScriptedModel(
        [call("tickets__read", "[42]", "c1"), ResponseBuilders.output_message("Retrying.")]
    )
    async with agent_worker(temporal_client, task_queue, people, model) as client:
        handle = await start_agent(client, task_queue, people, "ada", AgentRequest("Read 42."))
        result = await handle.result()

    assert result["outputs"] == [
        "VALIDATION_ERROR: The arguments of 'tickets:read' are not a JSON object; nothing ran."
    ]
    assert result["final"] == "Retrying."


async def test_a_rejected_approval_runs_nothing_and_tells_the_model_who_declined(
    temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    model = ScriptedModel(
        [
            call("refunds__issue", '{"ticket": 42, "amount": 120}', "c1"),
            ResponseBuilders.output_message("The refund was declined."),
        ]
    )
    async with agent_worker(temporal_client, task_queue, people, model) as client:
        handle = await start_agent(
            client, task_queue, people, "ada", AgentRequest("Refund ticket 42.")
        )
        await open_gate_of(client, task_queue, handle.id, "approval#1")
        declined = await GraphClient(client, task_queue, people.signer("lee")).decide(
            handle.id, "reject"
        )
        result = await handle.result()
        shown = await GraphClient(client, task_queue).show(handle.id)

    assert declined["ok"] is True
    assert result["outputs"] == ["Not approved: lee chose 'reject'; the call did not run."]
    assert result["final"] == "The refund was declined."
    assert [(r["operation"], r["outcome"]) for r in shown["trail"]] == [
        ("ask:support-lead", "answered")
    ]  # refunds:issue never ran


async def test_a_tool_needing_approval_without_a_gate_fails_the_run_naming_what_to_declare(
    temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    model = ScriptedModel([])
    async with agent_worker(temporal_client, task_queue, people, model) as client:
        handle = await start_agent(
            client, task_queue, people, "ada", AgentRequest("Refund ticket 42.", gated=False)
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()

    message = str(failed.value.cause)
    assert "Tool 'refunds__issue' of agent 'support' needs approval" in message
    assert "gates={'refunds__issue': Ask(Approval, of='<role>')}" in message
    assert model.inputs == []  # nothing was asked of the model, nothing approved


async def test_an_agent_on_a_worker_whose_client_lacks_the_agents_plugin_fails_saying_so(
    temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    model = ScriptedModel([ResponseBuilders.output_message("never")])
    async with Worker(
        temporal_client,
        task_queue=task_queue,
        workflows=[SupportAgentWorkflow],
        plugins=[agents_plugin(model), lockgate_plugin(people)],
    ):
        handle = await start_agent(
            temporal_client, task_queue, people, "ada", AgentRequest("Refund ticket 42.")
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()

    assert "Client.connect(..., plugins=[OpenAIAgentsPlugin()])" in str(failed.value.cause)
    assert model.inputs == []


def test_governed_tools_carry_the_lockgate_tools_name_for_models_and_its_schema() -> None:
    read, issue = governed_tools(read_ticket, issue_refund)
    gated = governed_tool(issue_refund, needs_approval=True)

    assert (read.name, issue.name) == ("tickets__read", "refunds__issue")
    assert issue.params_json_schema == definition_of(issue_refund).input_schema
    assert issue.description == "Refund a customer"
    assert (issue.needs_approval, gated.needs_approval) == (False, True)


def test_the_adapter_without_its_extra_fails_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "lockgate.adapters.openai_agents")
    monkeypatch.setitem(sys.modules, "agents", None)  # as if openai-agents were not installed

    with pytest.raises(ImportError, match=r"pip install 'lockgate\[openai-agents\]'"):
        importlib.import_module("lockgate.adapters.openai_agents")


async def test_approvals_asked_in_one_turn_are_decided_one_by_one_each_call_as_its_approver(
    temporal_client: Client, task_queue: str
) -> None:
    """Both calls wait on one model turn; the lead who approved the refund ran it, so is a
    maker by the time the closure's gate opens."""
    people = support_people()
    both = ModelResponse(
        output=[
            *call("refunds__issue", '{"ticket": 42, "amount": 120}', "c1").output,
            *call("tickets__close", '{"ticket": 42}', "c2").output,
        ],
        usage=Usage(),
        response_id=None,
    )
    model = ScriptedModel([both, ResponseBuilders.output_message("Done.")])
    async with agent_worker(temporal_client, task_queue, people, model) as client:

        def as_(who: str) -> GraphClient:
            return GraphClient(client, task_queue, people.signer(who))

        handle = await start_agent(client, task_queue, people, "ada", AgentRequest("Go."))
        first = await open_gate_of(client, task_queue, handle.id, "approval#1")
        assert (await as_("lee").decide(handle.id, "approve"))["ok"] is True
        second = await open_gate_of(client, task_queue, handle.id, "approval#2")
        maker = await as_("lee").decide(handle.id, "approve")
        assert (await as_("mo").decide(handle.id, "approve"))["ok"] is True
        result = await handle.result()
        shown = await GraphClient(client, task_queue).show(handle.id)

    assert first["target"]["tool"] == "refunds__issue"
    assert second["target"]["tool"] == "tickets__close"
    assert maker["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert [(r["operation"], r["by"]["actor"]) for r in shown["trail"]] == [
        ("ask:support-lead", "lee"),
        ("refunds:issue", "lee"),
        ("ask:support-lead", "mo"),
        ("tickets:close", "mo"),
    ]
    assert result["final"] == "Done." and len(model.inputs) == 2


async def test_a_call_too_large_to_show_an_approver_is_rejected_without_a_gate(
    temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    padding = "x" * (MAX_SUBJECT_BYTES + 1)
    model = ScriptedModel(
        [
            call("refunds__issue", f'{{"ticket": 42, "amount": 1, "note": "{padding}"}}', "c1"),
            ResponseBuilders.output_message("Too large."),
        ]
    )
    async with agent_worker(temporal_client, task_queue, people, model) as client:
        handle = await start_agent(client, task_queue, people, "ada", AgentRequest("Go."))
        result = await handle.result()
        memo = await (await handle.describe()).memo()

    (told,) = result["outputs"]
    assert told.startswith("PAYLOAD_TOO_LARGE: ") and "No approver was asked" in told
    assert "lockgate_gate" not in memo  # no gate was opened, nothing of the call written there
    assert result["final"] == "Too large."


async def test_both_plugins_on_one_client_with_lockgates_encryption_keep_every_payload_sealed(
    temporal_client: Client, task_queue: str
) -> None:
    """LockgatePlugin's codec goes on top of OpenAIAgentsPlugin's payload converter: the model's
    activities and lockgate's both run, and history holds ciphertext."""
    people = support_people()
    model = ScriptedModel(
        [call("tickets__read", '{"ticket": 42}', "c1"), ResponseBuilders.output_message("Read.")]
    )
    encrypting = LockgatePlugin(
        tools=AGENT_TOOLS,
        directory=people.directory,
        secret=people.secret,
        encryption=PayloadKeys.generate("k1"),
    )
    config = temporal_client.config()
    config["plugins"] = [*config.get("plugins", []), encrypting, agents_plugin(model)]
    client = Client(**config)
    async with Worker(client, task_queue=task_queue, workflows=[SupportAgentWorkflow]):
        handle = await start_agent(client, task_queue, people, "ada", AgentRequest("Read 42."))
        result = await handle.result()
    history = await temporal_client.get_workflow_handle(handle.id).fetch_history()

    assert result["outputs"] == ['{"ticket": 42, "customer": "c-7", "paid": 250}']
    scheduled = [
        event.activity_task_scheduled_event_attributes
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
    assert [s.activity_type.name for s in scheduled] == ["invoke_model_activity"] * 2
    assert all(
        payload.metadata["encoding"] == ENCRYPTED_ENCODING
        for s in scheduled
        for payload in s.input.payloads
    )
