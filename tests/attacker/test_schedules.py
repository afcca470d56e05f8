"""Schedules: a run carrying an owner's schedule grant runs as the owner only when the schedule
the grant names started it, inside the grant's window, with the inputs it names.

The attacker holds namespace access (they read the genuine schedule's action, grant included,
create and update schedules, start workflows and run workers) and no key of anyone's or worker
secret. Each test plays one forgery of a scheduled run; each run ends refused with a sentence
saying what is wrong, having shipped nothing as its owner:

- a copy of the schedule's action (the same grant and inputs) in another schedule;
- the genuine schedule's action changed to other inputs, its grant kept;
- a start by hand with the schedule's payload, a run id of the schedule's pattern and the
  ``TemporalScheduledById``/``TemporalScheduledStartTime`` search attributes (the server lets
  any start set them);
- a run of the genuine schedule after the grant's window;
- a rogue build on the task queue that records "started by the schedule, as ada" for a run of
  the attacker's own schedule (their key under ada's name, their worker secret): the
  deployment's workers do not open its seal.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.identity._bindings import schedule_binding
from lockgate.testing import Identities
from lockgate.workflows._graph_inputs import StartGraphInput
from tests.helpers.graphs import eventually
from tests.helpers.rogue_workers import (
    ROGUE_SHIPPED,
    SHIPPED,
    ShipDirect,
    deployment_people,
    pack,
    rogue_people,
    rogue_plugin,
    send,
)
from tests.helpers.support import failed_workflow_tasks

pytestmark = pytest.mark.timeout(90)

NEVER_TICKS = "0 0 1 1 *"
"""A cadence that does not tick within the tests' windows: runs come from ``trigger``."""


@pytest.fixture(autouse=True)
def nothing_shipped_yet() -> None:
    SHIPPED.clear()
    ROGUE_SHIPPED.clear()


def shipping(people: Identities) -> LockgatePlugin:
    return LockgatePlugin([pack, send], [ShipDirect], people.directory, secret=people.secret)


@asynccontextmanager
async def worker(
    client: Client, task_queue: str, plugin: LockgatePlugin, **options: Any
) -> AsyncIterator[None]:
    """A worker that keeps no run cached: every task it takes replays the run's history."""
    async with Worker(
        client, task_queue=task_queue, plugins=[plugin], max_cached_workflows=0, **options
    ):
        yield


async def genuine_schedule(client: Client, task_queue: str, people: Identities) -> str:
    """ada's schedule of ``ship:direct`` for order A-1, until an hour from now."""
    ada = GraphClient(client, task_queue, signer=people.signer("ada"))
    created = await ada.schedule(
        ShipDirect,
        {"order": "A-1"},
        cron=NEVER_TICKS,
        until=datetime.now(timezone.utc) + timedelta(hours=1),
        schedule_id=f"ship-{uuid4().hex[:8]}",
    )
    assert created["ok"] is True, created
    return str(created["schedule_id"])


async def action_of(client: Client, schedule_id: str) -> ScheduleActionStartWorkflow:
    """A schedule's action as anyone with namespace access reads it."""
    action = (await client.get_schedule_handle(schedule_id).describe()).schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    return action


async def first_run(client: Client, schedule_id: str) -> str:
    """The workflow id of the first run the schedule started, once the server lists it."""
    handle = client.get_schedule_handle(schedule_id)
    described = await eventually(
        handle.describe,
        lambda described: bool(described.info.recent_actions or described.info.running_actions),
        what=f"a run of {schedule_id}",
    )
    info = described.info
    (action, *_) = [
        action
        for action in [*(result.action for result in info.recent_actions), *info.running_actions]
        if isinstance(action, ScheduleActionExecutionStartWorkflow)
    ]
    return action.workflow_id


async def ended_refused(client: Client, task_queue: str, run_id: str) -> dict[str, Any]:
    """The run, once it ended: what the deployment's worker shows of it."""
    await client.get_workflow_handle(run_id).result()  # a refused run completes, refused
    return dict(await GraphClient(client, task_queue).show(run_id))


def refused_as_nobody(run: dict[str, Any]) -> str:
    """The sentence of a run refused at its start, which ran nothing as ada."""
    assert run["status"] == "refused", run
    assert run["requester"]["actor"] != "ada", run
    assert run["trail"] == [], run
    assert SHIPPED == [] and ROGUE_SHIPPED == []
    error = run.get("error") or {}
    assert error.get("code") == "UNAUTHORIZED", run
    return str(error.get("message"))


async def test_a_copy_of_the_schedules_action_in_another_schedule_is_refused(
    temporal_client: Client, task_queue: str
) -> None:
    people = deployment_people()
    async with worker(temporal_client, task_queue, shipping(people)):
        genuine = await genuine_schedule(temporal_client, task_queue, people)
        copy = await temporal_client.create_schedule(
            f"{genuine}-copy",
            Schedule(
                action=await action_of(temporal_client, genuine),
                spec=ScheduleSpec(cron_expressions=[NEVER_TICKS]),
            ),
        )
        await copy.trigger()
        run = await ended_refused(
            temporal_client, task_queue, await first_run(temporal_client, copy.id)
        )
        await copy.delete()
        await temporal_client.get_schedule_handle(genuine).delete()

    sentence = refused_as_nobody(run)
    assert f"grant for schedule '{genuine}'" in sentence and "did not start it" in sentence


async def test_the_schedules_action_changed_to_other_inputs_is_refused(
    temporal_client: Client, task_queue: str
) -> None:
    people = deployment_people()

    def other_inputs(update: ScheduleUpdateInput) -> ScheduleUpdate:
        action = update.description.schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow)
        (start,) = action.args
        changed = temporal_client.data_converter.payload_converter.from_payload(start)
        changed["inputs"] = {"order": "Z-9"}  # the grant kept, as it was signed
        action.args = [changed]
        return ScheduleUpdate(schedule=update.description.schedule)

    async with worker(temporal_client, task_queue, shipping(people)):
        genuine = await genuine_schedule(temporal_client, task_queue, people)
        handle = temporal_client.get_schedule_handle(genuine)
        await handle.update(other_inputs)
        await handle.trigger()
        run = await ended_refused(
            temporal_client, task_queue, await first_run(temporal_client, genuine)
        )
        await handle.delete()

    sentence = refused_as_nobody(run)
    assert "other inputs than the ones its schedule grant names" in sentence


async def test_a_start_by_hand_with_the_schedules_payload_and_its_marks_is_refused(
    temporal_client: Client, task_queue: str
) -> None:
    people = deployment_people()
    async with worker(temporal_client, task_queue, shipping(people)):
        genuine = await genuine_schedule(temporal_client, task_queue, people)
        action = await action_of(temporal_client, genuine)
        (start,) = action.args
        payload = temporal_client.data_converter.payload_converter.from_payload(start)
        now = datetime.now(timezone.utc).replace(microsecond=0)
        handle = await temporal_client.start_workflow(
            "ship:direct",
            payload,
            id=f"{action.id}-{now.strftime('%Y-%m-%dT%H:%M:%SZ')}",
            task_queue=task_queue,
            # The server takes both marks of a scheduled run from any starter.
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(
                        SearchAttributeKey.for_keyword("TemporalScheduledById"), genuine
                    ),
                    SearchAttributePair(
                        SearchAttributeKey.for_datetime("TemporalScheduledStartTime"), now
                    ),
                ]
            ),
        )
        run = await ended_refused(temporal_client, task_queue, handle.id)
        marks = (await handle.describe()).typed_search_attributes
        await temporal_client.get_schedule_handle(genuine).delete()

    assert marks.get(SearchAttributeKey.for_keyword("TemporalScheduledById")) == genuine
    sentence = refused_as_nobody(run)
    assert "did not start it" in sentence


async def test_a_run_of_the_schedule_after_its_grants_window_is_refused(
    temporal_client: Client, task_queue: str
) -> None:
    """ada signed a window that ended an hour ago; the schedule runs on (made without an end,
    as anyone who deletes and recreates it may)."""
    people = deployment_people()
    schedule_id = f"ship-{uuid4().hex[:8]}"
    now = int(time.time())
    grant = people.signer("ada").sign(
        schedule_binding("ship:direct", schedule_id, {"order": "A-1"}, now - 7200, now - 3600)
    )
    async with worker(temporal_client, task_queue, shipping(people)):
        handle = await temporal_client.create_schedule(
            schedule_id,
            Schedule(
                action=ScheduleActionStartWorkflow(
                    "ship:direct",
                    StartGraphInput(inputs={"order": "A-1"}, scheduled=grant),
                    id=schedule_id,
                    task_queue=task_queue,
                ),
                spec=ScheduleSpec(cron_expressions=[NEVER_TICKS]),
            ),
        )
        await handle.trigger()
        run = await ended_refused(
            temporal_client, task_queue, await first_run(temporal_client, schedule_id)
        )
        await handle.delete()

    sentence = refused_as_nobody(run)
    assert "outside the window" in sentence


async def test_a_started_by_the_schedule_verdict_a_rogue_build_recorded_is_not_believed(
    temporal_client: Client, task_queue: str
) -> None:
    """The attacker's own schedule, with a grant signed by their key under ada's name: their
    build (whose Directory says that key is ada's) records that the schedule started the run as
    ada, sealed with their secret. The deployment's worker does not open that seal."""
    people, rogue = deployment_people(), rogue_people()
    as_ada = GraphClient(temporal_client, task_queue, signer=rogue.signer("ada"))
    rogue_build = rogue_plugin(rogue, graphs=(ShipDirect,))
    # It takes the run's first task only: the deployment's worker takes what follows.
    async with worker(temporal_client, task_queue, rogue_build, no_remote_activities=True):
        created = await as_ada.schedule(
            ShipDirect,
            {"order": "A-1"},
            cron=NEVER_TICKS,
            until=datetime.now(timezone.utc) + timedelta(hours=1),
        )
        assert created["ok"] is True, created
        handle = temporal_client.get_schedule_handle(created["schedule_id"])
        await handle.trigger()
        run_id = await first_run(temporal_client, handle.id)
        await eventually(
            lambda: temporal_client.get_workflow_handle(run_id).fetch_history(),
            lambda history: any(
                event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED for event in history.events
            ),
            what="the rogue build's start check recorded",
        )
    async with worker(temporal_client, task_queue, shipping(people)):
        failed = await eventually(
            lambda: failed_workflow_tasks(temporal_client.get_workflow_handle(run_id)),
            lambda events: bool(events),
            seconds=60,
            what="a workflow task refused by the deployment",
        )
        await handle.delete()
        await temporal_client.get_workflow_handle(run_id).terminate("the test is over")

    message = failed[-1].workflow_task_failed_event_attributes.failure.message
    assert "a result of lockgate.open_start" in message
    assert SHIPPED == []
