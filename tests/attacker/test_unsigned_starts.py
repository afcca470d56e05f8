"""Starting gated work without a signer, or with someone else's proof.

- A start proof the client plugin sent, read from one run's history, is sent to a held start
  of the attacker's own (another id, the same arguments): refused, naming the run it is for.
- An unsigned start of a workflow of your own that asks a gate: the gate opened with nobody as
  its requester, and any verified lead approved the work (so a stranger with namespace access
  started approvable work as nobody). Now the run ends at that gate, saying why.
- A workflow of your own allowed to start unsigned: every verified lead may answer its gate,
  but the lead who made the work (issued the refund) may not close it.
- A service principal (a key in the Directory, like a person's) that lacks the gate's role
  cannot answer it.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError

from lockgate import GraphClient, LockgatePlugin
from lockgate.identity._proofs import Signer
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._own_start import OWN_START_UPDATE, SIGNED_START_MEMO
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN
from tests.helpers.graphs import eventually
from tests.helpers.own_workflow_support import open_gate_of
from tests.helpers.own_workflows import OWN_TOOLS, GoodwillWorkflow, RefundRequest, RefundWorkflow
from tests.helpers.support import update_refused

pytestmark = pytest.mark.timeout(90)


def people() -> Identities:
    return Identities(
        {
            "refund-service": {
                "roles": ["support-lead"],
                "scopes": ["tickets:read", "refunds:issue"],
            },
            "billing-service": {"scopes": ["tickets:read", "refunds:issue"]},
            "lee": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
            "mo": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
        }
    )


def shop_client(client: Client, signer: Signer | None, workflows: list[Any]) -> Client:
    # Imported here, so that each test records what it does on a lockgate without the plugin.
    from lockgate import LockgateClientPlugin

    return Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=client.data_converter,
        plugins=[LockgateClientPlugin(signer, workflows)],
    )


def worker_plugin(who: Identities, **options: Any) -> LockgatePlugin:
    return LockgatePlugin(tools=OWN_TOOLS, directory=who.directory, secret=who.secret, **options)


async def test_a_plugins_start_proof_replayed_on_another_held_start_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    shop = shop_client(temporal_client, who.signer("refund-service"), [RefundWorkflow])
    request = RefundRequest(ticket=42, amount=120)
    async with lockgate_worker(plugin=worker_plugin(who), workflows=[RefundWorkflow]):
        genuine = await shop.start_workflow(
            RefundWorkflow.run, request, id=f"refund-{uuid4().hex[:8]}", task_queue=task_queue
        )
        await open_gate_of(temporal_client, task_queue, genuine.id, "refund#1")
        accepted = next(
            event.workflow_execution_update_accepted_event_attributes.accepted_request
            for event in (await genuine.fetch_history()).events
            if event.HasField("workflow_execution_update_accepted_event_attributes")
        )
        assert accepted.input.name == OWN_START_UPDATE
        proof = temporal_client.data_converter.payload_converter.from_payload(
            accepted.input.args.payloads[0]
        )
        # The attacker's own held start, with the genuine run's arguments, under another id.
        forged = await temporal_client.start_workflow(
            RefundWorkflow.run,
            request,
            id=genuine.id + "-copy",
            task_queue=task_queue,
            memo={SIGNED_START_MEMO: True},
            start_delay=SIGNED_START_WITHIN,
        )
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await forged.execute_update(OWN_START_UPDATE, proof)
        await forged.cancel()
        ended = await forged.result()
        shown = await GraphClient(temporal_client, task_queue).show(forged.id)

    assert update_refused(refused.value)["code"] == "UNAUTHORIZED"
    assert "this call is on run" in update_refused(refused.value)["message"]
    assert ended["outcome"] == "refused"  # nothing ran as the service
    assert shown["requester"]["actor"] == "unverified:temporal"


async def test_an_unsigned_start_of_a_gated_workflow_of_your_own_opens_no_gate(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(plugin=worker_plugin(who), workflows=[GoodwillWorkflow]):
        # A plain start: no plugin, no signer.
        handle = await temporal_client.start_workflow(
            GoodwillWorkflow.run,
            RefundRequest(ticket=7, amount=5_000),
            id=f"goodwill-{uuid4().hex[:8]}",
            task_queue=task_queue,
        )

        async def where_it_is() -> str:
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                return "ended"
            shown = await GraphClient(temporal_client, task_queue).show(handle.id)
            return "at its gate" if shown.get("awaiting") else "running"

        reached = await eventually(where_it_is, lambda state: state != "running", what="a stop")
        answered: Any = None
        if reached == "at its gate":  # what an attacker wants: a lead approves work of nobody's
            lee = GraphClient(temporal_client, task_queue, who.signer("lee"))
            answered = await lee.decide(handle.id, "issue")
            await handle.terminate("the gate opened")
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()

    assert reached == "ended", f"the gate opened and lee's answer was {answered!r}"
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "UNAUTHORIZED"
    assert "started unsigned" in cause.message
    assert "unsigned_starts=['support:goodwill']" in cause.message


async def test_on_an_unsigned_workflow_allowed_so_the_maker_of_the_work_cannot_close_it(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()

    def as_(name: str | None) -> GraphClient:
        return GraphClient(temporal_client, task_queue, who.signer(name) if name else None)

    plugin = worker_plugin(who, unsigned_starts=[GoodwillWorkflow])
    async with lockgate_worker(plugin=plugin, workflows=[GoodwillWorkflow]):
        handle = await temporal_client.start_workflow(
            GoodwillWorkflow.run,
            RefundRequest(ticket=7, amount=50),
            id=f"goodwill-{uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        unsigned = await as_(None).decide(handle.id, "issue")
        approved = await as_("lee").decide(handle.id, "issue")  # nobody asked: any lead may
        await open_gate_of(temporal_client, task_queue, handle.id, "closure#2")
        by_the_maker = await as_("lee").decide(handle.id, "close")
        closed = await as_("mo").decide(handle.id, "close")
        result = await handle.result()

    assert unsigned["error"]["code"] == "UNVERIFIED_APPROVER"
    assert approved["ok"] is True
    assert by_the_maker["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert "drove work this gate reviews" in by_the_maker["error"]["message"]
    assert closed["ok"] is True
    assert result == {"outcome": "refunded", "approved_by": "lee", "closed_by": "mo"}


async def test_a_service_principal_without_the_gates_role_cannot_answer_it(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    shop = shop_client(temporal_client, who.signer("refund-service"), [RefundWorkflow])
    async with lockgate_worker(plugin=worker_plugin(who), workflows=[RefundWorkflow]):
        handle = await shop.start_workflow(
            RefundWorkflow.run,
            RefundRequest(ticket=42, amount=120),
            id=f"refund-{uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        billing = await GraphClient(
            temporal_client, task_queue, who.signer("billing-service")
        ).decide(handle.id, "issue")
        still = await eventually(
            lambda: GraphClient(temporal_client, task_queue).show(handle.id),
            lambda run: run.get("awaiting") is not None,
            what="the gate still open",
        )
        await handle.terminate("done")

    assert billing["error"]["code"] == "FORBIDDEN"
    assert "support-lead" in billing["error"]["message"]
    gate = still.get("awaiting")
    assert gate is not None and gate["gate"] == "refund#1"
