"""Schedules: a Temporal Schedule whose runs start as the owner who signed its grant."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import pytest
from temporalio.client import Client, ScheduleActionExecutionStartWorkflow

from lockgate import GraphClient, LockgatePlugin
from lockgate.testing import Identities, WorkerFactory
from lockgate.tools._audit import AuditLogger
from tests.helpers.graphs import eventually
from tests.helpers.rogue_workers import SHIPPED, ShipDirect, deployment_people, pack, send

pytestmark = pytest.mark.timeout(90)


class Records:
    """The worker's audit records, as a sink receives them."""

    def __init__(self) -> None:
        self.records: list[Mapping[str, Any]] = []

    def write(self, record: Mapping[str, Any], *, accepted: bool) -> None:
        self.records.append(record)


def shipping(people: Identities, records: Records | None = None) -> LockgatePlugin:
    """The deployment's worker of ``ship:direct``: ships an order as whoever drives the run."""
    audit = AuditLogger(sinks=[records]) if records is not None else None
    return LockgatePlugin(
        [pack, send], [ShipDirect], people.directory, secret=people.secret, audit=audit
    )


def an_hour_from_now() -> datetime:
    return datetime.now(timezone.utc) + timedelta(hours=1)


async def runs_of(client: Client, schedule_id: str) -> list[str]:
    """The workflow ids of the runs a schedule started that have ended, as the server lists them."""
    info = (await client.get_schedule_handle(schedule_id).describe()).info
    running = {action.workflow_id for action in started_runs(info.running_actions)}
    ended = started_runs(result.action for result in info.recent_actions)
    return [action.workflow_id for action in ended if action.workflow_id not in running]


def started_runs(actions: Iterable[Any]) -> list[ScheduleActionExecutionStartWorkflow]:
    return [
        action for action in actions if isinstance(action, ScheduleActionExecutionStartWorkflow)
    ]


async def test_a_schedule_starts_a_run_per_tick_each_as_its_owner(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = deployment_people()
    order = f"A-{uuid4().hex[:8]}"
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    records = Records()
    async with lockgate_worker(plugin=shipping(people, records)):
        created = await ada.schedule(
            ShipDirect, {"order": order}, interval=timedelta(seconds=1), until=an_hour_from_now()
        )
        assert created["ok"] is True, created
        schedule_id = created["schedule_id"]
        try:
            ended = await eventually(
                lambda: runs_of(temporal_client, schedule_id),
                lambda runs: len(runs) >= 2,
                seconds=30,
                what="two runs of the schedule ended",
            )
        finally:
            await temporal_client.get_schedule_handle(schedule_id).delete()
        shown: list[dict[str, Any]] = [dict(await ada.show(run_id)) for run_id in ended]

    for run in shown:
        assert run["run_id"].startswith(f"{schedule_id}-")
        assert run["status"] == "finished", run
        assert run["requester"] == {**run["requester"], "actor": "ada", "verified": True}
        assert [(row["node"], row["outcome"], row["by"]["actor"]) for row in run["trail"]] == [
            ("send", "ran", "ada")
        ]
    assert SHIPPED.count(f"{order} by ada") >= 2
    scheduled = [record for record in records.records if record["event"] == "run.scheduled"]
    assert {record["run"] for record in scheduled} >= set(ended)
    assert all(record["actor"]["actor"] == "ada" for record in scheduled)


async def test_a_schedule_needs_a_signer_and_a_window_ahead(temporal_client: Client) -> None:
    anyone = GraphClient(temporal_client, "nowhere")
    ada = GraphClient(temporal_client, "nowhere", signer=deployment_people().signer("ada"))
    past = datetime.now(timezone.utc) - timedelta(minutes=1)

    unsigned = await anyone.schedule(ShipDirect, {}, cron="0 9 * * *", until=an_hour_from_now())
    over = await ada.schedule(ShipDirect, {}, cron="0 9 * * *", until=past)
    both = await ada.schedule(
        ShipDirect, {}, cron="0 9 * * *", interval=timedelta(hours=1), until=an_hour_from_now()
    )

    assert unsigned["error"]["code"] == "UNAUTHORIZED"
    assert over["error"]["code"] == "VALIDATION_ERROR" and "has passed" in over["error"]["message"]
    assert both["error"]["code"] == "VALIDATION_ERROR"
