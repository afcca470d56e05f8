"""What a graph run writes to Temporal's visibility when a gate is answered: only what someone
could read before the run's next write says it again.

``pending`` and ``list`` believe a gate only from the memo the run's worker wrote (its search
attributes only find the candidates), so an answer writes no search attributes: they keep
naming the gate just answered until the next gate or park writes them, which a gate asking the
same role finds already written. The memo says the gate closed by the time anyone could read it:
in the very workflow task that sends the run on to its next node, and not at all where the
answer opens another gate or ends the run at once (that gate's memo, or the run's end, says so).
``ada`` writes, ``ed`` and ``rita`` are editors who may publish.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from lockgate.workflows._search_attributes import LOCKGATE_AWAITING, LOCKGATE_STATE
from tests.graphs.test_ending_routes import EndingRefund, pay, quote, refund_people, screen
from tests.helpers.graphs import ALWAYS_FAILS, essay_people, eventually
from tests.helpers.support import gate_of

PEOPLE = essay_people(rita={"roles": ["editor"], "scopes": ["essay:publish"]})
UPSERT = EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
MEMO = EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
TASK_DONE = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED


async def test_answers_write_no_search_attributes_and_pending_still_shows_only_the_open_gate(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    ada, ed, rita = (
        GraphClient(temporal_client, task_queue, signer=PEOPLE.signer(who))
        for who in ("ada", "ed", "rita")
    )
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        run_id = run["run_id"]
        again = await ed.decide(run_id, "one_more_round", shown=run)
        # Visibility follows a run's history a moment later: each listing is waited for.
        waiting = await eventually(
            lambda: rita.pending(of="editor"),
            lambda rows: (
                [(row["run_id"], row["gate"]) for row in rows] == [(run_id, "editor_call#2")]
            ),
            what="the second gate, and only it, pending",
        )
        done = await rita.decide(run_id, "publish_as_is", shown=again)
        ended = await eventually(
            lambda: rita.pending(of="editor"), lambda rows: rows == [], what="no gate pending"
        )
        listed = await eventually(
            lambda: ada.list(EssayReview),
            lambda rows: [row["status"] for row in rows] == ["finished"],
            what="the run listed finished",
        )
        handle = temporal_client.get_workflow_handle(run_id)
        events = list((await handle.fetch_history()).events)
        attributes = (await handle.describe()).typed_search_attributes

    assert gate_of(again)["gate"] == "editor_call#2"
    assert [(row["run_id"], row["gate"]) for row in waiting] == [(run_id, "editor_call#2")]
    assert done["status"] == "finished"
    # One upsert in the whole run: the first gate's. The second asked the same role and found
    # them written; neither answer wrote any, nor did the run's end.
    assert [event.event_type for event in events].count(UPSERT) == 1
    assert (attributes.get(LOCKGATE_STATE), attributes.get(LOCKGATE_AWAITING)) == (
        "waiting",
        "editor",
    )
    # Nothing reads them as a gate: the memo says each gate closed, and the server that the run
    # has ended.
    assert ended == []
    assert [(row["run_id"], row["status"], row["awaiting"]) for row in listed] == [
        (run_id, "finished", None)
    ]
    # The last answer's gate left the memo in the workflow task that sent the run on to its
    # publish node, before the node's activity was scheduled: no one saw it open meanwhile.
    last_answer = max(i for i, event in enumerate(events) if event.event_type == ACCEPTED)
    task = [event.event_type for event in events[last_answer:]]
    closed, publish = task.index(MEMO), task.index(SCHEDULED)
    assert closed < publish
    assert TASK_DONE not in task[closed:publish]


async def test_an_answer_that_ends_the_run_writes_one_memo_of_how_it_ended_and_no_attributes(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = refund_people()
    async with lockgate_worker(
        tools=[screen, quote, pay], graphs=[EndingRefund], directory=people.directory
    ):
        sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
        lee = GraphClient(temporal_client, task_queue, signer=people.signer("lee"))
        asked = await sam.start(EndingRefund, {"order": "A-1"})
        declined = await lee.decide(asked["run_id"], "decline", shown=asked)
        handle = temporal_client.get_workflow_handle(asked["run_id"])
        events = list((await handle.fetch_history()).events)
        memo = await (await handle.describe()).memo()
        pending = await eventually(lee.pending, lambda rows: rows == [], what="no gate pending")
        listed = await eventually(
            lambda: lee.list(EndingRefund),
            lambda rows: [row["status"] for row in rows] == ["finished"],
            what="the run listed finished",
        )

    # The refund's gate names no rejection: its "decline" ends the run finished.
    assert declined["status"] == "finished"
    answered = max(i for i, event in enumerate(events) if event.event_type == ACCEPTED)
    after = [event.event_type for event in events[answered:]]
    # The run ended in the workflow task that took the answer: one memo write (not billed)
    # says how it ended and takes the gate out together, and no search attribute is written.
    assert after.count(MEMO) == 1 and UPSERT not in after
    assert memo["lockgate_status"] == "finished"
    assert "lockgate_gate" not in memo
    assert pending == []
    assert [(row["status"], row["awaiting"]) for row in listed] == [("finished", None)]
