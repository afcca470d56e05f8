"""Authority per node: a node runs as whoever drives the run, judged the moment it is about to run.

A refused node parks the run (nothing after it runs); ``resume`` carries it on as a caller who
may run it. The trail says who ran or was refused, and never what anyone holds.
"""

from __future__ import annotations

import json
import logging

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.memo_clearance import MemoClearance
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import (
    ACTOR_KEYS,
    DIRTY_MEMO,
    PASSES_FIRST_TIME,
    TRAIL_ROW_KEYS,
    Launch,
    Ledger,
    essay_people,
    event_types,
    eventually,
    keys_of,
    signed_answer,
    trail_of,
)
from tests.helpers.support import audit_facts, parked_of


def ledger_people() -> Identities:
    """ada may not post; poppy may."""
    return Identities({"ada": {}, "poppy": {"scopes": ["ledger:post"]}})


async def test_a_starter_who_may_not_publish_parks_the_run_at_publish(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.show((await ada.start(EssayReview, PASSES_FIRST_TIME))["run_id"])

    assert run["status"] == "parked"
    assert run["state"] == "publish"
    assert trail_of(run) == [
        ("write", "ran", "ada"),
        ("grade", "ran", "ada"),
        ("publish", "refused", "ada"),
    ]
    refused = run["trail"][-1]
    assert refused["needs"] == ["essay:publish"]
    assert refused["why"] == (
        "The node 'publish' (essay:publish) did not run: it needs the scope essay:publish, which "
        "ada does not hold. The run is parked there and nothing after it ran."
    )
    assert run["fields"]["url"] is None


async def test_a_refused_node_parks_the_run_and_nothing_after_it_runs(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = ledger_people()
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.show((await ada.start(Ledger, {"entry": " Rent, March "}))["run_id"])

    assert run["status"] == "parked"
    assert trail_of(run) == [("draft", "ran", "ada"), ("post", "refused", "ada")]
    assert run["trail"][-1]["by"] == run["requester"]
    assert run["trail"][-1]["needs"] == ["ledger:post"]
    assert parked_of(run)["node"] == "post"
    assert run["fields"] == {"entry": "Rent, March", "posted": False, "filed": False}


async def test_a_caller_who_may_run_the_parked_node_resumes_the_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = ledger_people()
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(Ledger, {"entry": "Rent"})
        poppy = GraphClient(temporal_client, task_queue, signer=people.signer("poppy"))
        resumed = await poppy.resume(run["run_id"])
        whole = await poppy.show(run["run_id"])

    assert resumed["status"] == "finished"
    assert trail_of(whole) == [
        ("draft", "ran", "ada"),
        ("post", "refused", "ada"),
        ("post", "resumed", "poppy"),
        ("post", "ran", "poppy"),
        ("file", "ran", "poppy"),
    ]
    # The resume's own result carries the rows it added.
    assert trail_of(resumed) == trail_of(whole)[2:]
    assert resumed["fields"]["posted"] is True and resumed["fields"]["filed"] is True
    assert keys_of(resumed["trail"]) <= TRAIL_ROW_KEYS


async def test_a_resume_by_someone_who_may_not_run_the_node_is_refused_and_nothing_is_written(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = ledger_people()
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.show((await ada.start(Ledger, {"entry": "Rent"}))["run_id"])
        before = await event_types(temporal_client, run["run_id"])
        refused = await ada.resume(run["run_id"])
        after = await event_types(temporal_client, run["run_id"])
        still = await ada.show(run["run_id"])

    assert refused["error"]["code"] == "FORBIDDEN"
    assert refused["error"]["message"] == (
        "The resume was not recorded: the node 'post' (ledger:post) is still parked, because it "
        "needs the scope ledger:post, which ada does not hold."
    )
    assert after == before
    assert still["status"] == "parked"
    assert still["trail"] == run["trail"]


async def test_a_refused_resume_is_audited_with_its_reason(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    people = ledger_people()
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(Ledger, {"entry": "Rent"})
        refused = await ada.resume(run["run_id"])

    assert any(
        getattr(record, "lockgate_audit", {}).get("event") == "run.resume"
        and audit_facts(record)["outcome"] == "refused"
        and audit_facts(record)["code"] == "FORBIDDEN"
        and audit_facts(record)["reason"] == refused["error"]["message"]
        and audit_facts(record)["node"] == "post"
        for record in caplog.records
    )


async def test_an_unsigned_resume_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = ledger_people()
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(Ledger, {"entry": "Rent"})
        refused = await GraphClient(temporal_client, task_queue).resume(run["run_id"])

    assert refused["error"]["code"] == "UNAUTHORIZED"
    assert refused["error"]["message"].startswith(
        "A run is resumed by a verified actor, a signed call"
    )


async def test_resuming_a_run_that_waits_at_a_gate_is_refused_as_nothing_to_resume(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities({"agent-7": {}, "rod": {"roles": ["officer"], "scopes": ["memo:release"]}})
    async with lockgate_worker(graphs=[MemoClearance], directory=people.directory):
        agent = GraphClient(temporal_client, task_queue, signer=people.signer("agent-7"))
        run = await agent.start(MemoClearance, DIRTY_MEMO)
        rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))
        refused = await rod.resume(run["run_id"])

    assert run["status"] == "waiting"
    assert refused["error"]["code"] == "NOTHING_TO_RESUME"
    assert refused["error"]["message"] == (
        f"Run '{run['run_id']}' is waiting for a decision: answer it with decide. Resuming a run "
        "answers nothing."
    )


async def test_resuming_a_finished_run_is_refused_as_nothing_to_resume(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = ledger_people()
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        poppy = GraphClient(temporal_client, task_queue, signer=people.signer("poppy"))
        run = await poppy.start(Ledger, {"entry": "Rent"})
        assert run["status"] == "finished"
        refused = await poppy.resume(run["run_id"])

    assert refused["error"]["code"] == "NOTHING_TO_RESUME"
    assert (
        refused["error"]["message"]
        == f"Run '{run['run_id']}' has finished: there is nothing to resume."
    )


async def test_answering_a_parked_run_is_refused_as_not_waiting_for_a_decision(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = ledger_people()
    async with lockgate_worker(graphs=[Ledger], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(Ledger, {"entry": "Rent"})
        proof = people.signer("poppy").sign(
            {"kind": "decide", "graph": "ledger:entry", "run": run["run_id"], "gate": "x#1",
             "execution": run["execution"], "choice": "go", "subject": "sha256:0"}
        )  # fmt: skip
        handle = temporal_client.get_workflow_handle(run["run_id"])
        try:
            await handle.execute_update("decide", proof, result_type=dict)
            code = None
        except WorkflowUpdateFailedError as error:
            assert isinstance(error.cause, ApplicationError), error.cause
            code = error.cause.type

    assert code == "GATE_NOT_PENDING"


async def test_an_answer_is_recorded_when_its_first_node_may_run_and_a_later_node_parks(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(
        {"ada": {}, "mo": {"roles": ["controller"]}, "flo": {"scopes": ["launch:fire"]}}
    )
    async with lockgate_worker(graphs=[Launch], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(Launch, {"mission": "Kestrel"})
        mo = GraphClient(temporal_client, task_queue, signer=people.signer("mo"))
        parked = await mo.decide(run["run_id"], "proceed")
        at_the_park = await mo.show(run["run_id"])
        flo = GraphClient(temporal_client, task_queue, signer=people.signer("flo"))
        done = await flo.resume(run["run_id"])

    assert trail_of(at_the_park) == [
        ("intake", "ran", "ada"),
        ("go", "answered", "mo"),
        ("stage", "ran", "mo"),
        ("fire", "refused", "mo"),
    ]
    assert trail_of(parked) == trail_of(at_the_park)[1:]  # the rows the answer added
    assert parked["status"] == "parked"
    assert trail_of(done)[-2:] == [("fire", "resumed", "flo"), ("fire", "ran", "flo")]
    assert done["fields"] == {"mission": "Kestrel", "staged": True, "fired": True, "log": [True]}


# --- The seed's pinned MemoClearance trail ------------------------------------------------------


def memo_people() -> Identities:
    return Identities(
        {
            "agent-7": {},
            "clerk": {"roles": ["officer"]},
            # rod holds more than release needs; none of it may reach the trail.
            "rod": {"roles": ["officer", "auditor"], "scopes": ["memo:release", "vault:open"]},
        }
    )


async def test_a_dirty_memo_released_by_an_officer_leaves_the_seeds_trail(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    people = memo_people()
    async with lockgate_worker(graphs=[MemoClearance], directory=people.directory):
        agent = GraphClient(temporal_client, task_queue, signer=people.signer("agent-7"))
        run = await agent.start(MemoClearance, DIRTY_MEMO)
        clerk = GraphClient(temporal_client, task_queue, signer=people.signer("clerk"))
        refused = await clerk.decide(run["run_id"], "release")
        rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))
        await rod.decide(run["run_id"], "release")
        done = await rod.show(run["run_id"])

    assert refused["error"]["code"] == "FORBIDDEN"
    assert trail_of(done) == [
        ("prepare", "ran", "agent-7"),
        ("check", "ran", "agent-7"),
        ("prepare", "ran", "agent-7"),
        ("check", "ran", "agent-7"),
        ("signoff", "answered", "rod"),
        ("release", "ran", "rod"),
    ]
    assert done["trail"][4]["answer"] == "release"
    assert done["fields"]["released"] is True
    # The clerk's refusal wrote nothing to the run, but the audit log has it.
    audited = [
        audit_facts(record)
        for record in caplog.records
        if getattr(record, "lockgate_audit", {}).get("event") == "gate.decide"
        and audit_facts(record).get("run") == run["run_id"]
    ]
    assert any(
        entry["outcome"] == "refused"
        and entry["actor"]["actor"] == "clerk"
        and entry["code"] == "FORBIDDEN"
        and entry["reason"] == refused["error"]["message"]
        and entry["answer"] == "release"
        for entry in audited
    )


async def test_trail_rows_say_who_and_what_and_never_what_anyone_holds(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = memo_people()
    async with lockgate_worker(graphs=[MemoClearance], directory=people.directory):
        agent = GraphClient(temporal_client, task_queue, signer=people.signer("agent-7"))
        run = await agent.start(MemoClearance, DIRTY_MEMO)
        # A refused signal is the one refusal that lands in the trail: it has every row key.
        clerk_answer = signed_answer(people.signer("clerk"), run, "release")
        await temporal_client.get_workflow_handle(run["run_id"]).signal("decide", clerk_answer)
        await eventually(
            lambda: agent.show(run["run_id"]),
            lambda shown: shown["trail"][-1]["outcome"] == "refused",
            what="the clerk's refused signal in the trail",
        )
        rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))
        answered = await rod.decide(run["run_id"], "release")
        done = await rod.show(run["run_id"])

    assert "vault:open" not in json.dumps(answered) and "auditor" not in json.dumps(answered)
    assert [outcome for _, outcome, _ in trail_of(done)] == [
        "ran", "ran", "ran", "ran", "refused", "answered", "ran",
    ]  # fmt: skip
    assert done["trail"][4]["needs"] == ["memo:release"]
    assert keys_of(done["trail"]) <= TRAIL_ROW_KEYS
    assert all(set(row["by"]) == ACTOR_KEYS for row in done["trail"])
    shown = json.dumps(done)
    assert "vault:open" not in shown
    assert "auditor" not in shown
