"""Human gates on EssayReview: who may answer, what a refusal leaves behind, and pending gates.

Every run here takes the always-fails path, so it waits at ``editor_call`` for an editor. ``ada``
starts the runs (no role, no scope), ``ed`` is an editor who may publish, ``clerk`` is an editor
who may not.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from lockgate import GraphClient, Signer
from lockgate.contracts import RunView
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import (
    ALWAYS_FAILS,
    PASSES_FIRST_TIME,
    essay_people,
    event_types,
    eventually,
    trail_of,
)
from tests.helpers.support import (
    assert_nothing_written_but_a_workflow_task,
    audit_facts,
    gate_of,
    send_decide,
)

UPDATE_EVENTS = {
    "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED",
    "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED",
    "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED",
}


def decide_proof(signer: Signer, run: RunView, choice: str, **override: Any) -> dict[str, Any]:
    """A proof answering the gate ``run`` shows (as a start or show result reports it)."""
    gate = run.get("awaiting")
    if gate:
        act = answer_binding(gate, choice)
    else:
        act = {"kind": "decide", "graph": run["graph"], "run": run["run_id"], "gate": None}
        act |= {"execution": run["execution"], "choice": choice}
    return signer.sign({**act, **override})


async def test_the_requester_cannot_answer_their_own_gate(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        refused = await ada.decide(run["run_id"], "abandon")

    assert refused["ok"] is False
    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert refused["error"]["message"] == (
        "ada opened this gate, so it cannot approve it: the work and its approval need two "
        "different people."
    )


async def test_an_unsigned_answer_is_refused_as_an_unverified_approver(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        nobody = GraphClient(temporal_client, task_queue)
        refused = await nobody.decide(run["run_id"], "abandon")

    assert refused["error"]["code"] == "UNVERIFIED_APPROVER"
    assert refused["error"]["message"].startswith(
        "A gate is answered by a verified actor, a signed call"
    )


async def test_an_answer_signed_by_a_key_the_directory_does_not_list_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people, strangers = essay_people(), essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        impostor = GraphClient(temporal_client, task_queue, signer=strangers.signer("ed"))
        refused = await impostor.decide(run["run_id"], "publish_as_is")

    assert refused["error"]["code"] == "UNVERIFIED_APPROVER"


async def test_a_clerk_who_may_not_publish_is_refused_ahead_of_the_gate_and_nothing_is_written(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.show((await ada.start(EssayReview, ALWAYS_FAILS))["run_id"])
        clerk = GraphClient(temporal_client, task_queue, signer=people.signer("clerk"))
        refused = await clerk.decide(run["run_id"], "publish_as_is")
        still = await ada.show(run["run_id"])
        events = await event_types(temporal_client, run["run_id"])

    assert refused["error"]["code"] == "FORBIDDEN"
    assert refused["error"]["message"] == (
        "The answer 'publish_as_is' was not recorded: it leads to the node 'publish' "
        "(essay:publish), and it needs the scope essay:publish, which clerk does not hold. The "
        "gate is still waiting."
    )
    # One update was accepted, the run's signed start; the refused answer wrote nothing.
    assert events.count("EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 1
    assert still["status"] == "waiting"
    assert gate_of(still)["gate"] == "editor_call#1"
    assert still["trail"] == run["trail"]


async def test_a_gate_refused_to_a_clerk_is_still_listed_as_pending(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        clerk = GraphClient(temporal_client, task_queue, signer=people.signer("clerk"))
        assert (await clerk.decide(run["run_id"], "publish_as_is"))["error"]["code"] == "FORBIDDEN"
        rows = await eventually(
            lambda: clerk.pending(of="editor"),
            lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
            what="the refused run listed as pending",
        )

    row = next(row for row in rows if row["run_id"] == run["run_id"])
    assert row["gate"] == "editor_call#1"


@pytest.mark.parametrize(
    ("extra_people", "answerer", "choice", "code", "message"),
    [
        pytest.param(
            {"rod": {"scopes": ["essay:publish"]}},
            "rod",
            "publish_as_is",
            "FORBIDDEN",
            "rod does not hold the role 'editor' that gate 'editor_call#1' asks for, so the "
            "answer was not recorded. The gate is still waiting.",
            id="an approver without the gate's role",
        ),
        pytest.param(
            {},
            "ed",
            "burn_it",
            "INVALID_DECISION",
            "'burn_it' is not an option of gate 'editor_call#1' (expected one of: publish_as_is, "
            "one_more_round, abandon).",
            id="an option the gate does not offer",
        ),
    ],
)
async def test_an_approver_without_the_gates_role_or_an_option_not_offered_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    extra_people: dict[str, dict[str, Any]],
    answerer: str,
    choice: str,
    code: str,
    message: str,
) -> None:
    people = essay_people(**extra_people)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        answering = GraphClient(temporal_client, task_queue, signer=people.signer(answerer))
        refused = await answering.decide(run["run_id"], choice)

    assert refused["error"]["code"] == code
    assert refused["error"]["message"] == message


async def test_a_finished_run_is_not_waiting_for_a_decision(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people(wren={"scopes": ["essay:publish"]})
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        wren = GraphClient(temporal_client, task_queue, signer=people.signer("wren"))
        run = await wren.start(EssayReview, PASSES_FIRST_TIME)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        refused = await ed.decide(run["run_id"], "publish_as_is")

    assert run["status"] == "finished"
    assert refused["error"]["code"] == "GATE_NOT_PENDING"
    assert (
        refused["error"]["message"]
        == f"Run '{run['run_id']}' is not waiting for a decision: it has completed."
    )


async def test_a_proof_signed_for_an_earlier_opening_of_the_gate_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        stale = decide_proof(people.signer("ed"), run, "publish_as_is")
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        again = await ed.decide(run["run_id"], "one_more_round")
        refused = await send_decide(temporal_client, run["run_id"], stale)

    assert gate_of(again)["gate"] == "editor_call#2"
    assert refused["error"]["code"] == "GATE_NOT_PENDING"
    assert "answers gate 'editor_call#1'" in refused["error"]["message"]
    assert "('editor_call#2')" in refused["error"]["message"]


async def test_a_proof_naming_another_graph_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        elsewhere = decide_proof(people.signer("ed"), run, "publish_as_is", graph="memo:clearance")
        refused = await send_decide(temporal_client, run["run_id"], elsewhere)

    assert refused["error"]["code"] == "NOT_FOUND"
    assert refused["error"]["message"] == (
        f"Run '{run['run_id']}' is not a run of 'memo:clearance': it is a run of 'essay:review', "
        "and a proof answers only the graph it names."
    )


async def test_an_editor_is_accepted_and_publish_runs_as_the_editor(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        done = await ed.decide(run["run_id"], "publish_as_is")

    assert done["status"] == "finished"
    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert done["trail"][-2]["answer"] == "publish_as_is"
    assert done["fields"]["url"] == "https://essays.example/tides"


async def test_authority_does_not_cross_a_gate_the_answerer_drives_what_follows(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        again = await ed.decide(run["run_id"], "one_more_round")
        whole = await ed.show(run["run_id"])

    assert trail_of(whole) == [
        *[("write", "ran", "ada"), ("grade", "ran", "ada")] * 4,
        ("editor_call", "answered", "ed"),
        ("write", "ran", "ed"),
        ("grade", "ran", "ed"),
    ]
    # The answer's own result carries the rows it added, from its own on.
    assert trail_of(again) == trail_of(whole)[8:]
    assert (again["trail_from"], again["trail_total"]) == (8, 11)
    # The budget is not reset by a human's answer: the next failure asks again at once.
    assert again["status"] == "waiting"
    assert gate_of(again)["gate"] == "editor_call#2"


async def test_every_refused_answer_is_audited_with_its_reason_and_code(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        answers = [
            ("ada", "abandon"),  # SELF_APPROVAL_FORBIDDEN
            (None, "abandon"),  # UNVERIFIED_APPROVER
            ("clerk", "publish_as_is"),  # FORBIDDEN
            ("ed", "burn_it"),  # INVALID_DECISION
        ]
        refusals: list[RunView | dict[str, Any]] = []
        for who, choice in answers:
            signer = people.signer(who) if who else None
            if choice == "burn_it":  # GraphClient refuses to sign a choice that is not offered
                proof = decide_proof(people.signer("ed"), run, choice)
                refusals.append(await send_decide(temporal_client, run["run_id"], proof))
                continue
            client = GraphClient(temporal_client, task_queue, signer=signer)
            refusals.append(await client.decide(run["run_id"], choice))

    audited = [
        audit_facts(record)
        for record in caplog.records
        if record.name == "lockgate.audit"
        and getattr(record, "lockgate_audit", {}).get("event") == "gate.decide"
        and audit_facts(record).get("run") == run["run_id"]
    ]
    for refusal in refusals:
        assert any(
            entry["outcome"] == "refused"
            and entry["code"] == refusal["error"]["code"]
            and entry["reason"] == refusal["error"]["message"]
            for entry in audited
        ), refusal
    assert {entry["code"] for entry in audited} == {
        "SELF_APPROVAL_FORBIDDEN",
        "UNVERIFIED_APPROVER",
        "FORBIDDEN",
        "INVALID_DECISION",
    }


async def test_a_rejected_update_leaves_no_event_of_its_own_in_history(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        before = await event_types(temporal_client, run["run_id"])
        refused = await ada.decide(run["run_id"], "abandon")
        after = await event_types(temporal_client, run["run_id"])

    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert_nothing_written_but_a_workflow_task(before, after)
    # The update events are the signed start's (accepted, completed once the run settled).
    assert [event for event in after if event in UPDATE_EVENTS] == [
        "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED",
        "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED",
    ]


# --- pending(): open gates across runs, read without a worker ------------------------------------


async def test_pending_lists_an_open_gate_with_no_worker_running(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
    # The worker has stopped: only search attributes and memo are read from here on.
    reader = GraphClient(temporal_client, task_queue)
    rows = await eventually(
        lambda: reader.pending(of="editor"),
        lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
        what="the run listed as pending",
    )

    row = next(row for row in rows if row["run_id"] == run["run_id"])
    assert row["graph"] == "essay:review"
    assert row["gate"] == "editor_call#1"
    assert row["role"] == "editor"
    assert row["requester"] == "ada"
    assert row["target"] == {"title": "Tides"}
    assert row["options"] == ["publish_as_is", "one_more_round", "abandon"]
    assert row["choices"] == [
        {"option": "publish_as_is", "leads_to": "publish", "operation": "essay:publish",
         "needs": ["essay:publish"]},
        {"option": "one_more_round", "leads_to": "write", "operation": "essay:write",
         "needs": []},
        {"option": "abandon", "leads_to": "abandon", "operation": "essay:abandon", "needs": []},
    ]  # fmt: skip
    assert "viewer" not in row


async def test_pending_tells_a_clerk_they_may_not_publish_and_why(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
    reader = GraphClient(temporal_client, task_queue, directory=people.directory)
    rows = await eventually(
        lambda: reader.pending(of="editor", viewer="clerk"),
        lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
        what="the run listed as pending",
    )

    row = next(row for row in rows if row["run_id"] == run["run_id"])
    publish, one_more, abandon = row["choices"]
    assert publish["may"] is False
    assert publish["because"] == "needs"
    assert publish["why_not"] == (
        "it leads to the node 'publish' (essay:publish), and it needs the scope essay:publish, "
        "which clerk does not hold"
    )
    assert (one_more["may"], one_more["because"], one_more["why_not"]) == (True, None, None)
    assert abandon["may"] is True
    assert row["viewer"] == {
        "principal": "clerk",
        "is_requester": False,
        "made_the_work": False,
        "verified": True,
    }


async def test_pending_tells_the_requester_they_opened_the_gate(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people(eve={"roles": ["editor"], "scopes": ["essay:publish"]})
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        eve = GraphClient(temporal_client, task_queue, signer=people.signer("eve"))
        run = await eve.start(EssayReview, ALWAYS_FAILS)
    reader = GraphClient(temporal_client, task_queue, directory=people.directory)
    rows = await eventually(
        lambda: reader.pending(of="editor", viewer="eve"),
        lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
        what="the run listed as pending",
    )

    row = next(row for row in rows if row["run_id"] == run["run_id"])
    assert {choice["because"] for choice in row["choices"]} == {"requester"}
    assert {choice["may"] for choice in row["choices"]} == {False}
    assert row["choices"][0]["why_not"] == (
        "eve opened this gate, so it cannot approve it: the work and its approval need two "
        "different people"
    )
    assert row["viewer"]["is_requester"] is True


async def test_the_temporal_ui_says_in_words_what_a_waiting_run_waits_for(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        # What the Temporal UI shows as the run's current details.
        metadata = await temporal_client.get_workflow_handle(run["run_id"]).query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )

    assert metadata.current_details.startswith(
        "**essay:review** v1 waits for **an editor** at gate `editor_call#1`:"
    )
    assert "`publish_as_is`" in metadata.current_details
