"""History is evidence, not trust: what a rogue worker on lockgate's task queue writes into a run's
history is never believed by the deployment's own workers.

The attacker holds namespace access and no key of anyone's or worker secret. Their worker takes
lockgate's tasks — a build they make the deployment's current version, or a plain poller that
wins tasks — and accepts what lockgate would refuse: an answer, start, resume, cancel or call
signed with their own key under a real person's name (their build's Directory says so), a state
carried on at continue-as-new, a tool's result. When a real worker next runs the run it replays
that history; it stops there — its task fails with a sentence naming the claim, it writes the
audit record ``history.refused`` — and runs nothing of the deployment's on it.

Each test plays one path; the rogue build's look-alike tools record in ``ROGUE_SHIPPED``, the
deployment's own ``ship:send`` in ``SHIPPED``.
"""

from __future__ import annotations

import asyncio
import urllib.request
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowQueryFailedError, WorkflowUpdateStage
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.service import RPCError
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin, ToolClient
from lockgate.activities._activity_inputs import tool_activity_name
from lockgate.contracts import RunView
from lockgate.devserver import free_port
from lockgate.identity._actors import Actor
from lockgate.identity._bindings import cancel_binding, resume_binding
from lockgate.identity._directory import Directory
from lockgate.identity._keys import generate_private_key, public_key_text
from lockgate.testing import Identities
from lockgate.tools._audit import AuditLogger
from lockgate.workflows._carry import RunState
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.graphs import eventually
from tests.helpers.rogue_workers import (
    ORDER,
    ROGUE_SHIPPED,
    SHIPPED,
    ForgeCarried,
    OwnShipOrder,
    ShipDirect,
    ShipOrder,
    current_build,
    deployment_people,
    deployment_plugin,
    pack,
    plain_activity,
    rogue_people,
    rogue_plugin,
    send,
)
from tests.helpers.support import failed_workflow_tasks


class Records:
    """The deployment's audit records, as a sink receives them."""

    def __init__(self) -> None:
        self.records: list[Mapping[str, Any]] = []

    def write(self, record: Mapping[str, Any], *, accepted: bool) -> None:
        self.records.append(record)

    def refused_history(self) -> list[Mapping[str, Any]]:
        return [record for record in self.records if record["event"] == "history.refused"]


@pytest.fixture(autouse=True)
def nothing_shipped_yet() -> None:
    SHIPPED.clear()
    ROGUE_SHIPPED.clear()


@pytest.fixture
async def rogue_client(temporal_client: Client) -> Client:
    """The attacker's own connection to the namespace (their workers are another process)."""
    return await Client.connect(
        temporal_client.service_client.config.target_host, namespace=temporal_client.namespace
    )


@asynccontextmanager
async def worker(
    client: Client, task_queue: str, plugin: LockgatePlugin, **options: Any
) -> AsyncIterator[Worker]:
    """A worker that keeps no run cached: every task it takes replays the run's history."""
    async with Worker(
        client, task_queue=task_queue, plugins=[plugin], max_cached_workflows=0, **options
    ) as running:
        yield running


async def refused_by_the_deployment(client: Client, run_id: str, claim: str) -> str:
    """Waits until a workflow task of the run fails because its history holds ``claim`` with no
    seal of the deployment's: the failure's sentence."""
    handle = client.get_workflow_handle(run_id)
    failed = await eventually(
        lambda: failed_workflow_tasks(handle),
        lambda events: any(
            claim in event.workflow_task_failed_event_attributes.failure.message for event in events
        ),
        seconds=60,
        what=f"a workflow task of {run_id} refused for {claim}",
    )
    return next(
        message
        for event in failed
        if claim in (message := event.workflow_task_failed_event_attributes.failure.message)
    )


def shown_to_the_deployment(client: Client, run_id: str) -> Any:
    """The ``show`` query of a closed run, answered by whichever worker replays it."""
    return client.get_workflow_handle(run_id).query("show")


async def scheduled_activities(client: Client, run_id: str) -> int:
    """How many activities the run has scheduled (0 before it exists)."""
    try:
        history = await client.get_workflow_handle(run_id).fetch_history()
    except RPCError:
        return 0
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    return sum(1 for event in history.events if event.event_type == scheduled)


def asked(run: RunView) -> str | None:
    """The ask of the gate the run waits at, if any."""
    awaiting = run.get("awaiting")
    return awaiting["ask"] if awaiting else None


def people_with(records: Records) -> tuple[Identities, LockgatePlugin]:
    """The deployment's people, and its build recording its audit in ``records``."""
    people = deployment_people()
    return people, deployment_plugin(people, AuditLogger(sinks=[records]))


async def test_an_answer_a_rogue_build_made_current_accepted_is_not_believed_once_the_real_build_is_current_again(  # noqa: E501
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """The red team's attack: a rogue build made current accepts the clerk's check signed with
    the attacker's key; the real build, current again, takes rod's release and would have
    shipped as rod, the check it never judged believed."""
    records = Records()
    people, real = people_with(records)
    rogue = rogue_people()
    deployment = f"ship-{task_queue}"
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    as_clerk = GraphClient(rogue_client, task_queue, signer=rogue.signer("clerk"))
    rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))

    async with current_build(temporal_client, task_queue, deployment, "real", real):
        run = await ada.start(ShipOrder, ORDER)
        assert run["awaiting"] is not None and run["awaiting"]["ask"] == "checked"
    async with current_build(rogue_client, task_queue, deployment, "rogue", rogue_plugin(rogue)):
        forged = await as_clerk.decide(run["run_id"], "approve")
        assert forged["awaiting"] is not None and forged["awaiting"]["ask"] == "released"
    async with current_build(temporal_client, task_queue, deployment, "real", real):
        answering = asyncio.create_task(rod.decide(run["run_id"], "release"))
        sentence = await refused_by_the_deployment(
            temporal_client, run["run_id"], "the `decide` update"
        )
        answering.cancel()

    assert "carries no seal of this deployment's workers" in sentence
    assert SHIPPED == [] and ROGUE_SHIPPED == []
    refused = records.refused_history()
    assert refused and refused[0]["run"] == run["run_id"]
    assert "the `decide` update" in refused[0]["reason"]


async def test_an_answer_a_rogue_poller_accepted_racing_the_real_worker_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """No Worker Versioning: the rogue polls beside the real worker, and wins some tasks. Each
    forged answer the real worker takes it refuses; one the rogue takes, it accepts."""
    records = Records()
    people, real = people_with(records)
    rogue = rogue_people()
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    as_clerk = GraphClient(rogue_client, task_queue, signer=rogue.signer("clerk"))
    rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))

    async with worker(temporal_client, task_queue, real):
        run = await ada.start(ShipOrder, ORDER)
        async with worker(rogue_client, task_queue, rogue_plugin(rogue)):
            for _ in range(60):
                # Refused (nothing written) where the real worker took the task.
                answered = await as_clerk.decide(run["run_id"], "approve")
                if answered.get("ok") is not False:
                    break
            assert asked(answered) == "released", answered
        answering = asyncio.create_task(rod.decide(run["run_id"], "release"))
        await refused_by_the_deployment(temporal_client, run["run_id"], "the `decide` update")
        answering.cancel()

    assert SHIPPED == []
    assert records.refused_history()


async def test_a_start_a_rogue_build_accepted_on_a_held_signed_start_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """The attacker signs the start as ada with their own key; their build accepts it and
    begins the run, its start check recording the start (under the attacker's secret). The real
    worker refuses the node it was handed (its seal is not the deployment's), and does not take
    ada for the run's requester: the start check's record is the first thing it cannot open."""
    records = Records()
    _, real = people_with(records)
    rogue = rogue_people()
    as_ada = GraphClient(rogue_client, task_queue, signer=rogue.signer("ada"))

    async with worker(rogue_client, task_queue, rogue_plugin(rogue), no_remote_activities=True):
        started = await as_ada.start(ShipOrder, ORDER, wait=False)
        assert started.get("ok") is not False, started
    async with worker(temporal_client, task_queue, real):
        await refused_by_the_deployment(
            temporal_client, started["run_id"], "a result of lockgate.open_start"
        )

    assert SHIPPED == [] and ROGUE_SHIPPED == []
    assert records.refused_history()


async def test_a_start_of_a_workflow_of_your_own_a_rogue_build_accepted_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """The attacker signs a workflow of your own's start as ada with their own key; their build
    accepts it, records it (under the attacker's secret) and opens the run's gate. The real
    worker, answered by rod, does not take ada for the run's requester: the start's record is
    the first thing it cannot open, and nothing ships."""
    records = Records()
    people, _ = people_with(records)
    real = LockgatePlugin(
        [pack, send], [], people.directory, secret=people.secret, audit=AuditLogger(sinks=[records])
    )
    rogue = rogue_people()
    as_ada = GraphClient(rogue_client, task_queue, signer=rogue.signer("ada"))
    rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))
    run_id = f"own-order-{uuid.uuid4().hex[:8]}"

    async with worker(
        rogue_client, task_queue, rogue_plugin(rogue, graphs=()), workflows=[OwnShipOrder]
    ):
        await as_ada.start_workflow(OwnShipOrder.run, "A-1", id=run_id)
        opened = await eventually(
            lambda: as_ada.show(run_id),
            lambda shown: shown.get("awaiting") is not None,
            what="the gate the rogue build opened",
        )
    async with worker(temporal_client, task_queue, real, workflows=[OwnShipOrder]):
        answering = asyncio.create_task(rod.decide(run_id, "release"))
        sentence = await refused_by_the_deployment(
            temporal_client, run_id, "the `lockgate.start` update"
        )
        answering.cancel()

    assert opened["requester"]["principal"] == "ada"  # as the rogue build took it
    assert "carries no seal of this deployment's workers" in sentence
    assert SHIPPED == [] and ROGUE_SHIPPED == []
    refused = records.refused_history()
    assert refused and "the `lockgate.start` update" in refused[0]["reason"]


async def test_a_resume_a_rogue_build_accepted_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """A run parked at ``ship:send`` (its driver holds no ship:send) is resumed as rod with the
    attacker's key; the real worker does not take rod for its driver."""
    records = Records()
    people, _ = people_with(records)
    plugin = LockgatePlugin(
        [*deployment_plugin(people).registry],
        [ShipDirect],
        people.directory,
        secret=people.secret,
        audit=AuditLogger(sinks=[records]),
    )
    rogue = rogue_people()
    anyone = GraphClient(temporal_client, task_queue)

    async with worker(temporal_client, task_queue, plugin):
        parked = await anyone.start(ShipDirect, ORDER)
        assert parked["status"] == "parked", parked
    handle = temporal_client.get_workflow_handle(parked["run_id"])
    proof = rogue.signer("rod").sign(
        resume_binding("ship:direct", parked["run_id"], parked["execution"], "send")
    )
    async with worker(
        rogue_client,
        task_queue,
        rogue_plugin(rogue, [ShipDirect]),
        no_remote_activities=True,
    ):
        await handle.start_update("resume", proof, wait_for_stage=WorkflowUpdateStage.ACCEPTED)
    async with worker(temporal_client, task_queue, plugin):
        await refused_by_the_deployment(temporal_client, parked["run_id"], "the `resume` update")

    assert SHIPPED == [] and ROGUE_SHIPPED == []


async def test_a_cancel_a_rogue_build_accepted_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """The attacker cancels ada's run as ada, with their key; their build ends it. (Anyone with
    namespace access may end a run; what the real worker must not do is say ada cancelled it.)"""
    records = Records()
    people, real = people_with(records)
    rogue = rogue_people()
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))

    async with worker(temporal_client, task_queue, real):
        run = await ada.start(ShipOrder, ORDER)
    proof = rogue.signer("ada").sign(
        cancel_binding("ship:order", run["run_id"], run["execution"], "forged")
    )
    handle = temporal_client.get_workflow_handle(run["run_id"])
    async with worker(rogue_client, task_queue, rogue_plugin(rogue)):
        await handle.execute_update("cancel", proof)
    async with worker(temporal_client, task_queue, real):
        with pytest.raises(WorkflowQueryFailedError, match="the `cancel` update"):
            await shown_to_the_deployment(temporal_client, run["run_id"])

    assert records.refused_history()


async def test_a_durable_call_a_rogue_build_accepted_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """The attacker signs a durable call of ship:send as rod with their key; their build
    accepts it, its call check recording the call (under the attacker's secret). The real worker
    refuses the activity it was handed and stops the call at that record."""
    records = Records()
    _, real = people_with(records)
    rogue = rogue_people()
    as_rod = ToolClient(rogue_client, task_queue, signer=rogue.signer("rod"))
    request = f"forged-{task_queue}"

    async with worker(rogue_client, task_queue, rogue_plugin(rogue), no_remote_activities=True):
        calling = asyncio.create_task(as_rod.call("ship:send", ORDER, request_id=request))
        run_id = call_workflow_id(request)
        await eventually(
            lambda: scheduled_activities(temporal_client, run_id),
            lambda scheduled: scheduled > 0,
            what="the call's tool activity scheduled by the rogue build",
        )
    calling.cancel()
    async with worker(temporal_client, task_queue, real):
        await refused_by_the_deployment(
            temporal_client, run_id, "a result of lockgate.prepare_call"
        )

    assert SHIPPED == [] and ROGUE_SHIPPED == []
    assert records.refused_history()


async def test_a_state_a_rogue_build_carried_on_at_continue_as_new_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """The attacker's build continues a run as new carrying a state that skips the clerk's check,
    and opens it under its own secret; rod's release through the real worker would have shipped.
    """
    records = Records()
    people, real = people_with(records)
    rogue = rogue_people()
    ada = Actor("ada", True, "cli", "ada", "forged-nonce")
    forged = RunState(
        state="released",
        fields={"order": "A-1", "packed": True, "sent": False},
        trail=[],
        taken={},
        visits={"pack": 1},
        requester=ada,
        driver=ada,
        gate=None,
        gate_openings=1,
        parkings=0,
        spent=[],
        settles=0,
    ).to_dict()
    rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))
    run_id = f"ship:order-forged-{task_queue}"

    async with worker(rogue_client, task_queue, rogue_plugin(rogue), workflows=[ForgeCarried]):
        await temporal_client.start_workflow(
            ForgeCarried.run, forged, id=run_id, task_queue=task_queue
        )
        await eventually(
            lambda: GraphClient(temporal_client, task_queue).show(run_id),
            lambda shown: asked(shown) == "released",
            what="the forged run waiting at the officers' gate",
        )
    async with worker(temporal_client, task_queue, real):
        answering = asyncio.create_task(rod.decide(run_id, "release"))
        sentence = await refused_by_the_deployment(
            temporal_client, run_id, "a result of lockgate.verify_carried"
        )
        answering.cancel()

    assert "carries no seal of this deployment's workers" in sentence
    assert SHIPPED == []


async def test_a_tool_result_a_plain_rogue_worker_completed_is_not_believed(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """No lockgate at all: a plain worker polls lockgate's activities and completes ship:pack
    with the result it likes. The real worker does not take it for the tool's."""
    records = Records()
    people, real = people_with(records)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    forged_pack = plain_activity(
        tool_activity_name("ship:pack"),
        lambda: {"success": True, "data": {"packed": True}, "message": "", "meta": {}},
    )

    async with (
        worker(temporal_client, task_queue, real, no_remote_activities=True),
        Worker(rogue_client, task_queue=task_queue, activities=[forged_pack]),
    ):
        started = await ada.start(ShipOrder, ORDER, wait=False)
        await refused_by_the_deployment(
            temporal_client, started["run_id"], "a result of lockgate.tool:ship:pack"
        )

    assert records.refused_history()


async def test_a_history_the_deployment_refuses_is_counted_in_its_metrics(
    temporal_client: Client, rogue_client: Client, task_queue: str
) -> None:
    """What an operator alerts on: ``lockgate_refusals{event="history.refused"}``, counted while
    the worker replays (when a workflow's own meter records nothing)."""
    port = free_port()
    runtime = Runtime(
        telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=f"127.0.0.1:{port}"))
    )
    counted = await Client.connect(
        temporal_client.service_client.config.target_host,
        namespace=temporal_client.namespace,
        runtime=runtime,
    )
    people = deployment_people()
    real = LockgatePlugin(
        [pack, send], [ShipOrder], people.directory, secret=people.secret, metrics=True
    )
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    forged_pack = plain_activity(
        tool_activity_name("ship:pack"),
        lambda: {"success": True, "data": {"packed": True}, "message": "", "meta": {}},
    )

    async with (
        worker(counted, task_queue, real, no_remote_activities=True),
        Worker(rogue_client, task_queue=task_queue, activities=[forged_pack]),
    ):
        started = await ada.start(ShipOrder, ORDER, wait=False)
        await refused_by_the_deployment(
            temporal_client, started["run_id"], "a result of lockgate.tool:ship:pack"
        )
        scraped = await eventually(
            lambda: scrape(port),
            lambda text: "history.refused" in text,
            what="lockgate_refusals for the refused history",
        )

    refusals = [
        line
        for line in scraped.splitlines()
        if line.startswith("lockgate_refusals") and 'event="history.refused"' in line
    ]
    assert refusals and float(refusals[0].rsplit(" ", 1)[1]) >= 1


async def scrape(port: int) -> str:
    def get() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text: str = answer.read().decode()
            return text

    return await asyncio.to_thread(get)


async def test_an_honest_run_carries_on_after_the_worker_secret_and_an_approvers_key_rotate(
    temporal_client: Client, task_queue: str
) -> None:
    """What the deployment sealed before a rotation still opens after it: the secret keeps its
    old key listed, and an answer judged before the clerk's new key is never judged again."""
    people = deployment_people()
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    clerk = GraphClient(temporal_client, task_queue, signer=people.signer("clerk"))
    async with worker(temporal_client, task_queue, deployment_plugin(people)):
        run = await ada.start(ShipOrder, ORDER)
        checked = await clerk.decide(run["run_id"], "approve")
        assert checked["awaiting"] is not None and checked["awaiting"]["ask"] == "released"

    new_clerk_key = generate_private_key()
    rotated_directory = Directory.from_toml(
        people.toml.replace(public_key_text(people.key("clerk")), public_key_text(new_clerk_key))
    )
    rotated = LockgatePlugin(
        [pack, send], [ShipOrder], rotated_directory, secret=people.secret.rotated()
    )
    rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))
    async with worker(temporal_client, task_queue, rotated):
        done = await rod.decide(run["run_id"], "release")
        whole = await rod.show(run["run_id"])

    assert done["status"] == "finished", done
    assert SHIPPED == ["A-1 by rod"]
    assert [(row["node"], row["by"]["actor"]) for row in whole["trail"]] == [
        ("pack", "ada"),
        ("checked", "clerk"),
        ("released", "rod"),
        ("send", "rod"),
    ]
