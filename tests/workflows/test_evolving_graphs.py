"""A run follows the graph version it started with, whatever is deployed later."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from lockgate import GraphClient, LockgatePlugin
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import eventually
from tests.helpers.reliability_graphs import DocReviewV1, DocReviewV2
from tests.helpers.support import failed_workflow_tasks, patches, upserted_search_attributes

PEOPLE = {"ada": {}, "ed": {"roles": ["editor"]}}


def serving_both(people: Identities) -> LockgatePlugin:
    """The deployment that serves v1 beside v2."""
    return LockgatePlugin(
        graphs=[DocReviewV1, DocReviewV2], directory=people.directory, secret=people.secret
    )


async def test_a_run_started_on_v1_follows_v1_after_v2_is_deployed(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
    async with lockgate_worker(
        graphs=[DocReviewV1], directory=people.directory, secret=people.secret
    ):
        started = await ada.start(DocReviewV1, {"title": "Tides"})

    # The new deployment serves both versions; the v1 run is replayed on it from its history.
    v2_plugin = serving_both(people)
    async with lockgate_worker(plugin=v2_plugin):
        answered = await ed.decide(started["run_id"], "approve")

    assert started["version"] == 1 and started["status"] == "waiting"
    assert answered["version"] == 1
    assert answered["fields"]["outcome"] == "published"
    assert [row["node"] for row in answered["trail"]][-1] == "publish"


async def test_a_run_started_after_v2_is_deployed_follows_v2(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
    plugin = serving_both(people)
    async with lockgate_worker(plugin=plugin):
        started = await ada.start("doc:review", {"title": "Tides"})
        answered = await ed.decide(started["run_id"], "approve")

    assert started["version"] == 2
    assert answered["fields"]["outcome"] == "archived"


async def test_only_a_run_past_version_1_records_its_version_in_a_patch_marker(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """A patch marker also upserts TemporalChangeVersion: a run on a graph's first version, what
    most graphs only ever have, writes neither; a run on v2 writes its own and only that."""
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    async with lockgate_worker(
        graphs=[DocReviewV1], directory=people.directory, secret=people.secret
    ):
        first = await ada.start(DocReviewV1, {"title": "Tides"})
    both = serving_both(people)
    async with lockgate_worker(plugin=both):
        second = await ada.start("doc:review", {"title": "Tides"})

    def history(run_id: str) -> Any:
        return temporal_client.get_workflow_handle(run_id).fetch_history()

    first_events = list((await history(first["run_id"])).events)
    second_events = list((await history(second["run_id"])).events)
    assert (first["version"], second["version"]) == (1, 2)
    assert patches(first_events) == []
    assert "TemporalChangeVersion" not in upserted_search_attributes(first_events)
    assert patches(second_events) == ["lockgate:doc:review@v2"]
    assert upserted_search_attributes(second_events).count("TemporalChangeVersion") == 1


async def test_a_run_pinned_to_v2_keeps_v2_when_replayed_by_a_fresh_worker(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
    async with lockgate_worker(plugin=serving_both(people)):
        started = await ada.start("doc:review", {"title": "Tides"})
    async with lockgate_worker(plugin=serving_both(people)):
        answered = await ed.decide(started["run_id"], "approve")

    assert started["version"] == 2
    assert answered["version"] == 2
    assert answered["fields"]["outcome"] == "archived"


async def test_a_new_run_cannot_choose_an_older_version_the_worker_still_serves(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    plugin = serving_both(people)
    async with lockgate_worker(plugin=plugin):
        refused = await ada.start("doc:review", {"title": "Tides"}, version=1)

    assert refused["status"] == "refused"
    assert refused["error"]["code"] == "VALIDATION_ERROR"
    assert refused["error"]["message"] == (
        "New runs of 'doc:review' start on its newest version (2); version 1 only finishes the "
        "runs that started on it."
    )
    assert refused["trail"] == []


async def test_a_run_whose_version_is_no_longer_served_fails_its_task_until_it_is_served_again(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
    async with lockgate_worker(
        graphs=[DocReviewV1], directory=people.directory, secret=people.secret
    ):
        started = await ada.start(DocReviewV1, {"title": "Tides"})
    handle = temporal_client.get_workflow_handle(started["run_id"])

    # A deployment that dropped v1 while v1 runs are open: the run's task fails, loudly.
    v2_only = LockgatePlugin(graphs=[DocReviewV2], directory=people.directory, secret=people.secret)
    async with lockgate_worker(plugin=v2_only):
        await handle.signal("decide", {"choice": "approve"})  # anything that wakes the run
        failures = await eventually(
            lambda: failed_workflow_tasks(handle),
            lambda found: bool(found),
            what="the run's task failing on the v2-only worker",
        )
    # v1 is served again: the task is retried and the run carries on where it was.
    both = serving_both(people)
    async with lockgate_worker(plugin=both):
        answered = await eventually(
            lambda: ed.decide(started["run_id"], "approve"),
            lambda result: result.get("status") == "finished",
            seconds=60,
            what="the v1 run answered once a worker serves v1 again",
        )
    memo = await (await handle.describe()).memo()

    message = failures[0].workflow_task_failed_event_attributes.failure.message
    assert "started on a version this worker does not serve (it serves 2)" in message
    assert answered["version"] == 1
    assert answered["fields"]["outcome"] == "published"
    assert memo["lockgate_version"] == 1


def version_writes(events: list[Any]) -> int:
    """How many times a run's history wrote its version into its memo."""
    return sum(
        1
        for event in events
        if "lockgate_version"
        in event.workflow_properties_modified_event_attributes.upserted_memo.fields
    )


async def test_a_run_started_by_its_class_finds_its_version_in_its_memo_and_writes_none(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    async with lockgate_worker(
        graphs=[DocReviewV1], directory=people.directory, secret=people.secret
    ):
        by_class = await ada.start(DocReviewV1, {"title": "Tides"})
        by_name = await ada.start("doc:review", {"title": "Tides"})

    by_class_handle = temporal_client.get_workflow_handle(by_class["run_id"])
    by_name_handle = temporal_client.get_workflow_handle(by_name["run_id"])
    assert version_writes(list((await by_class_handle.fetch_history()).events)) == 0
    assert version_writes(list((await by_name_handle.fetch_history()).events)) == 1
    for handle in (by_class_handle, by_name_handle):
        assert (await (await handle.describe()).memo())["lockgate_version"] == 1


async def test_a_run_started_by_an_older_class_writes_the_version_it_follows(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    async with lockgate_worker(plugin=serving_both(people)):
        started = await ada.start(DocReviewV1, {"title": "Tides"})
    memo = await (await temporal_client.get_workflow_handle(started["run_id"]).describe()).memo()

    assert started["version"] == 2
    assert memo["lockgate_version"] == 2
