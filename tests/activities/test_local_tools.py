"""Cheap tools declared ``local=True`` run as Temporal local activities, and nothing else changes.

A local node runs in the workflow's own worker under the same activity name, with the same input,
seal, authority judgement, idempotency key, trail rows and audit records as a regular node; only
the history differs (a ``MarkerRecorded`` event instead of ``ActivityTaskScheduled`` and its
two companions). What a local activity trades away — its result is recorded only when the
workflow task completes, so a worker that dies first has it run again — is why a tool that
changes anything may not be local, and the crash test below shows the trade on a killed worker.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from collections.abc import Iterable, Mapping
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Annotated, Any
from uuid import uuid4

import pytest
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

from lockgate import (
    Ask,
    Edge,
    GraphClient,
    Retry,
    Route,
    Target,
    ToolClient,
    ToolContext,
    ToolRegistry,
    graph,
    tool,
)
from lockgate.activities._activity_inputs import tool_activity_name
from lockgate.activities._sealed_calls import SEAL_HEADER
from lockgate.activities._sealed_results import SEAL_METADATA
from lockgate.contracts import RunView
from lockgate.errors import ToolDeclarationError
from lockgate.testing import Identities, WorkerFactory
from lockgate.tools._tool import ToolDefinition, definition_of
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.attacker import ScheduleTools, forged_calls
from tests.helpers.graphs import eventually, trail_of
from tests.helpers.reliability_graphs import LocalRelay
from tests.helpers.support import (
    audit_facts,
    failed_workflow_tasks,
    parked_of,
    patches,
    upserted_search_attributes,
    worker_process,
)

pytestmark = pytest.mark.timeout(120)

LOCAL_ACTIVITY_MARKER = "core_local_activity"


# --- A relay of tools, declared twice: local and regular -----------------------------------------

RECORDED: dict[str, list[dict[str, Any]]] = {}
"""What each relay tool saw, by the run's subject: which tool, as whom, with which key."""


def _record(tool_name: str, subject: str, ctx: ToolContext) -> None:
    RECORDED.setdefault(subject, []).append(
        {
            "tool": tool_name,
            "actor": ctx.extra.get("actor"),
            "principal": ctx.principal,
            "idempotency_key": ctx.extra.get("idempotency_key"),
        }
    )


class Looked(BaseModel):
    looked: bool


class Noted(BaseModel):
    noted: bool


class Committed(BaseModel):
    committed: bool


class Again(str, Enum):
    LOOK_AGAIN = "look_again"
    DONE = "done"


def relay(*, local: bool) -> type[BaseModel]:
    """``quick:relay``: look and note (local when ``local``), then commit (mutating, regular)."""

    @tool("quick:look", "Look the subject up.", local=local)
    async def look(subject: str, ctx: ToolContext) -> Looked:
        _record("look", subject, ctx)
        return Looked(looked=True)

    @tool("quick:note", "Note what was seen.", scopes=["quick:note"], local=local)
    async def note(subject: str, ctx: ToolContext) -> Noted:
        _record("note", subject, ctx)
        return Noted(noted=True)

    @tool("quick:commit", "Commit it.", scopes=["quick:commit"], mutating=True)
    async def commit(subject: str, ctx: ToolContext) -> Committed:
        _record("commit", subject, ctx)
        return Committed(committed=True)

    @graph(
        "quick:relay",
        "Look, note, commit: whoever starts drives.",
        start=look,
        edges=[Edge(look, note), Edge(note, commit)],
    )
    class Relay(BaseModel):
        subject: Annotated[str, Target()]
        looked: bool = False
        noted: bool = False
        committed: bool = False

    return Relay


def review(*, local: bool) -> type[BaseModel]:
    """``quick:review``: look (local when ``local``), then an editor asks for another look or
    ends the run."""

    @tool("quick:look", "Look the subject up.", local=local)
    async def look(subject: str, ctx: ToolContext) -> Looked:
        _record("look", subject, ctx)
        return Looked(looked=True)

    @tool("quick:close", "Close the review.")
    async def close(subject: str) -> None:
        return None

    @graph(
        "quick:review",
        "Look until an editor is content.",
        start=look,
        edges=[Edge(look, Again)],
        routes=[Route(Again.LOOK_AGAIN, to=look), Route(Again.DONE, to=close)],
        asks=[Ask(Again, of="editor", because="An editor says when it has been looked at.")],
    )
    class Review(BaseModel):
        subject: Annotated[str, Target()]
        looked: bool = False

    return Review


class Fetched(BaseModel):
    fetched: bool


def failing(*, local: bool) -> type[BaseModel]:
    """``quick:fetch``: one node (local when ``local``) whose tool fails every time it runs."""

    @tool(
        "quick:fetch",
        "Fetch from a service that is down.",
        local=local,
        retry=Retry(max_attempts=2, initial_interval_seconds=0.1),
    )
    async def fetch(subject: str) -> Fetched:
        raise RuntimeError("the lookup service is down")

    @graph("quick:fetch", "Fetch, and fail.", start=fetch)
    class Fetch(BaseModel):
        subject: Annotated[str, Target()]
        fetched: bool = False

    return Fetch


LOCAL_RELAY = relay(local=True)
REGULAR_RELAY = relay(local=False)


def people() -> Identities:
    """poppy may note and commit; ada may do neither; ed and eve are editors."""
    return Identities(
        {
            "poppy": {"scopes": ["quick:note", "quick:commit"]},
            "ada": {},
            "ed": {"roles": ["editor"]},
            "eve": {"roles": ["editor"]},
        }
    )


# --- Reading histories and audit records ---------------------------------------------------------


async def history_of(client: Client, workflow_id: str) -> list[HistoryEvent]:
    return list((await client.get_workflow_handle(workflow_id).fetch_history()).events)


def scheduled(events: Iterable[HistoryEvent]) -> list[str]:
    """The activities a run scheduled as regular activities, in order."""
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def ran_locally(client: Client, events: Iterable[HistoryEvent]) -> list[str]:
    """The local activities whose results a run recorded (its local-activity markers), in order."""
    return [name for name in local_activity_types(client, events) if name is not None]


def local_activity_types(client: Client, events: Iterable[HistoryEvent]) -> list[str | None]:
    """For each event, the local activity whose result it records, or None."""
    names: list[str | None] = []
    for event in events:
        attributes = event.marker_recorded_event_attributes
        if (
            event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
            and attributes.marker_name == LOCAL_ACTIVITY_MARKER
        ):
            data = attributes.details["data"].payloads[0]
            marker = client.data_converter.payload_converter.from_payload(data, dict)
            names.append(str(marker["activity_type"]))
        else:
            names.append(None)
    return names


def as_any_run(value: Any, run: Mapping[str, Any]) -> Any:
    """``value`` with the run's id, execution and subject, the nonce of each proof and the time
    of each trail row replaced by placeholders: what two runs of one graph by the same people
    have in common."""
    text = json.dumps(value, sort_keys=True)
    text = text.replace(run["execution"], "EXECUTION").replace(run["run_id"], "RUN")
    text = text.replace(run["fields"]["subject"], "SUBJECT")
    return _any_proof(json.loads(text))


def _any_proof(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: "PROOF"
            if key == "authorization" and item is not None
            else "AT"
            if key == "at" and isinstance(item, str)
            else _any_proof(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_any_proof(item) for item in value]
    return value


def audit_of(records: Iterable[logging.LogRecord], run: Mapping[str, Any]) -> list[Any]:
    """The audit records that mention ``run``, as any run (how long a call took left out)."""
    facts = [audit_facts(r) for r in records if hasattr(r, "lockgate_audit")]
    mentioning = [f for f in facts if run["run_id"] in json.dumps(f)]
    return [as_any_run({k: v for k, v in f.items() if k != "took_ms"}, run) for f in mentioning]


@pytest.fixture
def audit_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The worker's audit records, accepted ones (INFO) included."""
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    return caplog


# --- Declaring a local tool ----------------------------------------------------------------------

REFUSED_WITH_LOCAL: list[Any] = [
    pytest.param({"mutating": True}, "declared mutating=True", id="mutating"),
    pytest.param({"confirm": True}, "declared confirm=True", id="confirm"),
    pytest.param({"heartbeat": 5.0}, "declares heartbeat=", id="heartbeat"),
]


@pytest.mark.parametrize(("options", "why"), REFUSED_WITH_LOCAL)
def test_a_local_tool_that_could_change_something_or_heartbeat_is_refused_at_declaration(
    options: dict[str, Any], why: str
) -> None:
    with pytest.raises(ToolDeclarationError) as refused:
        tool("ledger:post", "Post the entry.", local=True, **options)

    message = str(refused.value)
    assert message.startswith("Tool 'ledger:post' cannot be declared local=True: it ")
    assert why in message
    assert "drop local=True" in message


@pytest.mark.parametrize(("options", "why"), [p for p in REFUSED_WITH_LOCAL if p.id != "heartbeat"])
def test_a_raw_schema_tool_is_held_to_the_same_rule(options: dict[str, Any], why: str) -> None:
    with pytest.raises(ToolDeclarationError, match=why):
        ToolRegistry().register_schema(
            "ledger:post", "Post.", {"type": "object"}, lambda a, c: None, local=True, **options
        )


def test_a_definition_built_by_hand_is_held_to_the_same_rule() -> None:
    with pytest.raises(ToolDeclarationError, match="'ledger:post' cannot be declared local"):
        ToolDefinition(
            name="ledger:post",
            description="Post.",
            handler=lambda: None,
            input_schema={"type": "object"},
            mutating=True,
            local=True,
        )


def test_a_local_tool_says_so_on_its_definition_and_nowhere_in_its_wire_shape() -> None:
    @tool("quick:peek", "Peek.", local=True, timeout=60.0, retry=Retry(max_attempts=2))
    def peek() -> None: ...

    @tool("quick:peek", "Peek.", timeout=60.0, retry=Retry(max_attempts=2))
    def regular_peek() -> None: ...

    local, regular = definition_of(peek), definition_of(regular_peek)
    assert (local.local, regular.local) == (True, False)
    # A local activity cannot heartbeat, however long the tool may take.
    assert (local.heartbeat_seconds, regular.heartbeat_seconds) == (None, 30.0)
    assert local.summary() == regular.summary()


# --- A graph with local nodes --------------------------------------------------------------------


async def run_relay(
    lockgate_worker: WorkerFactory,
    client: Client,
    queue: str,
    graph_class: type[BaseModel],
    identities: Identities,
    driver: str,
) -> tuple[RunView, str]:
    """Runs the relay as ``driver`` on its own worker and queue; returns the run as ``show``
    shows it once it settles (with its trail: a start's answer carries none) and its subject."""
    subject = f"subject-{uuid4().hex}"
    async with lockgate_worker(
        graphs=[graph_class], directory=identities.directory, task_queue=queue
    ):
        runs = GraphClient(client, queue, signer=identities.signer(driver))
        run = await runs.start(graph_class, {"subject": subject})
        shown = await runs.show(run["run_id"])
    return shown, subject


async def test_local_nodes_are_recorded_as_markers_and_the_mutating_node_is_scheduled(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    run, _ = await run_relay(
        lockgate_worker, temporal_client, task_queue, LOCAL_RELAY, identities, "poppy"
    )
    events = await history_of(temporal_client, run["run_id"])

    assert run["status"] == "finished", run
    assert ran_locally(temporal_client, events) == [
        "lockgate.open_start",
        tool_activity_name("quick:look"),
        tool_activity_name("quick:note"),
    ]
    assert scheduled(events) == [tool_activity_name("quick:commit")]


async def test_a_run_names_its_local_tools_once_in_its_start_check_and_writes_no_patch_marker(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """What runs local is decided once, where replay reads it back: the start check's recorded
    result. A patch marker per tool (and per version) would also write a search attribute."""
    run, _ = await run_relay(
        lockgate_worker, temporal_client, task_queue, LOCAL_RELAY, people(), "poppy"
    )
    events = await history_of(temporal_client, run["run_id"])

    assert run["status"] == "finished", run
    start_check = next(
        event.marker_recorded_event_attributes.details["result"].payloads[0]
        for event, name in zip(events, local_activity_types(temporal_client, events), strict=True)
        if name == "lockgate.open_start"
    )
    opened = temporal_client.data_converter.payload_converter.from_payload(start_check, dict)
    # The relay's two cheap tools, and not its commit, which mutates.
    assert opened["local_tools"] == ["quick:look", "quick:note"]
    assert patches(events) == []
    assert "TemporalChangeVersion" not in upserted_search_attributes(events)


async def test_a_start_check_names_the_inputs_it_kept_as_sent_and_the_run_opens_with_them(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The run's started event holds its inputs already: its start check's sealed result names
    the ones the graph's model kept as they were sent, instead of a second copy of them."""
    run, subject = await run_relay(
        lockgate_worker, temporal_client, task_queue, LOCAL_RELAY, people(), "poppy"
    )
    events = await history_of(temporal_client, run["run_id"])

    assert run["status"] == "finished" and run["fields"]["subject"] == subject, run
    start_check = next(
        event.marker_recorded_event_attributes.details["result"].payloads[0]
        for event, name in zip(events, local_activity_types(temporal_client, events), strict=True)
        if name == "lockgate.open_start"
    )
    assert subject.encode() not in start_check.data
    opened = temporal_client.data_converter.payload_converter.from_payload(start_check, dict)
    assert opened["same_as_inputs"] == ["subject"] and "subject" not in opened["fields"]
    assert start_check.metadata[SEAL_METADATA]


async def test_a_nodes_recorded_result_keeps_only_what_the_run_reads_under_its_seal(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """A node's tool result in the history (a local marker or a completed activity) holds
    whether it succeeded and its data, and the seal of the worker that ran it: no copy of who
    called, the request id or timings, which the audit record has."""
    run, _ = await run_relay(
        lockgate_worker, temporal_client, task_queue, LOCAL_RELAY, people(), "poppy"
    )
    events = await history_of(temporal_client, run["run_id"])

    assert run["status"] == "finished", run
    recorded = []
    for event, name in zip(events, local_activity_types(temporal_client, events), strict=True):
        if name is not None and name.startswith(tool_activity_name("")):
            recorded.append(event.marker_recorded_event_attributes.details["result"].payloads[0])
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            recorded.append(event.activity_task_completed_event_attributes.result.payloads[0])
    assert len(recorded) == 3
    for payload in recorded:
        result = temporal_client.data_converter.payload_converter.from_payload(payload, dict)
        assert set(result) <= {"success", "data"} and result["success"] is True, result
        assert payload.metadata[SEAL_METADATA], payload


async def test_a_local_node_leaves_the_same_trail_audit_records_and_idempotency_keys_as_a_regular(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    audit_log: pytest.LogCaptureFixture,
) -> None:
    identities = people()
    local, local_subject = await run_relay(
        lockgate_worker, temporal_client, task_queue, LOCAL_RELAY, identities, "poppy"
    )
    regular, regular_subject = await run_relay(
        lockgate_worker,
        temporal_client,
        f"{task_queue}-regular",
        REGULAR_RELAY,
        identities,
        "poppy",
    )
    regular_events = await history_of(temporal_client, regular["run_id"])

    # The regular twin really is regular: every node is a scheduled activity.
    assert scheduled(regular_events) == [
        tool_activity_name(name) for name in ("quick:look", "quick:note", "quick:commit")
    ]
    assert local["status"] == regular["status"] == "finished"
    assert trail_of(local) == [("look", "ran", "poppy"), ("note", "ran", "poppy"),
                               ("commit", "ran", "poppy")]  # fmt: skip
    assert as_any_run(local["trail"], local) == as_any_run(regular["trail"], regular)
    # Each tool ran once, as poppy, with the key of its step (run, execution, node, visit).
    seen_locally = as_any_run(RECORDED[local_subject], local)
    assert seen_locally == as_any_run(RECORDED[regular_subject], regular)
    assert [
        (seen["tool"], seen["principal"], seen["idempotency_key"]) for seen in seen_locally
    ] == [
        ("look", "poppy", "RUN/EXECUTION:look:1"),
        ("note", "poppy", "RUN/EXECUTION:note:1"),
        ("commit", "poppy", "RUN/EXECUTION:commit:1"),
    ]
    # Who ran what, as whom: the same records, in the same order.
    local_audit = audit_of(audit_log.records, local)
    assert [(r["event"], r.get("tool"), r.get("principal")) for r in local_audit] == [
        ("run.start", None, None),  # poppy's signed start, accepted (the actor, not a principal)
        ("tool.call", "quick:look", "poppy"),
        ("tool.call", "quick:note", "poppy"),
        ("tool.call", "quick:commit", "poppy"),
    ]
    assert local_audit == audit_of(audit_log.records, regular)


async def test_a_local_node_the_driver_may_not_run_parks_the_run_as_a_regular_node_does(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    audit_log: pytest.LogCaptureFixture,
) -> None:
    identities = people()
    queues = {LOCAL_RELAY: task_queue, REGULAR_RELAY: f"{task_queue}-regular"}
    parked: dict[type[BaseModel], RunView] = {}
    resumed: dict[type[BaseModel], RunView] = {}
    for graph_class, queue in queues.items():
        async with lockgate_worker(
            graphs=[graph_class], directory=identities.directory, task_queue=queue
        ):
            ada = GraphClient(temporal_client, queue, signer=identities.signer("ada"))
            poppy = GraphClient(temporal_client, queue, signer=identities.signer("poppy"))
            started = await ada.start(graph_class, {"subject": uuid4().hex})
            parked[graph_class] = await ada.show(started["run_id"])
            await poppy.resume(started["run_id"])
            resumed[graph_class] = await poppy.show(started["run_id"])

    local, regular = parked[LOCAL_RELAY], parked[REGULAR_RELAY]
    assert local["status"] == "parked", local
    assert trail_of(local) == [("look", "ran", "ada"), ("note", "refused", "ada")]
    assert local["trail"][-1]["why"] == (
        "The node 'note' (quick:note) did not run: it needs the scope quick:note, which ada does "
        "not hold. The run is parked there and nothing after it ran."
    )
    assert local["fields"]["noted"] is False
    assert as_any_run(parked_of(local), local) == as_any_run(parked_of(regular), regular)
    assert as_any_run(local["trail"], local) == as_any_run(regular["trail"], regular)
    refusals = [
        [r for r in audit_of(audit_log.records, run) if r["event"] == "node.run"]
        for run in (local, regular)
    ]
    assert refusals[0] == refusals[1]
    assert [(r["outcome"], r["node"], r["actor"]["actor"]) for r in refusals[0]] == [
        ("refused", "note", "ada")
    ]
    # poppy may: the run carries on from the node it was parked at, local as before.
    assert resumed[LOCAL_RELAY]["status"] == "finished", resumed[LOCAL_RELAY]
    assert trail_of(resumed[LOCAL_RELAY])[-3:] == [
        ("note", "resumed", "poppy"),
        ("note", "ran", "poppy"),
        ("commit", "ran", "poppy"),
    ]
    assert as_any_run(resumed[LOCAL_RELAY]["trail"], local) == as_any_run(
        resumed[REGULAR_RELAY]["trail"], regular
    )
    events = await history_of(temporal_client, local["run_id"])
    assert ran_locally(temporal_client, events).count(tool_activity_name("quick:note")) == 2
    assert tool_activity_name("quick:note") not in scheduled(events)


async def test_a_local_node_whose_tool_keeps_failing_parks_the_run_as_a_regular_node_does(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    runs: list[RunView] = []
    for graph_class, queue in [
        (failing(local=True), task_queue),
        (failing(local=False), f"{task_queue}-regular"),
    ]:
        run, _ = await run_relay(
            lockgate_worker, temporal_client, queue, graph_class, identities, "poppy"
        )
        runs.append(run)
    local, regular = runs
    events = await history_of(temporal_client, local["run_id"])

    assert local["status"] == "parked", local
    assert trail_of(local) == [("fetch", "failed", "poppy")]
    assert local["trail"][-1]["why"] == (
        "The node 'fetch' (quick:fetch) did not run: it failed after its retries: the lookup "
        "service is down. The run is parked there and nothing after it ran."
    )
    assert as_any_run(local["trail"], local) == as_any_run(regular["trail"], regular)
    assert ran_locally(temporal_client, events)[-1] == tool_activity_name("quick:fetch")
    assert scheduled(events) == []


# --- The durable tool call -----------------------------------------------------------------------


async def test_a_durable_call_of_a_local_tool_runs_it_as_a_local_activity_after_its_checks(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, subject, request_id = people(), uuid4().hex, f"r-{uuid4().hex}"
    async with lockgate_worker(graphs=[LOCAL_RELAY], directory=identities.directory):
        poppy = ToolClient(temporal_client, task_queue, signer=identities.signer("poppy"))
        result = await poppy.call("quick:note", {"subject": subject}, request_id=request_id)
        ada = ToolClient(temporal_client, task_queue, signer=identities.signer("ada"))
        refused = await ada.call("quick:note", {"subject": subject})
    events = await history_of(temporal_client, call_workflow_id(request_id))

    assert result["success"], result
    assert result["data"] == {"noted": True}
    assert ran_locally(temporal_client, events) == [
        "lockgate.prepare_call",
        tool_activity_name("quick:note"),
    ]
    assert scheduled(events) == []
    # The call's idempotency key is its request id, local or not.
    assert RECORDED[subject] == [
        {"tool": "note", "actor": "poppy", "principal": "poppy", "idempotency_key": request_id}
    ]
    error = refused["error"]
    assert error is not None
    assert error["code"] == "FORBIDDEN"


# --- Runs in flight when a tool becomes local ----------------------------------------------------


async def test_a_run_that_ran_a_tool_as_a_regular_activity_keeps_doing_so_once_it_is_local(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    identities, subject = people(), uuid4().hex
    before, after = review(local=False), review(local=True)
    async with lockgate_worker(graphs=[before], directory=identities.directory):
        ada = GraphClient(temporal_client, task_queue, signer=identities.signer("ada"))
        waiting = await ada.start(before, {"subject": subject})
    # The next deployment declares quick:look local; the run in flight answers its gate there.
    async with lockgate_worker(graphs=[after], directory=identities.directory):
        ed = GraphClient(temporal_client, task_queue, signer=identities.signer("ed"))
        eve = GraphClient(temporal_client, task_queue, signer=identities.signer("eve"))
        again = await ed.decide(waiting["run_id"], "look_again")
        done = await eve.decide(waiting["run_id"], "done")
        whole = await eve.show(waiting["run_id"])
        fresh = await ada.start(after, {"subject": uuid4().hex})
        failed = await failed_workflow_tasks(temporal_client.get_workflow_handle(done["run_id"]))
    in_flight = await history_of(temporal_client, done["run_id"])
    started_after = await history_of(temporal_client, fresh["run_id"])

    assert (waiting["status"], again["status"], done["status"]) == (
        "waiting",
        "waiting",
        "finished",
    )
    assert failed == []
    assert [(node, outcome) for node, outcome, _ in trail_of(whole)] == [
        ("look", "ran"),
        ("again", "answered"),
        ("look", "ran"),
        ("again", "answered"),
        ("close", "ran"),
    ]
    # An answer's own result carries the rows it added.
    assert [(node, outcome) for node, outcome, _ in trail_of(done)] == [
        ("again", "answered"),
        ("close", "ran"),
    ]
    look = tool_activity_name("quick:look")
    assert scheduled(in_flight).count(look) == 2
    assert look not in ran_locally(temporal_client, in_flight)
    # A run that starts on the new deployment runs it locally.
    assert look in ran_locally(temporal_client, started_after)
    assert look not in scheduled(started_after)


# --- A worker killed while a local step runs -----------------------------------------------------


def _runs(folder: Path) -> list[tuple[str, str, str, int]]:
    """Each line the relay's tools wrote: (tool, event, idempotency key, process id)."""
    path = folder / "runs"
    lines = path.read_text().splitlines() if path.exists() else []
    return [
        (tool_name, event, key, int(pid)) for tool_name, event, key, pid in map(str.split, lines)
    ]


async def _wrote(folder: Path, tool_name: str, event: str, times: int = 1) -> None:
    async def read() -> list[tuple[str, str, str, int]]:
        return _runs(folder)

    await eventually(
        read,
        lambda runs: [(t, e) for t, e, _, _ in runs].count((tool_name, event)) >= times,
        seconds=60,
        what=f"{tool_name} {event} ({times})",
    )


async def test_a_worker_killed_during_a_local_step_reruns_only_that_step_and_never_the_commit(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = temporal_client.service_client.config.target_host
    first = await worker_process(address, task_queue, "RELAY")
    workers = [first]
    try:
        run = await GraphClient(temporal_client, task_queue).start(
            LocalRelay, {"folder": str(tmp_path)}, wait=False
        )
        run_id = run["run_id"]
        await _wrote(tmp_path, "commit", "started")
        # The mutating step is about to have its effect: the local steps before it are saved.
        saved_before_commit = ran_locally(
            temporal_client, await history_of(temporal_client, run_id)
        )
        (tmp_path / "commit-release").touch()
        await _wrote(tmp_path, "tally", "started")
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()
        (tmp_path / "tally-release").touch()
        workers.append(await worker_process(address, task_queue, "RELAY"))
        result = await asyncio.wait_for(temporal_client.get_workflow_handle(run_id).result(), 90)
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
            await worker.wait()
    events = await history_of(temporal_client, run_id)

    runs = _runs(tmp_path)
    print(json.dumps({"local_crash": {"tool_runs": len(runs), "status": result["status"]}}))
    assert saved_before_commit == [
        "lockgate.open_start",
        tool_activity_name("relay:gather"),
        tool_activity_name("relay:check"),
    ]
    assert result["status"] == "finished", result
    assert [(node, outcome) for node, outcome, _ in trail_of(result)] == [
        ("gather", "ran"),
        ("check", "ran"),
        ("commit", "ran"),
        ("tally", "ran"),
    ]
    step = f"{run_id}/{result['execution']}"
    restarted = workers[1].pid
    # The killed worker's local step ran again on the new one, with the key of the same step...
    assert [(t, e, k, p) for t, e, k, p in runs if t == "tally"] == [
        ("tally", "started", f"{step}:tally:1", first.pid),
        ("tally", "started", f"{step}:tally:1", restarted),
        ("tally", "done", f"{step}:tally:1", restarted),
    ]
    # ...and nothing saved before the kill ran again: the mutating step had its effect once.
    assert [(t, e) for t, e, _, _ in runs if t != "tally"] == [
        ("gather", "ran"),
        ("check", "ran"),
        ("commit", "started"),
        ("commit", "done"),
    ]
    assert scheduled(events) == [tool_activity_name("relay:commit")]
    assert ran_locally(temporal_client, events) == [*saved_before_commit,
                                                    tool_activity_name("relay:tally")]  # fmt: skip


# --- An attacker scheduling a local tool's activity ----------------------------------------------


@activity.defn(name="lockgate.tool:quick:note")
async def attackers_own_note(call: Any) -> dict[str, Any]:
    """The attacker's own activity under the local tool's name: their code, on their worker."""
    return {"attackers_own_code": True}


@workflow.defn(name="attacker.schedule_locally", sandboxed=False)
class ScheduleLocally:
    """Runs an activity by name as a local activity of the attacker's own worker."""

    @workflow.run
    async def run(self, name: str, call: dict[str, Any]) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await workflow.execute_local_activity(
                name,
                call,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=1),
                result_type=dict,
            )
        except ActivityError as error:
            cause = error.cause
            return {"ran": False, "type": cause.type if isinstance(cause, ApplicationError) else ""}
        return {"ran": True, "result": result}


async def test_a_local_tools_activity_scheduled_from_a_strangers_workflow_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    audit_log: pytest.LogCaptureFixture,
) -> None:
    identities, subject, attacker_queue = people(), uuid4().hex, f"{task_queue}-attacker"
    forged = forged_calls("quick:note", "poppy", {"subject": subject}, task_queue)
    async with (
        lockgate_worker(graphs=[LOCAL_RELAY], directory=identities.directory),
        Worker(
            temporal_client,
            task_queue=attacker_queue,
            workflows=[ScheduleTools, ScheduleLocally],
            activities=[attackers_own_note],
        ),
    ):
        # As a regular activity on lockgate's queue, naming poppy, confirmed, or both.
        as_regular = await temporal_client.execute_workflow(
            ScheduleTools.run, forged, id=f"forger-{uuid4().hex}", task_queue=attacker_queue
        )
        # As a local activity: it can only run on the attacker's own worker, as their own code.
        as_local = await temporal_client.execute_workflow(
            ScheduleLocally.run,
            args=[tool_activity_name("quick:note"), forged[0]["input"]],
            id=f"forger-{uuid4().hex}",
            task_queue=attacker_queue,
        )
        attack_records = [audit_facts(r) for r in audit_log.records if hasattr(r, "lockgate_audit")]
        poppy = GraphClient(temporal_client, task_queue, signer=identities.signer("poppy"))
        honest = await poppy.start(LOCAL_RELAY, {"subject": subject})
    honest_events = await history_of(temporal_client, honest["run_id"])

    assert [(a["ran"], a["type"], a["non_retryable"]) for a in as_regular] == [
        (False, "UNAUTHORIZED", True)
    ] * 3
    assert all("lockgate's workers did not vouch for" in a["message"] for a in as_regular)
    assert as_local == {"ran": True, "result": {"attackers_own_code": True}}
    # lockgate's quick:note never ran for the attacker: no call, no record of one.
    assert [
        (r["event"], r["outcome"]) for r in attack_records if r.get("tool") == "quick:note"
    ] == [("tool.sealed_call", "refused")] * 3
    # The honest run noted it, locally, as poppy; its local steps' seals never reach history,
    # where anyone could read them (the regular commit's seal does, bound to this run).
    assert honest["status"] == "finished", honest
    assert [seen["tool"] for seen in RECORDED[subject]] == ["look", "note", "commit"]
    assert {seen["principal"] for seen in RECORDED[subject]} == {"poppy"}
    markers = [e for e in honest_events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert markers and all(SEAL_HEADER.encode() not in e.SerializeToString() for e in markers)
    (commit,) = [
        e.activity_task_scheduled_event_attributes
        for e in honest_events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert SEAL_HEADER in commit.header.fields
