"""An attacker's answers: replayed, spoofed, self-approved, aimed at old versions, or reset.

The attacker has namespace access and no private key and no worker secret: they read every
history, start any workflow type with any memo and search attributes, run their own worker on
their own task queue, send any signal or update, and reset runs. Findings of the security issue
played here, each on the real dev server:

- 3. Proofs replayed across executions: an answer (``decide``) or a ``resume`` read from one
  execution's history is refused by a new execution under the same workflow id, as an update
  (nothing written) and as a signal (refused into the trail); the honest run stays answerable.
- 4. Spoofed gates: a look-alike ``essay:review`` on the attacker's queue, dressed in lockgate's
  memo and search attributes, is not listed as pending, is neither signed for nor answered by an
  editor's client, and a proof an editor is tricked into signing against it answers no real run;
  a starter's forged gate memo on a real run is overwritten before the run does anything.
- 10. Four eyes: an editor who drove a round may not approve the gate it reopens; a graph with
  gates refuses an unsigned start, unless declared ``allow_unsigned_start``.
- 11. Older versions: a raw start asking for a version other than the newest served is refused.
- Reset: what ``temporal workflow reset`` to before an answer does with that answer, and that the
  effect of the node it leads to still happens once (the idempotency key survives the reset).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from enum import Enum
from typing import Annotated, Any, cast
from uuid import uuid4

import pytest
from pydantic import BaseModel
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from lockgate import Ask, Edge, GraphClient, LockgatePlugin, Route, Target, ToolContext, graph, tool
from lockgate.activities._activity_inputs import TOOL_ACTIVITY_PREFIX
from lockgate.contracts import RunView, TrailRow
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._search_attributes import LOCKGATE_AWAITING, LOCKGATE_GRAPH, LOCKGATE_STATE
from tests.helpers.attacker import (
    ESSAY_CHOICES,
    LookAlikeEssayReview,
    attackers_worker,
    look_alike_gate,
    start_look_alike,
)
from tests.helpers.graphs import (
    ALWAYS_FAILS,
    Ledger,
    OpenEssay,
    essay_people,
    event_types,
    eventually,
    signed_answer,
    trail_of,
)
from tests.helpers.reliability_graphs import DocReviewV1, DocReviewV2
from tests.helpers.support import (
    assert_nothing_written_but_a_workflow_task,
    failed_workflow_tasks,
    gate_of,
    outcome,
    parked_of,
    prove_start,
    temporal_cli,
    update_refused,
)

pytestmark = pytest.mark.timeout(60)

UPDATE_ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
TASK_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED

# --- Helpers ------------------------------------------------------------------------------------


async def send(client: Client, run_id: str, name: str, payload: Any) -> dict[str, Any]:
    """Sends ``payload`` as the update ``name`` as it is, past GraphClient's help."""
    try:
        result: dict[str, Any] = await client.get_workflow_handle(run_id).execute_update(
            name, payload, result_type=dict
        )
    except WorkflowUpdateFailedError as error:
        assert isinstance(error.cause, ApplicationError), error.cause
        return {"ok": False, "error": {"code": error.cause.type, "message": error.cause.message}}
    return result


async def history(client: Client, run_id: str, execution: str | None = None) -> list[HistoryEvent]:
    """The events of one execution of ``run_id`` (its latest when ``execution`` is None)."""
    handle = client.get_workflow_handle(run_id, run_id=execution)
    return list((await handle.fetch_history()).events)


async def accepted_payload(
    client: Client, run_id: str, update: str, execution: str | None = None
) -> Any:
    """What the update ``update`` accepted on ``run_id`` carried, as anyone reads it in history."""
    for event in await history(client, run_id, execution):
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request
        if event.event_type == UPDATE_ACCEPTED and request.input.name == update:
            return client.data_converter.payload_converter.from_payload(
                request.input.args.payloads[0]
            )
    raise AssertionError(f"no accepted {update!r} update in the history of {run_id}")


async def scheduled(client: Client, run_id: str, execution: str | None = None) -> list[str]:
    """The tools (node activities) one execution of ``run_id`` scheduled, in order."""
    names = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in await history(client, run_id, execution)
        if event.event_type == SCHEDULED
    ]
    prefix = TOOL_ACTIVITY_PREFIX
    return [name.removeprefix(prefix) for name in names if name.startswith(prefix)]


def first_node_event(client: Client, events: list[HistoryEvent]) -> int:
    """Where a run first ran a tool: its first tool activity, scheduled or local (a marker)."""
    converter = client.data_converter.payload_converter
    for index, event in enumerate(events):
        if event.event_type == SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED and "data" in (
            details := event.marker_recorded_event_attributes.details
        ):
            name = str(converter.from_payload(details["data"].payloads[0], dict)["activity_type"])
        else:
            continue
        if name.startswith(TOOL_ACTIVITY_PREFIX):
            return index
    raise AssertionError("the run ran no tool")


async def refused_signal_row(reader: GraphClient, run_id: str, name: str) -> TrailRow:
    """The trail row the run wrote for a refused ``name`` signal, once it has."""
    shown = await eventually(
        lambda: reader.show(run_id),
        lambda shown: any(row["operation"] == f"signal:{name}" for row in shown["trail"]),
        what=f"the refused {name} signal in the trail",
    )
    return next(row for row in shown["trail"] if row["operation"] == f"signal:{name}")


async def replay(
    client: Client, reader: GraphClient, run_id: str, name: str, proof: Any, sent_as: str
) -> tuple[str, str]:
    """Sends a proof again as an update or a signal; returns the refusal's (code, sentence)."""
    if sent_as == "update":
        before = await event_types(client, run_id)
        refused = await send(client, run_id, name, proof)
        assert refused.get("ok") is False, refused
        # An update refused in its validator writes nothing of itself.
        assert_nothing_written_but_a_workflow_task(before, await event_types(client, run_id))
        return refused["error"]["code"], refused["error"]["message"]
    await client.get_workflow_handle(run_id).signal(name, proof)
    row = await refused_signal_row(reader, run_id, name)
    assert row["outcome"] == "refused"
    assert row["by"]["actor"] == proof["principal"]
    assert row["code"] is not None
    return row["code"], row["why"]


SENT_AS = [pytest.param("update", id="as an update"), pytest.param("signal", id="as a signal")]


# --- 3. Proofs replayed across executions ---------------------------------------------------------


AGAIN = [
    pytest.param(ALWAYS_FAILS, id="the same essay again"),
    pytest.param({**ALWAYS_FAILS, "title": "Currents"}, id="another essay"),
]


@pytest.mark.parametrize("sent_as", SENT_AS)
@pytest.mark.parametrize("second_inputs", AGAIN)
async def test_an_editors_answer_replayed_on_a_new_execution_of_the_same_id_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    sent_as: str,
    second_inputs: dict[str, str],
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        first = await ada.start(EssayReview, ALWAYS_FAILS)
        run_id = first["run_id"]
        published = await ed.decide(run_id, "publish_as_is")
        stolen = await accepted_payload(temporal_client, run_id, "decide", first["execution"])

        second = await ada.start(EssayReview, second_inputs, run_id=run_id)
        code, sentence = await replay(temporal_client, ada, run_id, "decide", stolen, sent_as)
        untouched = await ada.show(run_id)
        before_answer = await scheduled(temporal_client, run_id)
        answered = await ed.decide(run_id, "publish_as_is")
        failed = await failed_workflow_tasks(temporal_client.get_workflow_handle(run_id))

    assert published["status"] == "finished", published
    assert stolen["principal"] == "ed"
    assert stolen["authorizes"]["gate"] == "editor_call#1"
    assert second["status"] == "waiting", second
    assert second["execution"] != first["execution"]
    assert gate_of(second)["gate"] == stolen["authorizes"]["gate"]
    # For the same essay the proof names this very graph, run, gate and subject: only the
    # execution tells the two apart.
    same_subject = answer_binding(gate_of(second), "publish_as_is")["subject"]
    assert (same_subject == stolen["authorizes"]["subject"]) is (second_inputs == ALWAYS_FAILS)
    assert code == "GATE_NOT_PENDING"
    assert sentence == (
        f"The proof answers another execution of '{run_id}' than the one waiting now (a run "
        "that ended, or one started again under the same id): sign an answer to this one."
    )
    # Nothing was published by the replay: the gate still waits, and publish never ran.
    assert untouched["status"] == "waiting"
    assert gate_of(untouched)["gate"] == "editor_call#1"
    assert untouched["fields"]["url"] is None
    assert "essay:publish" not in before_answer
    # The honest run is still answerable: ed's fresh answer publishes it.
    assert answered["status"] == "finished", answered
    assert answered["execution"] == second["execution"]
    assert trail_of(answered)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert answered["fields"]["url"] == f"https://essays.example/{second_inputs['title'].lower()}"
    assert failed == []


@pytest.mark.parametrize("sent_as", SENT_AS)
async def test_a_resume_replayed_on_a_new_execution_of_the_same_id_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, sent_as: str
) -> None:
    people = Identities({"ada": {}, "poppy": {"scopes": ["ledger:post"]}})
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        poppy = GraphClient(temporal_client, task_queue, signer=people.signer("poppy"))
        first = await ada.start(Ledger, {"entry": "Paid the baker"})
        run_id = first["run_id"]
        posted = await poppy.resume(run_id)
        stolen = await accepted_payload(temporal_client, run_id, "resume", first["execution"])

        second = await ada.start(Ledger, {"entry": "Paid the miller"}, run_id=run_id)
        code, sentence = await replay(temporal_client, ada, run_id, "resume", stolen, sent_as)
        untouched = await ada.show(run_id)
        before_resume = await scheduled(temporal_client, run_id)
        resumed = await poppy.resume(run_id)
        failed = await failed_workflow_tasks(temporal_client.get_workflow_handle(run_id))

    assert first["status"] == "parked" and parked_of(first)["node"] == "post", first
    assert posted["status"] == "finished" and posted["fields"]["posted"] is True, posted
    assert stolen["principal"] == "poppy"
    assert second["status"] == "parked" and parked_of(second)["node"] == "post", second
    assert second["execution"] != first["execution"]
    assert code == "NOTHING_TO_RESUME"
    assert sentence == (
        f"The proof resumes another execution of '{run_id}' than the one running now (a run "
        "that ended, or one started again under the same id): sign a resume of this one."
    )
    # Nothing was posted by the replay: the run is still parked at post.
    assert untouched["status"] == "parked"
    assert untouched["fields"]["posted"] is False
    # post was tried once, as ada, and refused (that parked the run); it never ran since.
    assert before_resume == ["ledger:draft", "ledger:post"]
    assert [row for row in trail_of(untouched) if row[:2] == ("post", "ran")] == []
    # The honest run is still resumable: poppy's fresh resume posts it.
    assert resumed["status"] == "finished", resumed
    assert trail_of(resumed)[-3:] == [
        ("post", "resumed", "poppy"),
        ("post", "ran", "poppy"),
        ("file", "ran", "poppy"),
    ]
    assert resumed["fields"]["posted"] is True
    assert failed == []


# --- 4. Spoofed gates ---------------------------------------------------------------------------


async def test_a_look_alike_essay_review_on_another_queue_is_not_listed_as_pending(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, attacker_queue = essay_people(), f"{task_queue}-attacker"
    spoof_id = f"essay:review-{uuid4().hex[:12]}"
    async with (
        lockgate_worker(graphs=[EssayReview], directory=people.directory),
        attackers_worker(temporal_client, attacker_queue),
    ):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        real = await ada.start(EssayReview, ALWAYS_FAILS)
        spoof = await start_look_alike(temporal_client, attacker_queue, spoof_id)
        # The look-alike is there to be found by anything that trusts memo and search attributes.
        dressed = (
            f"{LOCKGATE_STATE.name} = 'waiting' AND {LOCKGATE_AWAITING.name} = 'editor' AND "
            f"ExecutionStatus = 'Running' AND WorkflowId = '{spoof_id}'"
        )
        await eventually(
            lambda: _ids(temporal_client, dressed),
            lambda ids: ids == [spoof_id],
            what="the look-alike visible with lockgate's search attributes",
        )
        rows = await eventually(
            lambda: ed.pending(of="editor"),
            lambda rows: any(row["run_id"] == real["run_id"] for row in rows),
            what="the real run listed as pending",
        )
        # Even a client pointed at the attacker's queue does not list it: its memo names no
        # execution the server gave it (a starter writes memo before the run id exists).
        on_its_queue = await GraphClient(temporal_client, attacker_queue).pending(of="editor")
        claimed = await spoof.query(LookAlikeEssayReview.show)
        # The honest run is still answerable.
        done = await ed.decide(real["run_id"], "publish_as_is")

    assert [row["run_id"] for row in rows] == [real["run_id"]]
    assert [row["run_id"] for row in on_its_queue] == []
    assert claimed["status"] == "waiting"
    assert done["status"] == "finished" and done["fields"]["url"], done


async def memo_of(handle: Any) -> dict[str, Any]:
    memo: dict[str, Any] = await (await handle.describe()).memo()
    return memo


async def _ids(client: Client, query: str) -> list[str]:
    return [execution.id async for execution in client.list_workflows(query)]


async def test_an_editors_client_neither_signs_for_nor_answers_a_look_alike_on_another_queue(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, attacker_queue = essay_people(), f"{task_queue}-attacker"
    spoof_id = f"essay:review-{uuid4().hex[:12]}"
    async with (
        lockgate_worker(graphs=[EssayReview], directory=people.directory),
        attackers_worker(temporal_client, attacker_queue),
    ):
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        spoof = await start_look_alike(temporal_client, attacker_queue, spoof_id)
        # The look-alike answers lockgate's query as a waiting essay:review run would.
        claimed = await spoof.query("awaiting", result_type=dict)
        signed = await ed.sign_decide(spoof_id, "publish_as_is")
        answered = await ed.decide(spoof_id, "publish_as_is")
        # The same, handed what it reports shaped as a view of a run waiting at that gate.
        shown = {"run_id": spoof_id, "execution": claimed["execution"], "awaiting": claimed["gate"]}
        signed_shown = await ed.sign_decide(spoof_id, "publish_as_is", shown=shown)
        answered_shown = await ed.decide(spoof_id, "publish_as_is", shown=shown)
        spoof_events = [event.event_type for event in await history(temporal_client, spoof_id)]
        still = await spoof.describe()

    assert claimed["gate"]["gate"] == "editor_call#1"
    for refused in (signed, answered, signed_shown, answered_shown):
        assert refused["ok"] is False, refused
        assert refused["error"]["code"] == "NOT_FOUND"
        assert refused["error"]["message"] == (
            f"Run '{spoof_id}' runs on task queue '{attacker_queue}', not on '{task_queue}' "
            "where this client's lockgate workers are: it is not a run of theirs, whatever it "
            "calls itself, and nothing was signed for it."
        )
        assert "signature" not in refused and "authorizes" not in refused
    # Nothing reached the look-alike: no update in its history, and it still waits.
    assert UPDATE_ACCEPTED not in spoof_events
    assert still.status is not None and still.status.name == "RUNNING"


async def test_a_proof_signed_against_a_look_alike_answers_no_real_run_under_its_id(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, attacker_queue = essay_people(), f"{task_queue}-attacker"
    run_id = f"essay:review-{uuid4().hex[:12]}"
    async with (
        lockgate_worker(graphs=[EssayReview], directory=people.directory),
        attackers_worker(temporal_client, attacker_queue),
    ):
        spoof = await start_look_alike(temporal_client, attacker_queue, run_id, writes_memo=True)
        await eventually(
            lambda: memo_of(spoof),
            lambda memo: (
                (memo.get("lockgate_gate") or {}).get("execution") == spoof.first_execution_run_id
            ),
            what="the look-alike's gate memo naming its own execution",
        )
        # ed is pointed at the attacker's queue, where the look-alike's word is taken: he signs.
        tricked = GraphClient(temporal_client, attacker_queue, signer=people.signer("ed"))
        fooled = await tricked.decide(run_id, "publish_as_is")
        assert fooled["status"] == "finished", fooled
        assert (await outcome(spoof))["status"] == "finished"
        stolen = await accepted_payload(
            temporal_client, run_id, "decide", spoof.first_execution_run_id
        )

        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        real = await ada.start(EssayReview, ALWAYS_FAILS, run_id=run_id)
        as_update = await send(temporal_client, run_id, "decide", stolen)
        await temporal_client.get_workflow_handle(run_id).signal("decide", stolen)
        as_signal = await refused_signal_row(ada, run_id, "decide")
        untouched = await ada.show(run_id)
        publishes = (await scheduled(temporal_client, run_id)).count("essay:publish")
        done = await ed.decide(run_id, "publish_as_is")
        failed = await failed_workflow_tasks(temporal_client.get_workflow_handle(run_id))

    # The look-alike got everything right but the execution, which the server assigns.
    assert stolen["principal"] == "ed"
    assert stolen["authorizes"] == {
        **answer_binding(gate_of(real), "publish_as_is"),
        "execution": spoof.first_execution_run_id,
    }
    assert real["execution"] != spoof.first_execution_run_id
    another_execution = f"The proof answers another execution of '{run_id}'"
    assert as_update["error"]["code"] == "GATE_NOT_PENDING"
    assert as_update["error"]["message"].startswith(another_execution)
    assert as_signal["code"] == "GATE_NOT_PENDING"
    assert as_signal["why"].startswith(another_execution)
    assert untouched["status"] == "waiting" and untouched["fields"]["url"] is None
    assert publishes == 0
    assert done["status"] == "finished", done
    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert failed == []


@pytest.mark.parametrize("signed", [True, False], ids=["runs", "refused"])
async def test_a_version_a_starter_claims_in_the_memo_is_put_right_by_the_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, signed: bool
) -> None:
    people = essay_people()
    run_id = f"essay:review-{uuid4().hex[:12]}"
    inputs = dict(ALWAYS_FAILS)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        handle = await temporal_client.start_workflow(
            "essay:review",
            # Unsigned, a graph with gates refuses to start: the run ends refused at once.
            StartGraphInput(inputs=inputs, signed=signed),
            id=run_id,
            task_queue=task_queue,
            result_type=dict,
            memo={"lockgate_version": 7},
        )
        if signed:
            await prove_start(handle, people.signer("ada"), inputs)
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        settled = await eventually(
            lambda: ada.show(run_id),
            lambda shown: shown.get("status") in ("waiting", "refused"),
            what="the run waiting at its gate, or refused",
        )
        memo = await (await handle.describe()).memo()

    assert settled["status"] == ("waiting" if signed else "refused")
    assert memo["lockgate_version"] == 1


async def test_a_forged_gate_memo_written_at_start_is_overwritten_before_the_run_does_anything(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    run_id = f"essay:review-{uuid4().hex[:12]}"
    # What the starter claims: the run waits for an editor, anyone may publish, mallory asked.
    forged = look_alike_gate(run_id, "made-up") | {
        "requester": "mallory",
        "makers": [],
        "choices": [{**ESSAY_CHOICES[0], "needs": []}, *ESSAY_CHOICES[1:]],
    }
    inputs = dict(ALWAYS_FAILS)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        handle = await temporal_client.start_workflow(
            "essay:review",
            StartGraphInput(inputs=inputs, signed=True),
            id=run_id,
            task_queue=task_queue,
            result_type=dict,
            memo={"lockgate_gate": forged},
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(LOCKGATE_GRAPH, "essay:review"),
                    SearchAttributePair(LOCKGATE_STATE, "waiting"),
                    SearchAttributePair(LOCKGATE_AWAITING, "editor"),
                ]
            ),
        )
        await prove_start(handle, people.signer("ada"), inputs)
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        waiting = await eventually(
            lambda: ada.show(run_id),
            lambda shown: shown["status"] == "waiting",
            what="the run waiting at its real gate",
        )
        events = await history(temporal_client, run_id)
        memo = await (await handle.describe()).memo()
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        done = await ed.decide(run_id, "publish_as_is")

    # The run wrote over the forged gate before it ran its first node (write, a local activity).
    kinds = [event.event_type for event in events]
    first_memo = kinds.index(EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED)
    assert first_memo < first_node_event(temporal_client, events)
    upserted = events[first_memo].workflow_properties_modified_event_attributes.upserted_memo
    converter = temporal_client.data_converter.payload_converter
    assert converter.from_payload(upserted.fields["lockgate_gate"]) is None
    # And over the forged state: "running" before the first node, not the starter's "waiting".
    first_upsert = next(
        index
        for index, event in enumerate(events)
        if LOCKGATE_STATE.name
        in event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
    )
    assert first_upsert < first_node_event(temporal_client, events)
    indexed = events[first_upsert].upsert_workflow_search_attributes_event_attributes
    state = indexed.search_attributes.indexed_fields[LOCKGATE_STATE.name]
    assert converter.from_payload(state) == "running"
    # Where it waits now, its memo holds the gate it opened, not the forged one.
    gate = memo["lockgate_gate"]
    assert gate["requester"] == "ada" and gate["makers"] == ["ada"]
    assert gate["execution"] == waiting["execution"]
    assert gate["choices"] == ESSAY_CHOICES
    assert {key: gate[key] for key in gate_of(waiting) if key in gate} == {
        key: value for key, value in gate_of(waiting).items() if key in gate
    }
    assert done["status"] == "finished", done
    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert await failed_workflow_tasks(handle) == []


async def test_a_forged_gate_memo_on_a_run_no_worker_has_taken_yet_is_not_listed_as_pending(
    temporal_client: Client, task_queue: str
) -> None:
    # No worker serves the queue: the run sits as its starter dressed it, waiting for an editor.
    people = essay_people()
    run_id = f"essay:review-{uuid4().hex[:12]}"
    forged = look_alike_gate(run_id, "made-up") | {"requester": "mallory", "makers": []}
    handle = await temporal_client.start_workflow(
        "essay:review",
        {"inputs": ALWAYS_FAILS},
        id=run_id,
        task_queue=task_queue,
        memo={"lockgate_gate": forged},
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(LOCKGATE_GRAPH, "essay:review"),
                SearchAttributePair(LOCKGATE_STATE, "waiting"),
                SearchAttributePair(LOCKGATE_AWAITING, "editor"),
            ]
        ),
    )
    try:
        query = f"WorkflowId = '{run_id}' AND {LOCKGATE_STATE.name} = 'waiting'"
        listed_by_visibility = await eventually(
            lambda: _ids(temporal_client, query),
            lambda ids: ids == [run_id],
            what="the dressed-up run in visibility",
        )
        reader = GraphClient(temporal_client, task_queue, directory=people.directory)
        rows = await reader.pending(of="editor", viewer="ed")
    finally:
        await handle.terminate("a test's dressed-up run")

    # Its memo names no execution the server gave it (the starter could not know the run id).
    assert listed_by_visibility == [run_id]
    assert [row["run_id"] for row in rows] == []


# --- 10. Four eyes --------------------------------------------------------------------------------


async def an_editor_drove_a_round(
    temporal_client: Client, task_queue: str, people: Identities
) -> tuple[GraphClient, RunView]:
    """ada starts essay:review; ed answers one_more_round, so ed drives write and grade, and the
    editor gate opens again at once (the budget is spent)."""
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
    run = await ada.start(EssayReview, ALWAYS_FAILS)
    again = await ed.decide(run["run_id"], "one_more_round")
    assert again["status"] == "waiting", again
    assert gate_of(again)["gate"] == "editor_call#2"
    assert trail_of(again)[-3:] == [
        ("editor_call", "answered", "ed"),
        ("write", "ran", "ed"),
        ("grade", "ran", "ed"),
    ]
    return ed, again


async def test_an_editor_who_drove_a_round_cannot_approve_the_gate_it_reopens(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people(eve={"roles": ["editor"], "scopes": ["essay:publish"]})
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ed, again = await an_editor_drove_a_round(temporal_client, task_queue, people)
        before = await history(temporal_client, again["run_id"])
        refused = await ed.decide(again["run_id"], "publish_as_is")
        after = await history(temporal_client, again["run_id"])
        eve = GraphClient(temporal_client, task_queue, signer=people.signer("eve"))
        done = await eve.decide(again["run_id"], "publish_as_is")

    assert gate_of(again)["makers"] == ["ed"]
    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert refused["error"]["message"] == (
        "ed drove work this gate reviews, so it cannot approve it: the work and its approval "
        "need two different people."
    )
    assert len(after) == len(before)
    assert done["status"] == "finished", done
    assert trail_of(done)[-2:] == [("editor_call", "answered", "eve"), ("publish", "ran", "eve")]


class Round(str, Enum):
    AGAIN = "again"
    DONE = "done"


class Ticked(BaseModel):
    rounds: int


@tool("turns:tick", "Do one more round of work.")
async def tick_round(rounds: int) -> Ticked:
    return Ticked(rounds=rounds + 1)


@tool("turns:close", "Close the work.")
async def close_rounds(rounds: int) -> None:
    return None


@graph(
    "turns:review",
    "A round of work, then an editor: again comes back to the same gate, done closes it.",
    start=tick_round,
    edges=[Edge(tick_round, Round)],
    routes=[Route(Round.AGAIN, to=tick_round), Route(Round.DONE, to=close_rounds)],
    asks=[Ask(Round, of="editor", because="An editor judges each round.")],
)
class Turns(BaseModel):
    rounds: Annotated[int, Target()] = 0


async def test_a_gate_reviews_the_work_since_the_last_answer_so_editors_can_take_turns(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people(eve={"roles": ["editor"]})
    async with lockgate_worker(graphs=[Turns], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        eve = GraphClient(temporal_client, task_queue, signer=people.signer("eve"))
        first = await ada.start(Turns, {})
        second = await ed.decide(first["run_id"], "again")
        refused_ed = await ed.decide(first["run_id"], "again")
        third = await eve.decide(first["run_id"], "again")
        refused_eve = await eve.decide(first["run_id"], "done")
        done = await ed.decide(first["run_id"], "done")

    # Each gate reviews the round since the previous answer: whoever drove it may not judge it,
    # and whoever drove only an earlier round may. The requester, ada, may never.
    assert gate_of(first)["makers"] == ["ada"]
    assert gate_of(second)["makers"] == ["ed"]
    assert refused_ed["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert gate_of(third)["makers"] == ["eve"]
    assert refused_eve["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert done["status"] == "finished", done
    assert done["fields"]["rounds"] == 3
    assert trail_of(done)[-2:] == [("round", "answered", "ed"), ("close", "ran", "ed")]


async def test_pending_tells_an_editor_who_drove_a_round_he_may_not_answer_as_a_maker(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        _, again = await an_editor_drove_a_round(temporal_client, task_queue, people)
    reader = GraphClient(temporal_client, task_queue, directory=people.directory)
    rows = await eventually(
        lambda: reader.pending(of="editor", viewer="ed"),
        lambda rows: any(
            row["run_id"] == again["run_id"] and row["gate"] == "editor_call#2" for row in rows
        ),
        what="the reopened gate listed as pending",
    )

    row = next(row for row in rows if row["run_id"] == again["run_id"])
    assert row["makers"] == ["ed"]
    assert row["viewer"] == {
        "principal": "ed",
        "is_requester": False,
        "made_the_work": True,
        "verified": True,
    }
    assert {(choice["may"], choice["because"]) for choice in row["choices"]} == {(False, "maker")}
    assert row["choices"][0]["why_not"] == (
        "ed drove work this gate reviews, so it cannot approve it: the work and its approval "
        "need two different people"
    )


async def test_an_unsigned_raw_start_of_a_graph_with_gates_is_refused_and_runs_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    run_id = f"essay:review-{uuid4().hex[:12]}"
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        handle = await temporal_client.start_workflow(
            "essay:review",
            StartGraphInput(inputs=dict(ALWAYS_FAILS)),
            id=run_id,
            task_queue=task_queue,
            result_type=dict,
        )
        refused = await outcome(handle)
        ran = await scheduled(temporal_client, run_id)
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        honest = await ada.start(EssayReview, ALWAYS_FAILS)

    assert refused["status"] == "refused"
    assert refused["error"]["code"] == "UNAUTHORIZED"
    assert (
        "'essay:review' has human gates, so a run starts only from a signed start"
        in (refused["error"]["message"])
    )
    assert refused["trail"] == []
    assert ran == []
    assert honest["status"] == "waiting" and honest["requester"]["actor"] == "ada", honest


async def test_an_open_graph_started_unsigned_is_answered_by_any_editor_who_drove_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[OpenEssay], directory=people.directory):
        anonymous = GraphClient(temporal_client, task_queue)
        run = await anonymous.start(OpenEssay, ALWAYS_FAILS)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        done = await ed.decide(run["run_id"], "publish_as_is")

    assert run["status"] == "waiting", run
    assert run["requester"]["actor"] == "unverified:temporal"
    assert gate_of(run)["requester"] == "unverified:temporal"
    # Unverified drivers are no makers: nobody who could approve made the work.
    assert gate_of(run)["makers"] == []
    assert done["status"] == "finished", done
    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert done["fields"]["url"] == "https://essays.example/tides"


# --- 11. Older versions -----------------------------------------------------------------------


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed by ada"])
async def test_a_raw_start_asking_for_an_older_version_is_refused_and_runs_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, signed: bool
) -> None:
    people = Identities({"ada": {}, "ed": {"roles": ["editor"]}})
    run_id = f"doc:review-{uuid4().hex[:12]}"
    inputs = {"title": "Tides"}
    start: dict[str, Any] = {"inputs": inputs, "version": 1, "signed": signed}
    plugin = LockgatePlugin(
        graphs=[DocReviewV1, DocReviewV2], directory=people.directory, secret=people.secret
    )
    async with lockgate_worker(plugin=plugin):
        handle = await temporal_client.start_workflow(
            "doc:review", start, id=run_id, task_queue=task_queue, result_type=dict
        )
        if signed:
            # Refused at its start, the run takes no proof either (its validator refuses it, or
            # the run has closed by the time it arrives): nothing runs for anyone.
            with pytest.raises((WorkflowUpdateFailedError, RPCError)) as proof_refused:
                await prove_start(handle, people.signer("ada"), inputs, version=1)
            if isinstance(proof_refused.value, WorkflowUpdateFailedError):
                assert update_refused(proof_refused.value)["code"] == "GATE_NOT_PENDING"
        refused = await outcome(handle)
        ran = await scheduled(temporal_client, run_id)
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        honest = await ada.start("doc:review", inputs)
        failed = await failed_workflow_tasks(handle)

    assert refused["status"] == "refused"
    assert refused["error"]["code"] == "VALIDATION_ERROR"
    assert refused["error"]["message"] == (
        "New runs of 'doc:review' start on its newest version (2); version 1 only finishes the "
        "runs that started on it."
    )
    assert refused["trail"] == []
    assert ran == []
    assert failed == []
    assert honest["status"] == "waiting" and honest["version"] == 2, honest


# --- Reset ---------------------------------------------------------------------------------------

ATTEMPTS: Counter[str] = Counter()
"""notice:publish's calls, by idempotency key."""
EFFECTS: dict[str, str] = {}
"""What notice:publish published, by idempotency key: a key seen before publishes nothing."""


class Release(str, Enum):
    PUBLISH = "publish"
    SHELVE = "shelve"


class NoticeDraft(BaseModel):
    text: str


class Posted(BaseModel):
    url: str


@tool("notice:draft", "Draft the notice.")
async def draft_notice(title: str) -> NoticeDraft:
    return NoticeDraft(text=f"{title}, drafted")


@tool(
    "notice:publish", "Publish the notice, once per key.", scopes=["notice:publish"], mutating=True
)
async def publish_notice(title: str, text: str, ctx: ToolContext) -> Posted:
    key = str(ctx.extra["idempotency_key"])
    ATTEMPTS[key] += 1
    if key not in EFFECTS:
        EFFECTS[key] = text
    return Posted(url=f"https://notices.example/{title}")


@tool("notice:shelve", "Shelve the notice unpublished.", mutating=True)
async def shelve_notice(title: str) -> None:
    return None


@graph(
    "notice:release",
    "Draft a notice; an editor publishes it or shelves it.",
    start=draft_notice,
    edges=[Edge(draft_notice, Release)],
    routes=[Route(Release.PUBLISH, to=publish_notice), Route(Release.SHELVE, to=shelve_notice)],
    asks=[Ask(Release, of="editor", because="A notice goes out only once an editor says so.")],
)
class Notice(BaseModel):
    title: Annotated[str, Target()]
    text: str = ""
    url: str | None = None


def notice_people() -> Identities:
    return Identities({"ada": {}, "ed": {"roles": ["editor"], "scopes": ["notice:publish"]}})


async def reset_before(
    client: Client, run_id: str, answered: HistoryEvent, *reapply: str
) -> tuple[str, str]:
    """Resets ``run_id`` with ``temporal workflow reset`` to the workflow task that took the
    answer ``answered`` (the last one completed before it): history from there on is dropped.
    Returns (the reset run's id, the run id it replaced)."""
    events = await history(client, run_id)
    before = max(
        event.event_id
        for event in events
        if event.event_type == TASK_COMPLETED and event.event_id < answered.event_id
    )
    old_run = (await client.get_workflow_handle(run_id).describe()).run_id
    await temporal_cli(
        client, "workflow", "reset", "--workflow-id", run_id, "--event-id", str(before),
        "--reason", "test: reset before the answer", *reapply,
    )  # fmt: skip
    new_run = (await client.get_workflow_handle(run_id).describe()).run_id
    assert new_run != old_run
    return new_run, old_run


def the_answer(events: list[HistoryEvent], name: str) -> HistoryEvent:
    """The event that brought the answer ``name``: its UpdateAccepted, or its Signaled."""
    for event in events:
        update = event.workflow_execution_update_accepted_event_attributes.accepted_request
        signal = event.workflow_execution_signaled_event_attributes
        if (event.event_type == UPDATE_ACCEPTED and update.input.name == name) or (
            event.event_type == SIGNALED and signal.signal_name == name
        ):
            return event
    raise AssertionError(f"no {name!r} answer in the history")


async def published(
    temporal_client: Client, task_queue: str, people: Identities, sent_as: str
) -> tuple[RunView, Mapping[str, Any]]:
    """ada starts notice:release; ed answers publish (as an update or a signal); the run
    publishes and finishes. Returns (the start, the finished run)."""
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    run = await ada.start(Notice, {"title": f"tides-{uuid4().hex[:6]}"})
    assert run["status"] == "waiting", run
    if sent_as == "update":
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        done = await ed.decide(run["run_id"], "publish")
    else:
        proof = signed_answer(people.signer("ed"), run, "publish")
        await temporal_client.get_workflow_handle(run["run_id"]).signal("decide", proof)
        done = cast(
            RunView,
            await outcome(temporal_client.get_workflow_handle(run["run_id"], result_type=dict)),
        )
    assert done["status"] == "finished", done
    return run, done


def publish_key(run: RunView) -> str:
    """The idempotency key lockgate hands notice:publish on the run's first visit to publish."""
    return f"{run['run_id']}/{run['execution']}:publish:1"


async def finished_again(client: Client, run_id: str, new_run: str) -> dict[str, Any]:
    handle = client.get_workflow_handle(run_id, run_id=new_run, result_type=dict)
    result: dict[str, Any] = await outcome(handle)
    assert await failed_tasks_but_the_reset(handle) == []
    return result


async def failed_tasks_but_the_reset(handle: Any) -> list[HistoryEvent]:
    """Failed workflow tasks, but for the one the reset itself fails to cut history there."""
    reset = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
    return [
        event
        for event in await failed_workflow_tasks(handle)
        if event.workflow_task_failed_event_attributes.cause != reset
    ]


def assert_published_once(run: RunView, first: Mapping[str, Any], again: Mapping[str, Any]) -> None:
    """The reset run finished as the first did, in the same execution, with publish run twice
    under one key and its effect applied once."""
    key = publish_key(run)
    assert again["status"] == "finished", again
    assert again["execution"] == run["execution"]
    assert trail_of(again)[-2:] == [("release", "answered", "ed"), ("publish", "ran", "ed")]
    assert again["fields"]["url"] == first["fields"]["url"]
    assert [seen for seen in ATTEMPTS if seen.startswith(f"{run['run_id']}/")] == [key]
    assert ATTEMPTS[key] == 2
    assert EFFECTS[key] == f"{run['fields']['title']}, drafted"


async def test_a_reset_to_before_an_answer_given_as_an_update_reapplies_it_and_publishes_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """``temporal workflow reset`` to the workflow task that took ed's ``decide`` update drops
    that task and all that followed (the answer, the publish, the end). The server REAPPLIES the
    update to the reset run (an UpdateAdmitted event), and the run accepts it again: the same
    execution (a reset keeps the first run id), the same gate and subject, ed's proof unspent in
    the history that remains. publish runs a second time with THE SAME idempotency key
    ``<workflow id>/<execution>:publish:1``, so a tool keyed on it publishes once."""
    people = notice_people()
    async with lockgate_worker(graphs=[Notice], directory=people.directory):
        run, first = await published(temporal_client, task_queue, people, "update")
        attempts_before = ATTEMPTS[publish_key(run)]
        answer = the_answer(await history(temporal_client, run["run_id"]), "decide")
        new_run, _ = await reset_before(temporal_client, run["run_id"], answer)
        again = await finished_again(temporal_client, run["run_id"], new_run)
        events = await history(temporal_client, run["run_id"])
        kinds = [event.event_type for event in events]
        accepted = [
            event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
            for event in events
            if event.event_type == UPDATE_ACCEPTED
        ]

    assert attempts_before == 1
    # Reapplied: admitted to the reset run, then accepted by it, once (its first acceptance
    # went with the tasks the reset dropped). The start proof, before the reset point, stays.
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ADMITTED in kinds
    assert len(accepted) == 2 and accepted.count("start") == 1
    assert_published_once(run, first, again)


async def test_a_reset_to_before_an_answer_given_as_a_signal_reapplies_it_and_publishes_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """``temporal workflow reset`` to the last workflow task completed before ed's ``decide``
    signal (the task that opened the gate) drops the signal and all that followed. The server
    REAPPLIES the signal to the reset run by default (a new Signaled event, after the reset
    point): the re-run task opens the same gate again (same execution, same subject), the run
    judges the signal again and accepts it (ed's proof is unspent in what remains of the
    history), and publish runs a second time with the same idempotency key: the effect happens
    once."""
    people = notice_people()
    async with lockgate_worker(graphs=[Notice], directory=people.directory):
        run, first = await published(temporal_client, task_queue, people, "signal")
        attempts_before = ATTEMPTS[publish_key(run)]
        answer = the_answer(await history(temporal_client, run["run_id"]), "decide")
        new_run, _ = await reset_before(temporal_client, run["run_id"], answer)
        again = await finished_again(temporal_client, run["run_id"], new_run)
        reset_events = await history(temporal_client, run["run_id"])

    assert attempts_before == 1
    # Reapplied: one Signaled event in the reset run, after the reset point, judged there.
    kinds = [event.event_type for event in reset_events]
    assert kinds.count(SIGNALED) == 1
    assert kinds.index(SIGNALED) > kinds.index(EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
    judged = kinds.index(SCHEDULED, kinds.index(SIGNALED))
    name = reset_events[judged].activity_task_scheduled_event_attributes.activity_type.name
    assert name == "lockgate.judge_signals"
    assert_published_once(run, first, again)


async def test_a_reset_that_drops_the_answer_waits_again_and_the_same_proof_publishes_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """``temporal workflow reset --reapply-exclude Update`` to the workflow task that took ed's
    answer: nothing is reapplied, so the reset run waits again at the same gate (``release#1``,
    same execution, same subject). ed's same proof, sent again within its
    window, is accepted (it was spent only in the history the reset dropped), and publish runs a
    second time with the same idempotency key: the effect happens once."""
    people = notice_people()
    async with lockgate_worker(graphs=[Notice], directory=people.directory):
        run, first = await published(temporal_client, task_queue, people, "update")
        run_id = run["run_id"]
        events = await history(temporal_client, run_id)
        proof = await accepted_payload(temporal_client, run_id, "decide")
        await reset_before(
            temporal_client, run_id, the_answer(events, "decide"), "--reapply-exclude", "Update"
        )
        reader = GraphClient(temporal_client, task_queue)
        waiting = await eventually(
            lambda: reader.show(run_id),
            lambda shown: shown.get("status") == "waiting",
            what="the reset run waiting at its gate",
        )
        again = await send(temporal_client, run_id, "decide", proof)
        result = await outcome(temporal_client.get_workflow_handle(run_id, result_type=dict))

    assert waiting["execution"] == run["execution"]
    assert waiting["awaiting"] == run["awaiting"]
    assert gate_of(waiting)["gate"] == "release#1"
    assert waiting["fields"]["url"] is None
    assert again["status"] == "finished", again
    assert result["status"] == "finished"
    assert_published_once(run, first, again)
