"""An attacker's start and call proofs, now that every proof names the execution it acts on.

A signed graph start or durable tool call is started first and held back; its client signs for
the execution the server's reply names (the workflow id and first run id) and sends the proof as
the run's ``start`` update (a graph run) or ``call`` update (a durable call), whose validator
judges it before anything is written. No ledger of spent proofs is kept: a proof is good for the
one execution it names, and that execution takes one proof, once.

The attacker has namespace access, no private key and no worker secret: they read every history,
start anything with any input and id-reuse policy, send any update, terminate and reset runs.
Played here, each on the real dev server:

- A start proof read from a finished run's history, offered to another execution: the same
  workflow id started again after the first closed, or after it was terminated; another workflow
  id; another graph; a run on a newer version; inside an old-style start input. A proof signed
  for this very execution but naming another version, or other inputs, than the run holds.
- A proof for one held-back run sent to another; two proofs for one run, one after it began and
  two raced to it while held back.
- A proof after the bound: a run that gets none ends refused (five minutes, on the time-skipping
  server; at once when its starter withdraws it), and a proof sent then finds it closed.
- A terminate-and-restart between a client's start and its proof (a client interceptor plays
  the attacker at exactly that moment).
- A reset after the proof: the same execution, which judges the reapplied proof again; and a
  reset that drops it, after which the same proof starts the same execution again.
- The same for durable tool calls: a call's proof read from history, offered to a new execution
  of its request id (same or other tool and arguments), to another request id, or inside an
  old-style call input; a proof for this very execution naming another tool or other
  arguments; a second proof for a call that knows its caller, or for one made unsigned; a
  terminate-and-restart between the call's start and its proof. Every refused call proof is
  audited, as a refused start proof is.

Each refusal is asserted by its code and sentence, nothing runs as the signer, no workflow task
fails, and the honest path still works. The honest client is told about the execution it started,
never about one the attacker started under the same id: after a terminate-and-restart, and when a
request id is asked again after the attacker ran a new execution under it (the first answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, cast
from uuid import uuid4

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowUpdateInput,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin, ToolClient, ToolContext, tool
from lockgate.activities._activity_inputs import TOOL_ACTIVITY_PREFIX
from lockgate.contracts import RunView
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.publish_post import PublishPost
from lockgate.identity._bindings import start_binding, tool_binding
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN
from lockgate.workflows._tool_call import CallToolInput, call_workflow_id
from tests.helpers.graphs import ALWAYS_FAILS, essay_people, event_types, eventually, trail_of
from tests.helpers.reliability_graphs import DocReviewV1, DocReviewV2
from tests.helpers.support import (
    assert_nothing_written_but_a_workflow_task,
    audit_facts,
    error_of,
    failed_workflow_tasks,
    gate_of,
    outcome,
    prove_start,
    temporal_cli,
)

pytestmark = pytest.mark.timeout(60)

UPDATE_ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
UPDATE_ADMITTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ADMITTED
TASK_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
MARKER = EventType.EVENT_TYPE_MARKER_RECORDED

PUBLISHES = {"title": "Tides", "rubric": "tides"}
"""An essay that passes its rubric at once and publishes, if its requester may publish (ed)."""

SPAM = {"title": "Buy now", "rubric": "buy"}
"""What the attacker would have published as ed."""


# --- Sentences ----------------------------------------------------------------------------------


def another_execution(run_id: str) -> str:
    return (
        f"The proof starts another execution of '{run_id}' than this one (an execution that "
        "ended, or was started again under the same id): a start proof names the execution the "
        "server started, and is good for that one only."
    )


def another_binding(key: str, signed: str, here: str) -> str:
    return (
        f"The proof authorizes {key} '{signed}', but this call is on {key} '{here}': a proof is "
        "good only for the exact act it names."
    )


def withdrawn_run(run_id: str) -> str:
    return (
        f"Run '{run_id}' was started as signed and holds no start proof, so nothing ran: its "
        f"starter withdrew it before one was accepted. (`lockgate sign start {run_id} --as YOU` "
        "prints one for this execution.)"
    )


def another_call_execution(request_id: str) -> str:
    return (
        f"The proof makes another execution of call '{request_id}' than this one (one that "
        "ended, or was started again under the same id): a call's proof names the execution the "
        "server started, and is good for that one only."
    )


def withdrawn_call(request_id: str) -> str:
    return (
        f"Call '{request_id}' was made as signed and holds no proof, so nothing ran: its starter "
        "withdrew it before one was accepted."
    )


# --- Helpers ------------------------------------------------------------------------------------


def new_run_id(graph: str = "essay:review") -> str:
    return f"{graph}-{uuid4().hex[:12]}"


async def held_back(
    client: Client,
    task_queue: str,
    inputs: Mapping[str, Any],
    *,
    run_id: str,
    graph: str = "essay:review",
    delayed: bool = True,
) -> WorkflowHandle[Any, dict[str, Any]]:
    """A graph run started as signed and held back for its proof, as GraphClient.start starts
    one; any id-reuse policy the attacker likes (here: a new execution after one closed)."""
    return await client.start_workflow(
        graph,
        StartGraphInput(inputs=dict(inputs), signed=True),
        id=run_id,
        task_queue=task_queue,
        result_type=dict,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        start_delay=SIGNED_START_WITHIN if delayed else None,
    )


async def held_back_call(
    client: Client,
    task_queue: str,
    request_id: str,
    arguments: Mapping[str, Any],
    *,
    tool_name: str = "demo:add",
) -> WorkflowHandle[Any, dict[str, Any]]:
    """A durable call started as signed and held back, as ToolClient.call starts one, but with
    the policy that allows a new execution under the request id once the last one closed."""
    return await client.start_workflow(
        "lockgate.tool_call",
        CallToolInput(tool_name, dict(arguments), None, "temporal", request_id, signed=True),
        id=call_workflow_id(request_id),
        task_queue=task_queue,
        result_type=dict,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        start_delay=SIGNED_START_WITHIN,
    )


def execution_of(handle: WorkflowHandle[Any, Any]) -> str:
    execution = handle.first_execution_run_id
    assert execution, "the handle start_workflow returned names its execution"
    return execution


async def refused(handle: WorkflowHandle[Any, Any], update: str, proof: Any) -> tuple[str, str]:
    """Sends ``proof`` as the update ``update``, which must be refused: (code, sentence)."""
    with pytest.raises(WorkflowUpdateFailedError) as raised:
        await handle.execute_update(update, proof, result_type=dict)
    cause = raised.value.cause
    assert isinstance(cause, ApplicationError), repr(cause)
    return str(cause.type), cause.message


async def accepted_proof(
    client: Client, handle: WorkflowHandle[Any, Any], update: str
) -> dict[str, Any]:
    """The proof the update ``update`` brought to one execution, as anyone reads it in history."""
    for event in (await handle.fetch_history()).events:
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request
        if event.event_type == UPDATE_ACCEPTED and request.input.name == update:
            proof: dict[str, Any] = client.data_converter.payload_converter.from_payload(
                request.input.args.payloads[0], dict
            )
            return proof
    raise AssertionError(f"no accepted {update!r} update in the history of {handle.id}")


async def stolen_start(
    client: Client, run: Mapping[str, Any]
) -> tuple[WorkflowHandle[Any, Any], dict[str, Any]]:
    """The execution a signed start answered with, and the start proof anyone reads in its
    history: what the attacker takes to another execution."""
    handle = client.get_workflow_handle(run["run_id"], run_id=run["execution"])
    return handle, await accepted_proof(client, handle, "start")


async def stolen_call(
    client: Client, request_id: str
) -> tuple[WorkflowHandle[Any, Any], dict[str, Any]]:
    """The first execution of a durable call, and the call proof anyone reads in its history."""
    workflow_id = call_workflow_id(request_id)
    execution = (await client.get_workflow_handle(workflow_id).describe()).run_id
    handle = client.get_workflow_handle(workflow_id, run_id=execution)
    return handle, await accepted_proof(client, handle, "call")


def accepted_updates(events: list[HistoryEvent]) -> list[str]:
    """The names of the updates a history accepted, in order. A reapplied update is accepted
    without its request, which the UpdateAdmitted event that brought it holds."""
    admitted = {
        event.workflow_execution_update_admitted_event_attributes.request.meta.update_id: (
            event.workflow_execution_update_admitted_event_attributes.request.input.name
        )
        for event in events
        if event.event_type == UPDATE_ADMITTED
    }
    names = []
    for event in events:
        if event.event_type == UPDATE_ACCEPTED:
            accepted = event.workflow_execution_update_accepted_event_attributes
            names.append(
                accepted.accepted_request.input.name
                or admitted.get(accepted.protocol_instance_id, "")
            )
    return names


def admitted_proof(client: Client, events: list[HistoryEvent], update: str) -> dict[str, Any]:
    """The proof an UpdateAdmitted event (a reapplied update) brought as ``update``."""
    for event in events:
        request = event.workflow_execution_update_admitted_event_attributes.request
        if event.event_type == UPDATE_ADMITTED and request.input.name == update:
            proof: dict[str, Any] = client.data_converter.payload_converter.from_payload(
                request.input.args.payloads[0], dict
            )
            return proof
    raise AssertionError(f"no admitted {update!r} update")


async def tools_run(client: Client, handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The tools one execution ran, in order: scheduled activities and local ones (markers)."""
    converter = client.data_converter.payload_converter
    names = []
    for event in (await handle.fetch_history()).events:
        if event.event_type == SCHEDULED:
            names.append(event.activity_task_scheduled_event_attributes.activity_type.name)
        elif event.event_type == MARKER and "data" in (
            details := event.marker_recorded_event_attributes.details
        ):
            marker = converter.from_payload(details["data"].payloads[0], dict)
            names.append(str(marker.get("activity_type")))
    return [
        name.removeprefix(TOOL_ACTIVITY_PREFIX) for name in names if TOOL_ACTIVITY_PREFIX in name
    ]


async def withdrawn(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """Ends a held-back run that holds no proof, as its starter's client does (a cancellation;
    else it would wait out its five minutes): what it then returned."""
    await handle.cancel()
    return await outcome(handle)


async def no_failed_tasks(*handles: WorkflowHandle[Any, Any]) -> list[HistoryEvent]:
    """The failed workflow tasks of all these executions (a reset's own cut left out)."""
    reset = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
    return [
        event
        for handle in handles
        for event in await failed_workflow_tasks(handle)
        if event.workflow_task_failed_event_attributes.cause != reset
    ]


async def whole_run(client: GraphClient, answered: RunView) -> RunView:
    """The run a start answered, with its whole trail (an answer carries no rows of it)."""
    return await client.show(answered["run_id"])


def rows_by(run: Mapping[str, Any], principal: str) -> list[tuple[str, str, str | None]]:
    """The trail rows of ``run`` driven by ``principal``."""
    return [row for row in trail_of(run) if row[2] == principal]


def assert_ran_nothing(ended: Mapping[str, Any], run_id: str) -> None:
    """A held-back run that got no proof it took, then was withdrawn: refused, nothing ran."""
    assert ended["status"] == "refused", ended
    assert ended["ok"] is False
    assert ended["error"] == {"code": "UNAUTHORIZED", "message": withdrawn_run(run_id)}
    assert ended["requester"]["verified"] is False
    assert ended["trail"] == []


# --- 1. A start proof read from history, offered to another execution ---------------------------


async def test_a_start_proof_read_from_a_finished_run_is_refused_by_a_new_execution_of_its_id(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.start(EssayReview, PUBLISHES)
        run_id = first["run_id"]
        first_handle, stolen = await stolen_start(temporal_client, first)

        again = await held_back(temporal_client, task_queue, SPAM, run_id=run_id)
        code, sentence = await refused(again, "start", stolen)
        waiting = await ed.show(run_id)
        ended = await withdrawn(again)
        ran = await tools_run(temporal_client, again)
        honest = await whole_run(ed, await ed.start(EssayReview, PUBLISHES, run_id=run_id))
        failed = await no_failed_tasks(first_handle, again)

    assert first["status"] == "finished", first
    assert stolen["principal"] == "ed"
    assert stolen["authorizes"] == start_binding(
        "essay:review", run_id, first["execution"], PUBLISHES
    )
    assert execution_of(again) != first["execution"]
    assert code == "UNAUTHORIZED"
    assert sentence == another_execution(run_id)
    # Refused before anything was written: the run still waits for a proof, as nobody.
    assert waiting["status"] == "starting", waiting
    assert waiting["requester"]["verified"] is False
    assert waiting["trail"] == []
    assert_ran_nothing(ended, run_id)
    assert ran == []
    assert ended["fields"]["url"] is None
    # The honest path under the same id still works: ed's own start publishes, as ed.
    assert honest["status"] == "finished", honest
    assert honest["execution"] not in (first["execution"], execution_of(again))
    assert rows_by(honest, "ed")[-1] == ("publish", "ran", "ed")
    assert failed == []


async def test_a_start_proof_read_from_a_terminated_run_is_refused_by_a_new_execution_of_its_id(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ada.start(EssayReview, ALWAYS_FAILS)
        run_id = first["run_id"]
        first_handle, stolen = await stolen_start(temporal_client, first)
        await first_handle.terminate("the attacker")

        again = await held_back(temporal_client, task_queue, ALWAYS_FAILS, run_id=run_id)
        code, sentence = await refused(again, "start", stolen)
        ended = await withdrawn(again)
        ran = await tools_run(temporal_client, again)
        terminated = await first_handle.describe()
        honest = await ada.start(EssayReview, ALWAYS_FAILS, run_id=run_id)
        published = await ed.decide(run_id, "publish_as_is")
        failed = await no_failed_tasks(first_handle, again)

    assert first["status"] == "waiting", first
    assert stolen["principal"] == "ada"
    assert terminated.status == WorkflowExecutionStatus.TERMINATED
    assert code == "UNAUTHORIZED"
    assert sentence == another_execution(run_id)
    assert_ran_nothing(ended, run_id)
    assert ran == []
    # The honest path under the same id: ada's start waits for an editor, ed publishes.
    assert honest["status"] == "waiting", honest
    assert honest["requester"]["principal"] == "ada"
    assert published["status"] == "finished", published
    assert trail_of(published)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert failed == []


async def test_a_start_proof_read_from_history_is_refused_by_a_run_under_another_id(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    other_id = new_run_id()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.start(EssayReview, PUBLISHES)
        first_handle, stolen = await stolen_start(temporal_client, first)

        elsewhere = await held_back(temporal_client, task_queue, PUBLISHES, run_id=other_id)
        code, sentence = await refused(elsewhere, "start", stolen)
        ended = await withdrawn(elsewhere)
        ran = await tools_run(temporal_client, elsewhere)
        honest = await whole_run(ed, await ed.start(EssayReview, PUBLISHES, run_id=other_id))
        failed = await no_failed_tasks(first_handle, elsewhere)

    assert first["status"] == "finished", first
    assert code == "UNAUTHORIZED"
    assert sentence == another_binding("run", first["run_id"], other_id)
    assert_ran_nothing(ended, other_id)
    assert ran == []
    assert honest["status"] == "finished", honest
    assert rows_by(honest, "ed")[-1] == ("publish", "ran", "ed")
    assert failed == []


async def test_a_start_proof_read_from_history_is_refused_by_a_run_of_another_graph(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    post = {"topic": "Tides"}
    async with lockgate_worker(graphs=[EssayReview, PublishPost], directory=people.directory):
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.start(EssayReview, PUBLISHES)
        run_id = first["run_id"]
        first_handle, stolen = await stolen_start(temporal_client, first)

        # Under the same workflow id, so that only the graph tells the proof's run from this one.
        other_graph = await held_back(
            temporal_client, task_queue, post, run_id=run_id, graph="post:publish"
        )
        code, sentence = await refused(other_graph, "start", stolen)
        ended = await withdrawn(other_graph)
        ran = await tools_run(temporal_client, other_graph)
        honest = await ed.start(PublishPost, post)
        failed = await no_failed_tasks(first_handle, other_graph)

    assert code == "UNAUTHORIZED"
    assert sentence == (
        f"The proof starts a run of 'essay:review', and run '{run_id}' is a run of "
        "'post:publish': a start proof starts only the graph it names."
    )
    assert ended["graph"] == "post:publish"
    assert_ran_nothing(ended, run_id)
    assert ran == []
    assert honest["status"] == "waiting", honest
    assert honest["requester"]["principal"] == "ed"
    assert failed == []


async def test_a_start_proof_read_from_history_and_put_inside_a_start_input_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The old road: the proof inside the start input (``StartGraphInput(proof=...)``), as
    lockgate sent it before proofs named their execution, in a new execution of its run."""
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.start(EssayReview, PUBLISHES)
        run_id = first["run_id"]
        first_handle, stolen = await stolen_start(temporal_client, first)

        inline = await temporal_client.start_workflow(
            "essay:review",
            StartGraphInput(inputs=PUBLISHES, proof=stolen),
            id=run_id,
            task_queue=task_queue,
            result_type=dict,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        ended = await outcome(inline)
        ran = await tools_run(temporal_client, inline)
        failed = await no_failed_tasks(first_handle, inline)

    assert ended["status"] == "refused", ended
    assert ended["error"] == {
        "code": "UNAUTHORIZED",
        "message": (
            f"Run '{run_id}' carries its start proof inside its start input, where lockgate no "
            "longer takes one: a start proof names the execution the server started, and "
            "reaches the run after the start (its `start` update). Start it again with a "
            "current lockgate client."
        ),
    }
    assert ended["requester"]["verified"] is False
    assert ended["trail"] == []
    assert ran == []
    assert failed == []


def doc_people() -> Identities:
    return Identities({"ada": {}, "ed": {"roles": ["editor"]}})


async def test_a_start_proof_read_from_a_version_1_run_is_refused_by_a_version_2_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, inputs = doc_people(), {"title": "Tides"}
    v1_only = LockgatePlugin(graphs=[DocReviewV1], directory=people.directory, secret=people.secret)
    both = LockgatePlugin(
        graphs=[DocReviewV1, DocReviewV2], directory=people.directory, secret=people.secret
    )
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
    async with lockgate_worker(plugin=v1_only):
        first = await ada.start(DocReviewV1, inputs, version=1)
        run_id = first["run_id"]
        done = await ed.decide(run_id, "approve")
        first_handle, stolen = await stolen_start(temporal_client, first)
    async with lockgate_worker(plugin=both):
        again = await held_back(
            temporal_client, task_queue, inputs, run_id=run_id, graph="doc:review"
        )
        code, sentence = await refused(again, "start", stolen)
        ended = await withdrawn(again)
        ran = await tools_run(temporal_client, again)
        honest = await ada.start("doc:review", inputs, run_id=run_id)
        failed = await no_failed_tasks(first_handle, again)

    assert first["version"] == 1 and done["status"] == "finished", done
    assert stolen["authorizes"]["version"] == 1
    # Its execution is what tells it apart first: a new run is never on version 1 anyway.
    assert code == "UNAUTHORIZED"
    assert sentence == another_execution(run_id)
    assert ended["version"] == 2
    assert_ran_nothing(ended, run_id)
    assert ran == []
    assert honest["status"] == "waiting" and honest["version"] == 2, honest
    assert honest["requester"]["principal"] == "ada"
    assert failed == []


async def test_a_start_proof_for_this_execution_naming_an_older_version_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, inputs, run_id = doc_people(), {"title": "Tides"}, new_run_id("doc:review")
    plugin = LockgatePlugin(
        graphs=[DocReviewV1, DocReviewV2], directory=people.directory, secret=people.secret
    )
    async with lockgate_worker(plugin=plugin):
        handle = await held_back(
            temporal_client, task_queue, inputs, run_id=run_id, graph="doc:review"
        )
        # ada's own signature, for this very execution, but for version 1 (a stale client).
        with pytest.raises(WorkflowUpdateFailedError) as raised:
            await prove_start(handle, people.signer("ada"), inputs, version=1)
        before = await tools_run(temporal_client, handle)
        started = await prove_start(handle, people.signer("ada"), inputs)
        failed = await no_failed_tasks(handle)

    cause = raised.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UNAUTHORIZED"
    assert cause.message == (
        "The proof starts version 1 of 'doc:review', and this run follows version 2."
    )
    assert before == []
    # Refused, not spent: her proof naming no version (the newest served) starts it, as ada.
    assert started["status"] == "waiting" and started["version"] == 2, started
    assert started["requester"]["principal"] == "ada"
    assert failed == []


async def test_a_start_proof_for_this_execution_naming_other_inputs_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The attacker starts a run that would publish at once, and shows ed other inputs to sign
    for: ed's signature names this very execution, but not what it holds."""
    people, run_id = essay_people(), new_run_id()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        handle = await held_back(temporal_client, task_queue, SPAM, run_id=run_id)
        proof = people.signer("ed").sign(
            start_binding("essay:review", run_id, execution_of(handle), ALWAYS_FAILS)
        )
        code, sentence = await refused(handle, "start", proof)
        ended = await withdrawn(handle)
        ran = await tools_run(temporal_client, handle)
        failed = await no_failed_tasks(handle)

    assert code == "UNAUTHORIZED"
    assert sentence == (
        f"The proof starts run '{run_id}' with other inputs than the ones it was started with: "
        "a start proof names exactly what it starts."
    )
    assert_ran_nothing(ended, run_id)
    assert ran == []
    assert ended["fields"]["url"] is None
    assert failed == []


# --- 2. and 3. One run, one proof ---------------------------------------------------------------


async def test_a_proof_for_one_held_back_run_is_refused_by_another_and_each_takes_its_own(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, run_a, run_b = essay_people(), new_run_id(), new_run_id()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        a = await held_back(temporal_client, task_queue, ALWAYS_FAILS, run_id=run_a)
        b = await held_back(temporal_client, task_queue, ALWAYS_FAILS, run_id=run_b)
        proof_a = people.signer("ada").sign(
            start_binding("essay:review", run_a, execution_of(a), ALWAYS_FAILS)
        )
        code, sentence = await refused(b, "start", proof_a)
        reader = GraphClient(temporal_client, task_queue)
        b_waiting = await reader.show(run_b)
        b_started = await prove_start(b, people.signer("ada"), ALWAYS_FAILS)
        a_started: dict[str, Any] = await a.execute_update("start", proof_a, result_type=dict)
        failed = await no_failed_tasks(a, b)

    assert code == "UNAUTHORIZED"
    assert sentence == another_binding("run", run_a, run_b)
    assert b_waiting["status"] == "starting" and b_waiting["trail"] == [], b_waiting
    # Each takes the proof that names it, and runs as its signer.
    for started, handle in ((b_started, b), (a_started, a)):
        assert started["status"] == "waiting", started
        assert started["execution"] == execution_of(handle)
        assert started["requester"]["principal"] == "ada"
        assert gate_of(cast(RunView, started))["requester"] == "ada"
    assert failed == []


async def test_a_second_start_proof_for_a_run_that_has_begun_is_refused_and_its_requester_stays(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        run_id, execution = run["run_id"], run["execution"]
        handle = temporal_client.get_workflow_handle(run_id, run_id=execution)
        # A valid proof for this very execution, by another principal; and ada's own again.
        eds = people.signer("ed").sign(
            start_binding("essay:review", run_id, execution, ALWAYS_FAILS)
        )
        adas = await accepted_proof(temporal_client, handle, "start")
        before = await event_types(temporal_client, run_id)
        by_ed = await refused(handle, "start", eds)
        by_ada_again = await refused(handle, "start", adas)
        after = await event_types(temporal_client, run_id)
        still = await ada.show(run_id)
        published = await ed.decide(run_id, "publish_as_is")
        failed = await no_failed_tasks(handle)

    once = (
        f"Run '{run_id}' has begun, started by ada: a run takes its start proof once, before it "
        "begins."
    )
    assert by_ed == ("GATE_NOT_PENDING", once)
    assert by_ada_again == ("GATE_NOT_PENDING", once)
    assert_nothing_written_but_a_workflow_task(before, after)
    assert still["requester"]["principal"] == "ada"
    assert gate_of(still)["requester"] == "ada" and gate_of(still)["makers"] == ["ada"]
    # ed stayed no maker of the work, so he may still answer its gate.
    assert published["status"] == "finished", published
    assert published["requester"]["principal"] == "ada"
    assert trail_of(published)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert failed == []


async def test_two_start_proofs_raced_to_a_held_back_run_start_it_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, run_id = essay_people(), new_run_id()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        handle = await held_back(temporal_client, task_queue, ALWAYS_FAILS, run_id=run_id)
        proofs = {
            name: people.signer(name).sign(
                start_binding("essay:review", run_id, execution_of(handle), ALWAYS_FAILS)
            )
            for name in ("ada", "clerk")
        }
        results = await asyncio.gather(
            *(handle.execute_update("start", proof, result_type=dict) for proof in proofs.values()),
            return_exceptions=True,
        )
        shown = await GraphClient(temporal_client, task_queue).show(run_id)
        accepted = await accepted_proof(temporal_client, handle, "start")
        failed = await no_failed_tasks(handle)

    won = [result for result in results if isinstance(result, dict)]
    lost = [result for result in results if not isinstance(result, dict)]
    assert len(won) == 1 and len(lost) == 1, results
    (winner,) = won
    (loser,) = lost
    assert isinstance(loser, WorkflowUpdateFailedError), repr(loser)
    assert isinstance(loser.cause, ApplicationError)
    assert loser.cause.type == "GATE_NOT_PENDING"
    principal = winner["requester"]["principal"]
    # Refused in its validator (the first had begun the run) or, validated in the same task
    # as the first, by the update itself.
    assert loser.cause.message in (
        f"Run '{run_id}' has begun, started by {principal}: a run takes its start proof once, "
        "before it begins.",
        f"Run '{run_id}' already knows who started it.",
    )
    assert principal in ("ada", "clerk")
    assert accepted == proofs[principal]
    assert shown["requester"]["principal"] == principal
    assert winner["status"] == "waiting", winner
    assert failed == []


# --- 4. A proof after the bound -----------------------------------------------------------------


async def test_a_run_given_no_proof_ends_refused_after_five_minutes_and_a_late_proof_is_turned_away(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    """Played on the time-skipping server: the run's five-minute timer fires at once."""
    people, run_id = essay_people(), new_run_id()
    client = time_skipping_env.client
    plugin = LockgatePlugin(graphs=[EssayReview], directory=people.directory, secret=people.secret)
    async with Worker(client, task_queue=task_queue, plugins=[plugin]):
        handle = await held_back(client, task_queue, ALWAYS_FAILS, run_id=run_id, delayed=False)
        ended = await outcome(handle)
        late = people.signer("ada").sign(
            start_binding("essay:review", run_id, execution_of(handle), ALWAYS_FAILS)
        )
        with pytest.raises(RPCError) as closed:
            await handle.execute_update("start", late, result_type=dict)
        ada = GraphClient(client, task_queue, signer=people.signer("ada"))
        signed_late = await ada.sign_start(run_id)
        events = list((await handle.fetch_history()).events)
        with time_skipping_env.with_time_skipping_disabled():
            honest = await ada.start(EssayReview, ALWAYS_FAILS)
        failed = await no_failed_tasks(handle)

    assert ended["status"] == "refused", ended
    assert ended["error"] == {
        "code": "UNAUTHORIZED",
        "message": (
            f"Run '{run_id}' was started as signed and holds no start proof, so nothing ran: none "
            f"reached it within 5 minutes of its start. (`lockgate sign start {run_id} --as YOU` "
            "prints one for this execution.)"
        ),
    }
    assert ended["trail"] == []
    (timer,) = [e for e in events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]
    waited = timer.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
    assert SIGNED_START_WITHIN - timedelta(seconds=5) < waited <= SIGNED_START_WITHIN
    assert EventType.EVENT_TYPE_TIMER_FIRED in [event.event_type for event in events]
    assert UPDATE_ACCEPTED not in [event.event_type for event in events]
    # The server turns a late proof away: the execution it names is closed.
    assert closed.value.status == RPCStatusCode.NOT_FOUND
    assert closed.value.message == "workflow execution already completed"
    # And a lockgate client signs nothing for it.
    assert signed_late.get("ok") is False, signed_late
    assert signed_late["error"] == {
        "code": "GATE_NOT_PENDING",
        "message": f"Run '{run_id}' is not waiting for its start proof: it has completed.",
    }
    assert "signature" not in signed_late
    assert honest["status"] == "waiting" and honest["requester"]["principal"] == "ada", honest
    assert failed == []


async def test_a_withdrawn_run_ends_refused_at_once_and_a_late_proof_is_turned_away(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """Played on the real server, where five minutes cannot be waited: the run started signed
    without a start delay waits on its timer; its starter withdraws it."""
    people, run_id = essay_people(), new_run_id()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        handle = await held_back(
            temporal_client, task_queue, ALWAYS_FAILS, run_id=run_id, delayed=False
        )
        reader = GraphClient(temporal_client, task_queue)
        waiting = await eventually(
            lambda: reader.show(run_id),
            lambda shown: shown.get("status") == "starting",
            what="the run waiting for its start proof",
        )
        loop = asyncio.get_running_loop()
        asked = loop.time()
        ended = await withdrawn(handle)
        took = loop.time() - asked
        late = people.signer("ada").sign(
            start_binding("essay:review", run_id, execution_of(handle), ALWAYS_FAILS)
        )
        with pytest.raises(RPCError) as closed:
            await handle.execute_update("start", late, result_type=dict)
        ran = await tools_run(temporal_client, handle)
        failed = await no_failed_tasks(handle)

    assert waiting["requester"]["verified"] is False and waiting["trail"] == [], waiting
    assert_ran_nothing(ended, run_id)
    assert took < 5, took
    assert ran == []
    assert closed.value.status == RPCStatusCode.NOT_FOUND
    assert closed.value.message == "workflow execution already completed"
    assert failed == []


# --- 5. A terminate-and-restart between a start and its proof ------------------------------------


class BetweenStartAndProof(Interceptor):
    """The attacker, between a client's start and its proof: on the first ``update`` the client
    sends (its proof), ``restart`` terminates the execution it started and starts another under
    the same id; the proof then goes on to where the client sent it. Keeps the proof it saw."""

    def __init__(
        self, update: str, restart: Callable[[str], Awaitable[WorkflowHandle[Any, Any]]]
    ) -> None:
        self.update = update
        self.restart = restart
        self.proofs: list[Any] = []
        self.restarted: list[WorkflowHandle[Any, Any]] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Between(next, self)


class _Between(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, attack: BetweenStartAndProof) -> None:
        super().__init__(next)
        self.attack = attack

    async def start_workflow_update(
        self, input: StartWorkflowUpdateInput
    ) -> WorkflowUpdateHandle[Any]:
        if input.update == self.attack.update and not self.attack.restarted:
            self.attack.proofs.append(input.args[0])
            self.attack.restarted.append(await self.attack.restart(input.id))
        return await super().start_workflow_update(input)


def client_with(client: Client, interceptor: Interceptor) -> Client:
    """Another client of the same server, through ``interceptor``."""
    return Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=client.data_converter,
        interceptors=[interceptor],
    )


def restarts_essay(
    client: Client, task_queue: str, *, delayed: bool = True
) -> BetweenStartAndProof:
    """The attacker who, between ed's start and his proof, terminates ed's run and starts
    their own under its id, signed, holding what they would have ed publish."""

    async def restart(run_id: str) -> WorkflowHandle[Any, Any]:
        await client.get_workflow_handle(run_id).terminate("the attacker")
        return await held_back(client, task_queue, SPAM, run_id=run_id, delayed=delayed)

    return BetweenStartAndProof("start", restart)


async def test_a_run_restarted_between_its_start_and_its_proof_runs_nothing_as_the_signer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    attack = restarts_essay(temporal_client, task_queue)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ed = GraphClient(
            client_with(temporal_client, attack), task_queue, signer=people.signer("ed")
        )
        answered = await ed.start(EssayReview, PUBLISHES)
        (attackers,) = attack.restarted
        (proof,) = attack.proofs
        run_id = attackers.id
        first = temporal_client.get_workflow_handle(run_id, run_id=proof["authorizes"]["execution"])
        # ed's client sent the proof to the execution it started, which was closed: it reached
        # no run. Had it reached the attacker's (sent by workflow id), it is refused there.
        code, sentence = await refused(attackers, "start", proof)
        ended = await withdrawn(attackers)
        ran = await tools_run(temporal_client, attackers)
        first_status = (await first.describe()).status
        honest = await whole_run(
            GraphClient(temporal_client, task_queue, signer=people.signer("ed")),
            await GraphClient(temporal_client, task_queue, signer=people.signer("ed")).start(
                EssayReview, PUBLISHES
            ),
        )
        failed = await no_failed_tasks(first, attackers)

    assert proof["principal"] == "ed"
    assert proof["authorizes"] == start_binding(
        "essay:review", run_id, proof["authorizes"]["execution"], PUBLISHES
    )
    assert first_status == WorkflowExecutionStatus.TERMINATED
    assert proof["authorizes"]["execution"] != execution_of(attackers)
    requester = answered.get("requester")
    assert requester is None or requester["principal"] != "ed", answered
    assert code == "UNAUTHORIZED"
    assert sentence == another_execution(run_id)
    assert_ran_nothing(ended, run_id)
    assert ran == []
    assert ended["fields"]["url"] is None
    assert honest["status"] == "finished", honest
    assert rows_by(honest, "ed")[-1] == ("publish", "ran", "ed")
    assert failed == []


@pytest.mark.parametrize("delayed", [True, False], ids=["held back", "not held back"])
async def test_a_client_whose_run_was_restarted_before_its_proof_is_not_shown_the_attackers_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, delayed: bool
) -> None:
    """ed's GraphClient.start sends its proof to the execution it started; the attacker
    terminated that one and started their own under the same id. The update finds the execution
    closed, and the client answers how ITS execution ended (terminated: nothing ran for the
    proof), never what the attacker's execution under the same workflow id shows."""
    people = essay_people()
    attack = restarts_essay(temporal_client, task_queue, delayed=delayed)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ed = GraphClient(
            client_with(temporal_client, attack), task_queue, signer=people.signer("ed")
        )
        answered = await ed.start(EssayReview, PUBLISHES)
        (attackers,) = attack.restarted
        await withdrawn(attackers)

    assert answered.get("ok") is False, answered
    assert answered.get("execution") != execution_of(attackers), answered
    assert answered["error"]["code"] == "GATE_NOT_PENDING", answered
    assert "has terminated before it settled" in answered["error"]["message"], answered


# --- 6. A reset after the proof ------------------------------------------------------------------


async def runs_of(client: Client, run_id: str) -> list[str]:
    """The run ids the server lists under the workflow id ``run_id``."""
    return [found.run_id async for found in client.list_workflows(f"WorkflowId = '{run_id}'")]


async def test_a_reset_after_the_start_proof_judges_it_again_in_the_same_execution(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """``temporal workflow reset`` to the run's first workflow task completed, which took ada's
    start proof: the server reapplies the ``start`` update to the reset run (UpdateAdmitted),
    which is the same execution (a reset keeps the first run id), so the run's validator judges
    the proof again and takes it (it names this execution and is within its window): the run
    waits at its gate again, as ada's, and ed's answer publishes once."""
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        run_id, execution = run["run_id"], run["execution"]
        old = temporal_client.get_workflow_handle(run_id, run_id=execution)
        first_task = next(
            event.event_id
            for event in (await old.fetch_history()).events
            if event.event_type == TASK_COMPLETED
        )
        await temporal_cli(
            temporal_client, "workflow", "reset", "--workflow-id", run_id,
            "--event-id", str(first_task), "--reason", "the attacker",
        )  # fmt: skip
        description = await temporal_client.get_workflow_handle(run_id).describe()
        reset = temporal_client.get_workflow_handle(run_id, run_id=description.run_id)
        waiting = await eventually(
            lambda: ada.show(run_id),
            lambda shown: shown.get("status") == "waiting",
            what="the reset run waiting at its gate again",
        )
        published = await ed.decide(run_id, "publish_as_is")
        reset_events = list((await reset.fetch_history()).events)
        original = await accepted_proof(temporal_client, old, "start")
        runs = await eventually(
            lambda: runs_of(temporal_client, run_id),
            lambda runs: len(runs) == 2,
            what="both runs of the reset execution listed",
        )
        first_run_ids = [
            (
                await temporal_client.get_workflow_handle(run_id, run_id=found).describe()
            ).raw_description.workflow_execution_info.first_run_id
            for found in runs
        ]
        old_ran = await tools_run(temporal_client, old)
        reset_ran = await tools_run(temporal_client, reset)
        old_status = (await old.describe()).status
        failed = await no_failed_tasks(old, reset)

    assert description.run_id != execution
    assert description.raw_description.workflow_execution_info.first_run_id == execution
    assert old_status == WorkflowExecutionStatus.TERMINATED
    # The proof was reapplied and judged again: admitted, then accepted once, in the reset run.
    kinds = [event.event_type for event in reset_events]
    assert UPDATE_ADMITTED in kinds
    assert accepted_updates(reset_events) == ["start", "decide"]
    assert kinds.index(UPDATE_ADMITTED) < kinds.index(UPDATE_ACCEPTED)
    assert admitted_proof(temporal_client, reset_events, "start") == original
    # Same execution, same requester, same gate: nothing started another execution.
    assert waiting["execution"] == execution
    assert waiting["requester"]["principal"] == "ada"
    assert gate_of(waiting)["gate"] == gate_of(run)["gate"] == "editor_call#1"
    assert sorted(runs) == sorted([execution, description.run_id])
    assert first_run_ids == [execution, execution]
    # ed's answer publishes once, in the reset run; the run before the reset published nothing.
    assert published["status"] == "finished", published
    assert published["execution"] == execution
    assert trail_of(published)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert "essay:publish" not in old_ran
    assert reset_ran.count("essay:publish") == 1
    assert reset_ran[:2] == ["essay:write", "essay:grade"]
    assert failed == []


async def test_a_reset_that_drops_the_start_proof_waits_for_one_and_takes_the_same_proof_again(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """``temporal workflow reset --reapply-exclude Update`` to the same point: nothing is
    reapplied, so the reset run, as nobody, waits for a start proof again (status ``starting``),
    having run nothing. ada's proof, read from history and sent by anyone within its window,
    starts it again as ada: it names this execution (a reset keeps the first run id), and a proof
    is spent only in the history the reset dropped (SECURITY.md, "Resets")."""
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        run_id, execution = run["run_id"], run["execution"]
        old = temporal_client.get_workflow_handle(run_id, run_id=execution)
        first_task = next(
            event.event_id
            for event in (await old.fetch_history()).events
            if event.event_type == TASK_COMPLETED
        )
        stolen = await accepted_proof(temporal_client, old, "start")
        await temporal_cli(
            temporal_client, "workflow", "reset", "--workflow-id", run_id,
            "--event-id", str(first_task), "--reason", "the attacker",
            "--reapply-exclude", "Update",
        )  # fmt: skip
        waiting = await eventually(
            lambda: ada.show(run_id),
            lambda shown: shown.get("status") == "starting",
            what="the reset run waiting for a start proof",
        )
        reset = temporal_client.get_workflow_handle(run_id)
        before = await tools_run(temporal_client, reset)
        again: dict[str, Any] = await reset.execute_update("start", stolen, result_type=dict)
        failed = await no_failed_tasks(old, reset)

    assert waiting["execution"] == execution
    assert waiting["requester"]["verified"] is False and waiting["trail"] == [], waiting
    assert before == []
    assert again["status"] == "waiting", again
    assert again["execution"] == execution
    assert again["requester"]["principal"] == "ada"
    assert gate_of(cast(RunView, again))["makers"] == ["ada"]
    assert failed == []


# --- Durable tool calls --------------------------------------------------------------------------

RUNS: Counter[str] = Counter()
"""How often each request id ran a demo tool."""

ARGUMENTS = {"a": 1, "b": 2}


@tool("demo:add", "Add two numbers.", scopes=["math"])
def add(a: int, b: int, ctx: ToolContext) -> dict[str, Any]:
    RUNS[ctx.request_id] += 1
    return {"sum": a + b}


@tool("demo:subtract", "Subtract two numbers.", scopes=["math"])
def subtract(a: int, b: int, ctx: ToolContext) -> dict[str, Any]:
    RUNS[ctx.request_id] += 1
    return {"difference": a - b}


@tool("demo:careful_add", "Add two numbers, once confirmed.", scopes=["math"], confirm=True)
def careful_add(a: int, b: int, ctx: ToolContext) -> dict[str, Any]:
    RUNS[ctx.request_id] += 1
    return {"sum": a + b}


def math_people() -> Identities:
    return Identities({"ed": {"scopes": ["math"]}, "max": {"scopes": ["math"]}})


def new_request_id() -> str:
    return f"r-{uuid4().hex}"


def assert_call_ran_nothing(ended: Mapping[str, Any], request_id: str) -> None:
    assert ended["success"] is False, ended
    assert ended["error"] == {"code": "UNAUTHORIZED", "message": withdrawn_call(request_id)}
    assert "principal" not in ended["meta"]
    assert RUNS[request_id] == 0


AGAIN_WITH = [
    pytest.param("demo:add", ARGUMENTS, id="the same tool and arguments"),
    pytest.param("demo:add", {"a": 1000, "b": 2}, id="other arguments"),
    pytest.param("demo:subtract", ARGUMENTS, id="another tool"),
]


@pytest.mark.parametrize(("tool_name", "arguments"), AGAIN_WITH)
async def test_a_call_proof_read_from_a_finished_call_is_refused_by_a_new_execution_of_its_request(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    tool_name: str,
    arguments: dict[str, Any],
) -> None:
    people, request_id = math_people(), new_request_id()
    async with lockgate_worker(tools=[add, subtract], directory=people.directory):
        ed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.call("demo:add", ARGUMENTS, request_id=request_id)
        first_handle, stolen = await stolen_call(temporal_client, request_id)
        first_execution = (await first_handle.describe()).run_id
        runs_before = RUNS[request_id]

        again = await held_back_call(
            temporal_client, task_queue, request_id, arguments, tool_name=tool_name
        )
        code, sentence = await refused(again, "call", stolen)
        ended = await withdrawn(again)
        honest = await ed.call("demo:add", ARGUMENTS, request_id=new_request_id())
        failed = await no_failed_tasks(first_handle, again)

    assert first["success"] is True and first["meta"]["principal"] == "ed", first
    assert stolen["principal"] == "ed"
    assert stolen["authorizes"] == tool_binding("demo:add", ARGUMENTS, request_id, first_execution)
    assert execution_of(again) != first_execution
    assert code == "UNAUTHORIZED"
    assert sentence == another_call_execution(request_id)
    # The tool ran once, for the first execution, and never again.
    assert runs_before == 1 and RUNS[request_id] == 1
    assert ended["success"] is False, ended
    assert ended["error"] == {"code": "UNAUTHORIZED", "message": withdrawn_call(request_id)}
    assert "principal" not in ended["meta"]
    assert honest["success"] is True and honest["meta"]["principal"] == "ed", honest
    assert failed == []


async def test_a_call_proof_read_from_history_is_refused_by_a_call_with_another_request_id(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, request_id, other_request = math_people(), new_request_id(), new_request_id()
    async with lockgate_worker(tools=[add], directory=people.directory):
        ed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.call("demo:add", ARGUMENTS, request_id=request_id)
        first_handle, stolen = await stolen_call(temporal_client, request_id)

        elsewhere = await held_back_call(temporal_client, task_queue, other_request, ARGUMENTS)
        code, sentence = await refused(elsewhere, "call", stolen)
        ended = await withdrawn(elsewhere)
        honest = await ed.call("demo:add", ARGUMENTS, request_id=new_request_id())
        failed = await no_failed_tasks(first_handle, elsewhere)

    assert first["success"] is True, first
    assert code == "UNAUTHORIZED"
    assert sentence == another_binding("request", request_id, other_request)
    assert RUNS[request_id] == 1
    assert_call_ran_nothing(ended, other_request)
    assert honest["success"] is True and honest["meta"]["principal"] == "ed", honest
    assert failed == []


async def test_a_call_proof_read_from_history_and_put_inside_a_call_input_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The old road: the proof inside the call's start input, in a new execution of its
    request id; the tool does not run again."""
    people, request_id = math_people(), new_request_id()
    async with lockgate_worker(tools=[add], directory=people.directory):
        ed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.call("demo:add", ARGUMENTS, request_id=request_id)
        first_handle, stolen = await stolen_call(temporal_client, request_id)

        inline = await temporal_client.start_workflow(
            "lockgate.tool_call",
            CallToolInput("demo:add", ARGUMENTS, stolen, "temporal", request_id),
            id=call_workflow_id(request_id),
            task_queue=task_queue,
            result_type=dict,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        ended = await outcome(inline)
        failed = await no_failed_tasks(first_handle, inline)

    assert first["success"] is True, first
    assert ended["success"] is False, ended
    assert ended["error"] == {
        "code": "UNAUTHORIZED",
        "message": (
            f"Call '{request_id}' carries its proof inside its start input, where lockgate no "
            "longer takes one: a call's proof names the execution the server started, and "
            "reaches it after the start (its `call` update). Call again with a current "
            "lockgate client."
        ),
    }
    assert "principal" not in ended["meta"]
    assert RUNS[request_id] == 1
    assert failed == []


SIGNED_FOR = [
    pytest.param(
        "demo:subtract",
        ARGUMENTS,
        "The proof calls 'demo:subtract', and call '{request}' is a call of 'demo:add'.",
        id="another tool",
    ),
    pytest.param(
        "demo:add",
        {"a": 1, "b": 3},
        "The proof calls 'demo:add' with other arguments than call '{request}' was made with: a "
        "request id names one call, with the arguments it was first made with.",
        id="other arguments",
    ),
]


@pytest.mark.parametrize(("signed_tool", "signed_arguments", "why"), SIGNED_FOR)
async def test_a_call_proof_for_this_execution_naming_another_tool_or_arguments_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    signed_tool: str,
    signed_arguments: dict[str, Any],
    why: str,
) -> None:
    """The attacker starts a call of their own and shows ed another to sign for: ed's signature
    names this very execution and request, but not its tool or its arguments."""
    people, request_id = math_people(), new_request_id()
    async with lockgate_worker(tools=[add, subtract], directory=people.directory):
        handle = await held_back_call(temporal_client, task_queue, request_id, ARGUMENTS)
        proof = people.signer("ed").sign(
            tool_binding(signed_tool, signed_arguments, request_id, execution_of(handle))
        )
        code, sentence = await refused(handle, "call", proof)
        ended = await withdrawn(handle)
        failed = await no_failed_tasks(handle)

    assert code == "UNAUTHORIZED"
    assert sentence == why.format(request=request_id)
    assert_call_ran_nothing(ended, request_id)
    assert failed == []


async def test_a_second_proof_for_a_call_that_knows_its_caller_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """A call waiting for its confirmation knows its caller: a valid proof by another principal
    for the same execution, or its caller's own again, is refused; its caller confirms it, and
    the tool runs once, as ed."""
    people, request_id = math_people(), new_request_id()
    async with lockgate_worker(tools=[careful_add], directory=people.directory):
        # Over MCP a signature is no consent, so the call asks for a confirmation and waits.
        ed = ToolClient(temporal_client, task_queue, signer=people.signer("ed", channel="mcp"))
        asked = await ed.call("demo:careful_add", ARGUMENTS, request_id=request_id)
        handle = temporal_client.get_workflow_handle(call_workflow_id(request_id))
        execution = (await handle.describe()).run_id
        maxs = people.signer("max").sign(
            tool_binding("demo:careful_add", ARGUMENTS, request_id, execution)
        )
        eds = await accepted_proof(temporal_client, handle, "call")
        by_max = await refused(handle, "call", maxs)
        by_ed_again = await refused(handle, "call", eds)
        runs_before = RUNS[request_id]
        done = await ed.confirm(request_id, asked["data"]["confirm_token"])
        failed = await no_failed_tasks(handle)

    assert asked["meta"]["requires_confirmation"] is True, asked
    once = f"Call '{request_id}' is made by ed: it takes its proof once, before it begins."
    assert by_max == ("GATE_NOT_PENDING", once)
    assert by_ed_again == ("GATE_NOT_PENDING", once)
    assert runs_before == 0
    assert done["success"] is True and done["meta"]["principal"] == "ed", done
    assert RUNS[request_id] == 1
    assert failed == []


async def test_every_refused_call_proof_is_audited_for_the_operator_who_looks_for_replays(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The attacker's tries leave a trace, as a refused start proof does: a call proof read
    from history and offered to a new execution of its request id, and ed's proof offered to a
    call the attacker made unsigned (to run it as ed) are each refused and audited as
    ``tool.proof``, naming the tool, the request and, where the proof was verified, its
    signer. Neither runs the tool."""
    people, request_id, unsigned_request = math_people(), new_request_id(), new_request_id()
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    async with lockgate_worker(tools=[add], directory=people.directory):
        ed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.call("demo:add", ARGUMENTS, request_id=request_id)
        first_handle, stolen = await stolen_call(temporal_client, request_id)
        again = await held_back_call(temporal_client, task_queue, request_id, ARGUMENTS)
        replayed = await refused(again, "call", stolen)
        await withdrawn(again)

        unsigned = await temporal_client.start_workflow(
            "lockgate.tool_call",
            CallToolInput("demo:add", ARGUMENTS, None, "temporal", unsigned_request),
            id=call_workflow_id(unsigned_request),
            task_queue=task_queue,
            result_type=dict,
            start_delay=SIGNED_START_WITHIN,
        )
        eds = people.signer("ed").sign(
            tool_binding("demo:add", ARGUMENTS, unsigned_request, execution_of(unsigned))
        )
        made_unsigned = await refused(unsigned, "call", eds)
        failed = await no_failed_tasks(first_handle, again, unsigned)
        with contextlib.suppress(RPCError):  # the refused update may have woken it: it ended
            await unsigned.terminate("the test is done with it")

    audited = [
        audit_facts(record)
        for record in caplog.records
        if "lockgate_audit" in record.__dict__ and audit_facts(record)["event"] == "tool.proof"
    ]
    assert first["success"] is True, first
    assert replayed == ("UNAUTHORIZED", another_call_execution(request_id))
    assert made_unsigned == (
        "GATE_NOT_PENDING",
        f"Call '{unsigned_request}' was not made as a signed call: it takes its proof once, "
        "before it begins.",
    )
    assert [
        (facts["outcome"], facts["code"], facts["reason"], facts["tool"], facts["request_id"])
        for facts in audited
    ] == [
        ("refused", "UNAUTHORIZED", another_call_execution(request_id), "demo:add", request_id),
        ("refused", "GATE_NOT_PENDING", made_unsigned[1], "demo:add", unsigned_request),
    ]
    assert audited[0]["actor"]["principal"] == "ed"  # verified: the proof was ed's
    assert audited[1]["actor"] is None  # refused before its proof was looked at
    assert RUNS[request_id] == 1 and RUNS[unsigned_request] == 0
    assert failed == []


def restarts_call(client: Client, task_queue: str, request_id: str) -> BetweenStartAndProof:
    """The attacker who, between ed's call and its proof, terminates ed's call and starts
    their own under its request id, signed, with other arguments."""

    async def restart(workflow_id: str) -> WorkflowHandle[Any, Any]:
        await client.get_workflow_handle(workflow_id).terminate("the attacker")
        return await held_back_call(client, task_queue, request_id, {"a": 1000, "b": 2})

    return BetweenStartAndProof("call", restart)


async def test_a_call_restarted_between_its_start_and_its_proof_runs_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, request_id = math_people(), new_request_id()
    attack = restarts_call(temporal_client, task_queue, request_id)
    async with lockgate_worker(tools=[add], directory=people.directory):
        ed = ToolClient(
            client_with(temporal_client, attack), task_queue, signer=people.signer("ed")
        )
        # What ed's client answers is the next test's: here, what ran.
        with contextlib.suppress(RPCError):
            await ed.call("demo:add", ARGUMENTS, request_id=request_id)
        (attackers,) = attack.restarted
        (proof,) = attack.proofs
        first = temporal_client.get_workflow_handle(
            attackers.id, run_id=proof["authorizes"]["execution"]
        )
        # The proof reached no run; had it reached the attacker's call, it is refused there.
        code, sentence = await refused(attackers, "call", proof)
        ended = await withdrawn(attackers)
        first_status = (await first.describe()).status
        honest = await ToolClient(temporal_client, task_queue, signer=people.signer("ed")).call(
            "demo:add", ARGUMENTS, request_id=new_request_id()
        )
        failed = await no_failed_tasks(first, attackers)

    assert proof["authorizes"] == tool_binding(
        "demo:add", ARGUMENTS, request_id, proof["authorizes"]["execution"]
    )
    assert first_status == WorkflowExecutionStatus.TERMINATED
    assert proof["authorizes"]["execution"] != execution_of(attackers)
    assert code == "UNAUTHORIZED"
    assert sentence == another_call_execution(request_id)
    assert_call_ran_nothing(ended, request_id)
    assert honest["success"] is True and honest["meta"]["principal"] == "ed", honest
    assert failed == []


async def test_a_tool_client_whose_call_was_restarted_before_its_proof_answers_a_refusal(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """As above: ed's ToolClient.call sends its proof to the execution it started, which the
    attacker terminated. The ``call`` update finds it closed, and ToolClient.call answers a
    result with ``success: False`` and a sentence saying how that execution ended, as every
    other way a call is not made does."""
    people, request_id = math_people(), new_request_id()
    attack = restarts_call(temporal_client, task_queue, request_id)
    async with lockgate_worker(tools=[add], directory=people.directory):
        ed = ToolClient(
            client_with(temporal_client, attack), task_queue, signer=people.signer("ed")
        )
        answered = await ed.call("demo:add", ARGUMENTS, request_id=request_id)
        (attackers,) = attack.restarted
        await withdrawn(attackers)

    assert answered["success"] is False, answered
    assert error_of(answered)["code"] == "INTERNAL_ERROR", answered
    assert f"Call '{request_id}' ended terminated" in error_of(answered)["message"]
    assert RUNS[request_id] == 0


async def test_asking_again_after_an_attackers_execution_of_the_request_gets_the_first_answer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """ToolClient.call promises that asking again with the same request id "returns the first
    answer, never runs twice". After ed's call ran, the attacker starts a new execution under its
    request id (ALLOW_DUPLICATE), which takes no proof and ends refused. ed asks again and is
    answered from the first execution (sum 3), never told "nothing ran" by the attacker's: a
    caller told that would call again under a new request id, and the tool would run twice."""
    people, request_id = math_people(), new_request_id()
    async with lockgate_worker(tools=[add], directory=people.directory):
        ed = ToolClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ed.call("demo:add", ARGUMENTS, request_id=request_id)
        await withdrawn(await held_back_call(temporal_client, task_queue, request_id, ARGUMENTS))
        asked_again = await ed.call("demo:add", ARGUMENTS, request_id=request_id)

    assert first["success"] is True and first["data"] == {"sum": 3}, first
    assert RUNS[request_id] == 1
    assert asked_again["success"] is True, asked_again
    assert asked_again["data"] == first["data"]
