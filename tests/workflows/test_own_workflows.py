"""A workflow of the user's own asks a verified gate and calls governed tools: every rule of a
graph's gate holds for it, on the real dev server."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer
from typing_extensions import assert_type

from lockgate import GraphClient, LockgatePlugin
from lockgate.activities._activity_inputs import ToolActivityInput, tool_activity_name
from lockgate.clients._graph_client import starting_attributes
from lockgate.identity._bindings import start_binding
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._own_start import OWN_START_UPDATE, SIGNED_START_MEMO, start_arguments
from lockgate.workflows._search_attributes import LOCKGATE_AWAITING, LOCKGATE_GRAPH, LOCKGATE_STATE
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN
from tests.helpers.graphs import eventually
from tests.helpers.own_workflow_support import open_gate_of, support_people
from tests.helpers.own_workflows import (
    OWN_TOOLS,
    ContinuedLookup,
    GateThenContinue,
    LookupWorkflow,
    MisdeclaredGateWorkflow,
    RefundRequest,
    RefundWorkflow,
)
from tests.helpers.support import audit_facts, failed_workflow_tasks, update_refused

pytestmark = pytest.mark.timeout(90)


def plugin_for(people: Identities) -> LockgatePlugin:
    return LockgatePlugin(tools=OWN_TOOLS, directory=people.directory, secret=people.secret)


async def start_refund(
    client: Client, task_queue: str, people: Identities | None, as_: str | None = "ada"
) -> WorkflowHandle[Any, Any]:
    signer = people.signer(as_) if people is not None and as_ is not None else None
    return await GraphClient(client, task_queue, signer).start_workflow(
        RefundWorkflow.run, RefundRequest(ticket=42, amount=120), id=f"refund-{uuid4().hex[:8]}"
    )


async def test_a_refund_is_approved_issued_and_closed_by_the_rules_of_a_graphs_gate(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    people = support_people()
    caplog.set_level(logging.INFO, logger="lockgate.audit")

    def as_(who: str | None) -> GraphClient:
        return GraphClient(temporal_client, task_queue, people.signer(who) if who else None)

    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow]):
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
        description = await handle.describe()
        attributes = description.typed_search_attributes
        history = await handle.fetch_history()
    replayed = await Replayer(
        workflows=[RefundWorkflow], plugins=[plugin_for(people)]
    ).replay_workflow(history, raise_on_replay_failure=False)

    (row,) = [row for row in pending if row["run_id"] == run_id]
    assert row["graph"] == "support:refund" and row["requester"] == "ada"
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
    assert result == {
        "outcome": "refunded",
        "approved_by": "lee",
        "closed_by": "mo",
        "closure": "close",
    }
    trail = [(r["operation"], r["outcome"], r["by"]["actor"]) for r in shown["trail"]]
    assert trail == [
        ("tickets:read", "ran", "ada"),
        ("ask:support-lead", "answered", "lee"),
        ("refunds:issue", "ran", "lee"),
        ("ask:support-lead", "answered", "mo"),
    ]
    assert shown["requester"]["actor"] == "ada" and shown["requester"]["verified"] is True
    # Its search attributes are written as a gate opens (the second found them written), and
    # neither at an answer nor as it ends: pending and list believe the memo, and ExecutionStatus
    # says it closed.
    assert description.status == WorkflowExecutionStatus.COMPLETED
    assert str(attributes.get(LOCKGATE_STATE)) == "waiting"
    assert attributes.get(LOCKGATE_AWAITING) == "support-lead"
    upserts = [
        e
        for e in history.events
        if e.HasField("upsert_workflow_search_attributes_event_attributes")
    ]
    assert len(upserts) == 1
    assert replayed.replay_failure is None  # the handlers lockgate added replay alike
    decided = [
        audit_facts(r)
        for r in caplog.records
        if "lockgate_audit" in r.__dict__ and audit_facts(r).get("event") == "gate.decide"
    ]
    refusals = [facts for facts in decided if facts["outcome"] == "refused"]
    assert len(refusals) == 5  # each refusal audited once, before anything was written


async def test_a_tool_the_driver_may_not_call_is_refused_as_a_result_and_audited(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    people = support_people()
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow]):
        unsigned = await start_refund(temporal_client, task_queue, None)
        result = await unsigned.result()
        shown = await GraphClient(temporal_client, task_queue).show(unsigned.id)

    assert result["outcome"] == "refused" and result["code"] == "FORBIDDEN"
    assert "tickets:read" in result["why"]
    (row,) = shown["trail"]
    assert (row["operation"], row["outcome"], row["by"]["actor"]) == (
        "tickets:read",
        "refused",
        "unverified:temporal",
    )
    assert any(
        facts.get("tool") == "tickets:read" and facts.get("outcome") == "refused"
        for facts in (audit_facts(r) for r in caplog.records if "lockgate_audit" in r.__dict__)
    )


async def test_a_start_proof_names_its_run_execution_and_arguments_and_nothing_else(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The attacker reads a start proof from one run's history (its `lockgate.start` update)
    and sends it to a run of their own, under another id or as a new execution of the same id;
    a signer's proof naming other arguments is refused too. Each is refused before the run's
    code runs as anyone, and a run withdrawn then goes on unverified."""
    people = support_people()
    signed_start: dict[str, Any] = {
        "task_queue": task_queue,
        "memo": {SIGNED_START_MEMO: True},
        "start_delay": SIGNED_START_WITHIN,
    }
    request = RefundRequest(ticket=42, amount=120)
    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow]):
        genuine = await start_refund(temporal_client, task_queue, people)
        await open_gate_of(temporal_client, task_queue, genuine.id, "refund#1")
        accepted = next(
            event.workflow_execution_update_accepted_event_attributes.accepted_request
            for event in (await genuine.fetch_history()).events
            if event.HasField("workflow_execution_update_accepted_event_attributes")
        )
        assert accepted.meta.update_id and accepted.input.name == OWN_START_UPDATE
        proof = temporal_client.data_converter.payload_converter.from_payload(
            accepted.input.args.payloads[0]
        )
        await temporal_client.get_workflow_handle(genuine.id).terminate("read its proof")
        other_id = await temporal_client.start_workflow(
            RefundWorkflow.run, request, id=genuine.id + "-other-id", **signed_start
        )
        same_id = await temporal_client.start_workflow(
            RefundWorkflow.run, request, id=genuine.id, **signed_start
        )
        wrong_arguments = await temporal_client.start_workflow(
            RefundWorkflow.run, request, id=genuine.id + "-other-amount", **signed_start
        )
        execution = wrong_arguments.first_execution_run_id or ""
        other_amount = start_arguments(
            temporal_client.data_converter.payload_converter,
            [RefundRequest(ticket=42, amount=9_999)],
        )
        wrong_proof = people.signer("ada").sign(
            start_binding("support:refund", wrong_arguments.id, execution, {"args": other_amount})
        )
        refusals = []
        for handle, sent in ((other_id, proof), (same_id, proof), (wrong_arguments, wrong_proof)):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(OWN_START_UPDATE, sent)
            refusals.append(update_refused(refused.value))
            await handle.cancel()  # withdrawn, as GraphClient withdraws a refused start
        ended = [await handle.result() for handle in (other_id, same_id, wrong_arguments)]
        shown = await GraphClient(temporal_client, task_queue).show(same_id.id)

    assert [refusal["code"] for refusal in refusals] == ["UNAUTHORIZED"] * 3
    assert "this call is on run" in refusals[0]["message"]
    assert "another execution of" in refusals[1]["message"]
    assert "with other arguments than the ones it was started with" in refusals[2]["message"]
    assert [run["outcome"] for run in ended] == ["refused"] * 3  # tickets:read needs a scope
    assert shown["requester"]["actor"] == "unverified:temporal"
    assert shown["trail"][0]["operation"] == "start"
    assert "withdrew it" in shown["trail"][0]["why"]


async def test_a_signed_run_that_continues_as_new_goes_on_unverified_without_waiting(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """lockgate carries no state of a workflow of your own across continue-as-new: its memo
    (marking it signed) goes along, but the new run was started by no one's proof. It neither
    waits five minutes for one nor believes the last run's: it goes on unverified."""
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[ContinuedLookup]):
        handle = await GraphClient(
            temporal_client, task_queue, people.signer("ada")
        ).start_workflow(ContinuedLookup.run, 42, id=f"continued-{uuid4().hex[:8]}")
        read = await handle.result()  # follows the continued run
        shown = await GraphClient(temporal_client, task_queue).show(handle.id)

    assert read == ["read", "FORBIDDEN"]  # ada held tickets:read; nobody after the handover
    assert shown["requester"]["actor"] == "unverified:temporal"


@workflow.defn(name="support:forged-refund", sandboxed=False)
class ForgedRefund:
    """A workflow of the user's own that schedules a lockgate tool itself, naming a lead."""

    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.execute_activity(
                tool_activity_name("refunds:issue"),
                ToolActivityInput(
                    arguments={"ticket": 1, "amount": 10_000},
                    actor={
                        "actor": "lee",
                        "verified": True,
                        "channel": "cli",
                        "principal": "lee",
                        "authorization": "x",
                    },
                    confirmed=True,
                ),
                start_to_close_timeout=timedelta(seconds=10),
                result_type=dict,
            )
        except Exception as error:
            return f"{type(error.__cause__).__name__}: {getattr(error.__cause__, 'type', '')}"
        return "ran"


async def test_a_workflow_naming_a_driver_itself_gets_no_seal_and_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow, ForgedRefund]):
        outcome = await temporal_client.execute_workflow(
            ForgedRefund.run, id=f"forged-{uuid4().hex[:8]}", task_queue=task_queue
        )

    assert outcome == "ApplicationError: UNAUTHORIZED"


async def test_a_finished_run_that_returned_no_dict_still_shows_its_trail(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[LookupWorkflow]):
        handle = await GraphClient(
            temporal_client, task_queue, people.signer("ada")
        ).start_workflow(LookupWorkflow.run, 42, id=f"lookup-{uuid4().hex[:8]}")
        # Typed like Client.start_workflow: `make typecheck` checks this line.
        assert_type(handle, WorkflowHandle[LookupWorkflow, str])
        result = await handle.result()
        shown = await GraphClient(temporal_client, task_queue).show(handle.id)

    assert result == "ticket 42: c-7"
    assert [(r["operation"], r["outcome"]) for r in shown["trail"]] == [("tickets:read", "ran")]


async def test_a_gate_lockgate_cannot_open_fails_the_run_with_its_sentence_instead_of_wedging(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[MisdeclaredGateWorkflow]):
        handle = await GraphClient(
            temporal_client, task_queue, people.signer("ada")
        ).start_workflow(MisdeclaredGateWorkflow.run, id=f"misdeclared-{uuid4().hex[:8]}")
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()

    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "GraphDeclarationError"
    assert "not an enum" in cause.message
    assert await failed_workflow_tasks(handle) == []


async def test_a_client_start_names_the_run_a_lockgate_run_so_it_writes_nothing_as_it_opens(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The start carries the search attributes the run would write first: its opening then
    upserts none (a visibility write), and the first it writes is its gate's."""
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow]):
        handle = await start_refund(temporal_client, task_queue, people)
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        events = list((await handle.fetch_history()).events)

    converter = temporal_client.data_converter.payload_converter
    started = events[0].workflow_execution_started_event_attributes.search_attributes
    assert {
        name: converter.from_payload(payload) for name, payload in started.indexed_fields.items()
    } == {LOCKGATE_GRAPH.name: "support:refund", LOCKGATE_STATE.name: "running"}
    first_upsert = next(
        event.upsert_workflow_search_attributes_event_attributes.search_attributes
        for event in events
        if event.HasField("upsert_workflow_search_attributes_event_attributes")
    )
    state = first_upsert.indexed_fields[LOCKGATE_STATE.name]
    assert converter.from_payload(state) == "waiting"
    assert set(first_upsert.indexed_fields) == {LOCKGATE_STATE.name, LOCKGATE_AWAITING.name}


def test_a_starters_own_search_attributes_are_kept_beside_the_runs() -> None:
    mine = SearchAttributeKey.for_keyword("CustomerTier")
    given = TypedSearchAttributes(
        [SearchAttributePair(mine, "gold"), SearchAttributePair(LOCKGATE_STATE, "queued")]
    )

    typed = starting_attributes("support:refund", given)
    untyped = {"CustomerTier": ["gold"]}

    assert {pair.key.name: pair.value for pair in typed.search_attributes} == {
        "CustomerTier": "gold",
        LOCKGATE_STATE.name: "queued",  # the caller's; the run writes its own when it opens
        LOCKGATE_GRAPH.name: "support:refund",
    }
    assert starting_attributes("support:refund", untyped) is untyped


async def test_a_gate_leaves_the_memo_before_the_run_waits_on_anything_else_and_not_at_its_end(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # The first gate's answer sends the run on to a tool's activity: the gate leaves the memo in
    # the workflow task that schedules it. The second's ends the run: nothing is written for it.
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow]):
        handle = await start_refund(temporal_client, task_queue, people)
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        lee = GraphClient(temporal_client, task_queue, people.signer("lee"))
        await lee.decide(handle.id, "issue")
        await open_gate_of(temporal_client, task_queue, handle.id, "closure#2")
        await GraphClient(temporal_client, task_queue, people.signer("mo")).decide(
            handle.id, "close"
        )
        await handle.result()
        events = list((await handle.fetch_history()).events)
        # Visibility follows the run's history a moment later.
        pending = await eventually(lee.pending, lambda rows: rows == [], what="no gate pending")

    kinds = [event.event_type for event in events]
    accepted = [
        i
        for i, kind in enumerate(kinds)
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    first_answer = kinds[accepted[1] : accepted[2]]  # [0] is the start proof
    memo = EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    closed, issued = first_answer.index(memo), first_answer.index(scheduled)
    # Written in the same workflow task, so the server stores them together.
    between = first_answer[min(closed, issued) : max(closed, issued)]
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED not in between
    last_answer = kinds[accepted[2] :]
    assert memo not in last_answer
    assert EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES not in last_answer
    assert pending == []


async def test_a_run_that_continues_as_new_after_a_gate_starts_its_next_run_without_it(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[GateThenContinue]):
        handle = await GraphClient(
            temporal_client, task_queue, people.signer("ada")
        ).start_workflow(GateThenContinue.run, 42, id=f"continue-{uuid4().hex[:8]}")
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        lee = GraphClient(temporal_client, task_queue, people.signer("lee"))
        await lee.decide(handle.id, "issue")
        latest = temporal_client.get_workflow_handle(handle.id)
        result = await latest.result()
        memo = await (await latest.describe()).memo()
        # Visibility follows the run's history a moment later.
        pending = await eventually(lee.pending, lambda rows: rows == [], what="no gate pending")

    assert result == "issue"
    assert memo.get("lockgate_gate") is None
    assert pending == []


def _local_activities(events: list[Any]) -> list[str]:
    """The local activities a history records, in order (their markers' activity types)."""
    kinds = []
    for event in events:
        if not event.HasField("marker_recorded_event_attributes"):
            continue
        details = event.marker_recorded_event_attributes.details["data"].payloads[0]
        kinds.append(json.loads(details.data)["activity_type"])
    return kinds


async def test_a_signed_start_records_what_the_run_opens_with_and_needs_no_start_check(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # The start's own record (its seal, the tools the run runs local, its protocol) is all the
    # run opens with: one local activity, not two. A run started unsigned has no start to
    # record it, and opens with its start check as before.
    people = support_people()
    async with lockgate_worker(plugin=plugin_for(people), workflows=[LookupWorkflow]):
        signed = await GraphClient(
            temporal_client, task_queue, people.signer("ada")
        ).start_workflow(LookupWorkflow.run, 42, id=f"lookup-{uuid4().hex[:8]}")
        unsigned = await GraphClient(temporal_client, task_queue).start_workflow(
            LookupWorkflow.run, 42, id=f"lookup-{uuid4().hex[:8]}"
        )
        results = [await signed.result(), await unsigned.result()]
        shown = await GraphClient(temporal_client, task_queue).show(signed.id)
        signed_events = list((await signed.fetch_history()).events)
        unsigned_events = list((await unsigned.fetch_history()).events)

    assert results == ["ticket 42: c-7", "ticket 42: FORBIDDEN"]  # unverified: no scope
    assert shown["requester"]["principal"] == "ada" and shown["requester"]["verified"] is True
    # tickets:read is local: the run knew so from its start's record.
    assert _local_activities(signed_events) == [
        "lockgate.record_acceptance",
        "lockgate.tool:tickets:read",
    ]
    assert _local_activities(unsigned_events) == [
        "lockgate.open_workflow_start",
        "lockgate.tool:tickets:read",
    ]
