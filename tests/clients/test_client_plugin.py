"""A shop's own starter code, unchanged (`client.start_workflow(ShopRefund.run, ...)`), starts
gated work signed as the service's identity once its client has LockgateClientPlugin, on the
real dev server."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError

from lockgate import GraphClient, LockgateClientPlugin, LockgatePlugin
from lockgate.errors import StartRefusedError
from lockgate.identity._proofs import Signer
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.own_workflow_support import open_gate_of
from tests.helpers.own_workflows import (
    OWN_TOOLS,
    LookupWorkflow,
    Refund,
    RefundRequest,
    RefundWorkflow,
)
from tests.helpers.support import update_refused

pytestmark = pytest.mark.timeout(90)


def shop_people() -> Identities:
    """refund-service is the shop's service: a Directory principal like a person, and a support
    lead besides (so that only four eyes keep it from approving its own refunds); lee and mo
    lead."""
    return Identities(
        {
            "refund-service": {
                "roles": ["support-lead"],
                "scopes": ["tickets:read", "refunds:issue"],
            },
            "lee": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
            "mo": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
        }
    )


def shop_client(
    client: Client, signer: Signer | None, workflows: list[Any] | None = None
) -> Client:
    """The shop's client, as `Client.connect(..., plugins=[LockgateClientPlugin(...)])` makes it."""
    plugin = LockgateClientPlugin(signer, workflows if workflows is not None else [RefundWorkflow])
    return Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=client.data_converter,
        plugins=[plugin],
    )


def plugin_for(people: Identities) -> LockgatePlugin:
    return LockgatePlugin(tools=OWN_TOOLS, directory=people.directory, secret=people.secret)


async def test_the_shops_own_start_workflow_call_starts_gated_work_as_its_service(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = shop_people()
    shop = shop_client(temporal_client, people.signer("refund-service"))

    def as_(who: str) -> GraphClient:
        return GraphClient(temporal_client, task_queue, people.signer(who))

    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow]):
        # The shop's starter, as it was before lockgate: nothing lockgate's in the call.
        handle = await shop.start_workflow(
            RefundWorkflow.run,
            RefundRequest(ticket=42, amount=120),
            id=f"refund-{uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        by_its_requester = await as_("refund-service").decide(handle.id, "issue")
        approved = await as_("lee").decide(handle.id, "issue")
        await open_gate_of(temporal_client, task_queue, handle.id, "closure#2")
        closed = await as_("mo").decide(handle.id, "close")
        result = await handle.result()
        shown = await GraphClient(temporal_client, task_queue).show(handle.id)

    assert by_its_requester["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert approved["ok"] is True and closed["ok"] is True
    assert result["outcome"] == "refunded" and result["approved_by"] == "lee"
    assert shown["requester"]["actor"] == "refund-service"
    assert shown["requester"]["verified"] is True
    trail = [(row["operation"], row["by"]["actor"]) for row in shown["trail"]]
    assert trail[0] == ("tickets:read", "refund-service")


async def test_execute_workflow_runs_as_the_service_and_other_types_pass_through_unsigned(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The service holds tickets:read; an unsigned caller does not (its read is FORBIDDEN)."""
    people = shop_people()
    governed = shop_client(temporal_client, people.signer("refund-service"), [LookupWorkflow])
    ungoverned = shop_client(temporal_client, people.signer("refund-service"), [RefundWorkflow])
    async with lockgate_worker(plugin=plugin_for(people), workflows=[LookupWorkflow]):
        signed = await governed.execute_workflow(
            LookupWorkflow.run, 42, id=f"lookup-{uuid4().hex[:8]}", task_queue=task_queue
        )
        untouched = await ungoverned.execute_workflow(
            LookupWorkflow.run, 42, id=f"lookup-{uuid4().hex[:8]}", task_queue=task_queue
        )

    assert signed == "ticket 42: c-7"
    assert untouched == "ticket 42: FORBIDDEN"


async def test_the_shops_own_execute_update_answers_a_gate_signed_as_the_service(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lee's approval desk sends a bare option with the SDK's own call; the plugin signs it for
    the gate open now, from the one description it reads to know the run is governed. The
    requester's service, sending the same, is refused by four eyes."""
    people = shop_people()
    requester = shop_client(temporal_client, people.signer("refund-service"))
    desk = shop_client(temporal_client, people.signer("lee"))
    described: list[str] = []
    describe = WorkflowHandle.describe

    async def counted_describe(self: WorkflowHandle[Any, Any], *args: Any, **kwargs: Any) -> Any:
        described.append(self.id)
        return await describe(self, *args, **kwargs)

    async with lockgate_worker(plugin=plugin_for(people), workflows=[RefundWorkflow]):
        handle = await requester.start_workflow(
            RefundWorkflow.run,
            RefundRequest(ticket=42, amount=120),
            id=f"refund-{uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await requester.get_workflow_handle(handle.id).execute_update("decide", "issue")
        monkeypatch.setattr(WorkflowHandle, "describe", counted_describe)
        answered = await desk.get_workflow_handle(handle.id).execute_update(
            "decide", Refund.ISSUE, result_type=dict
        )
        monkeypatch.undo()
        await open_gate_of(temporal_client, task_queue, handle.id, "closure#2")
        shown = await GraphClient(temporal_client, task_queue).show(handle.id)
        with pytest.raises(WorkflowUpdateFailedError) as not_an_option:
            await desk.get_workflow_handle(handle.id).execute_update("decide", "maybe")
        await handle.terminate("seen enough")

    assert update_refused(refused.value)["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert answered["ok"] is True
    assert described == [handle.id]
    rows = [(row["operation"], row["outcome"], row["by"]["actor"]) for row in shown["trail"]]
    assert ("ask:support-lead", "answered", "lee") in rows
    assert update_refused(not_an_option.value)["code"] == "INVALID_DECISION"


async def test_graph_client_on_a_client_with_the_plugin_signs_as_its_own_signer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = shop_people()
    shop = shop_client(temporal_client, people.signer("refund-service"), [LookupWorkflow])
    async with lockgate_worker(plugin=plugin_for(people), workflows=[LookupWorkflow]):
        handle = await GraphClient(shop, task_queue, people.signer("lee")).start_workflow(
            LookupWorkflow.run, 42, id=f"lookup-{uuid4().hex[:8]}"
        )
        read = await handle.result()
        shown = await GraphClient(temporal_client, task_queue).show(handle.id)

    assert read == "ticket 42: FORBIDDEN"  # lee may not read tickets; the service may
    assert shown["requester"]["actor"] == "lee"


async def test_a_plugin_without_a_signer_refuses_a_governed_start_before_anything_starts(
    temporal_client: Client, task_queue: str
) -> None:
    """No worker is needed: the client knows, so it says so at once."""
    shop = shop_client(temporal_client, None)
    run_id = f"refund-{uuid4().hex[:8]}"
    with pytest.raises(StartRefusedError) as refused:
        await shop.start_workflow(
            RefundWorkflow.run, RefundRequest(ticket=1, amount=1), id=run_id, task_queue=task_queue
        )
    assert refused.value.code == "UNAUTHORIZED"
    assert "starts only signed" in refused.value.message
    assert "support:refund" in refused.value.message
    with pytest.raises(RPCError):
        await temporal_client.get_workflow_handle(run_id).describe()


async def test_a_governed_start_with_a_start_delay_is_refused_with_a_sentence(
    temporal_client: Client, task_queue: str
) -> None:
    from datetime import timedelta

    shop = shop_client(temporal_client, shop_people().signer("refund-service"))
    with pytest.raises(ValueError, match="takes no start_delay"):
        await shop.start_workflow(
            RefundWorkflow.run,
            RefundRequest(ticket=1, amount=1),
            id=f"refund-{uuid4().hex[:8]}",
            task_queue=task_queue,
            start_delay=timedelta(seconds=5),
        )


def test_the_plugin_refuses_what_is_not_a_workflow_naming_the_setting() -> None:
    with pytest.raises(TypeError, match=r"LockgateClientPlugin.*workflows"):
        LockgateClientPlugin(None, [42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="signer"):
        LockgateClientPlugin("refund-service", [RefundWorkflow])  # type: ignore[arg-type]
