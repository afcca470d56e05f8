"""Cancelling a run: the requester ends it for good with a signed cancel, judged on the worker.

A cancel is a signed act like a resume: it names the run's graph, workflow id and execution,
and the run's validator refuses, before anything is written, anyone but the run's verified
requester, an unsigned cancel, and a proof signed for another run.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import cancel_binding
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import (
    ALWAYS_FAILS,
    PASSES_FIRST_TIME,
    TRAIL_ROW_KEYS,
    essay_people,
    event_types,
    eventually,
    keys_of,
    trail_of,
)
from tests.helpers.support import assert_nothing_written_but_a_workflow_task, update_refused


async def test_the_requester_cancels_a_run_waiting_at_a_gate_and_the_trail_says_who(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        cancelled = await ada.cancel(run["run_id"], reason="wrong rubric")
        described = await temporal_client.get_workflow_handle(run["run_id"]).describe()
        # Visibility is written after the fact: wait until the gate has left pending.
        pending = await eventually(
            lambda: ada.pending(of="editor"),
            lambda rows: all(row["run_id"] != run["run_id"] for row in rows),
            what="the cancelled run's gate gone from pending",
        )
        listed = await eventually(
            lambda: ada.list(EssayReview),
            lambda rows: any(
                row["run_id"] == run["run_id"] and row["execution"] != "running" for row in rows
            ),
            what="the cancelled run listed as closed",
        )

    assert run["status"] == "waiting"
    assert cancelled["status"] == "cancelled", cancelled
    assert cancelled["awaiting"] is None
    last = cancelled["trail"][-1]
    assert (last["node"], last["operation"], last["outcome"]) == (
        "editor_call",
        "cancel",
        "cancelled",
    )
    assert last["by"]["actor"] == "ada" and last["by"]["verified"] is True
    assert last["why"] == "wrong rubric"
    assert keys_of(cancelled["trail"]) <= TRAIL_ROW_KEYS
    assert described.status == WorkflowExecutionStatus.COMPLETED
    assert run["run_id"] not in [row["run_id"] for row in pending]
    assert [row["status"] for row in listed if row["run_id"] == run["run_id"]] == ["cancelled"]


async def test_the_requester_cancels_a_parked_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, PASSES_FIRST_TIME)  # ada may not publish: parked
        cancelled = await ada.cancel(run["run_id"])
        shown = await ada.show(run["run_id"])

    assert run["status"] == "parked"
    assert cancelled["status"] == "cancelled" and cancelled["parked"] is None
    assert trail_of(cancelled)[-1] == ("publish", "cancelled", "ada")
    assert "why" not in cancelled["trail"][-1]
    # Read back from the completed run's result: the same run, with its whole trail (the
    # cancel's own answer carries the rows it added).
    paged = ("trail", "trail_from")
    assert {key: value for key, value in shown.items() if key not in paged} == {
        key: value for key, value in cancelled.items() if key not in paged
    }
    assert shown["trail"][cancelled["trail_from"] :] == cancelled["trail"]


async def test_someone_other_than_the_requester_cannot_cancel_and_nothing_is_written(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        before = await event_types(temporal_client, run["run_id"])
        # ed is verified, an editor, and may publish: none of it lets him end ada's run.
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        refused = await ed.cancel(run["run_id"])
        after = await event_types(temporal_client, run["run_id"])
        still = await ada.show(run["run_id"])

    assert refused["error"]["code"] == "FORBIDDEN"
    assert refused["error"]["message"] == (
        f"ed may not cancel run '{run['run_id']}': only its requester, ada, may."
    )
    assert_nothing_written_but_a_workflow_task(before, after)
    assert still["status"] == "waiting"
    assert still["trail_total"] == run["trail_total"]


async def test_an_unsigned_cancel_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        through_the_client = await GraphClient(temporal_client, task_queue).cancel(run["run_id"])
        # What the `temporal` CLI or UI would send: a claim of who asks, signed by nobody.
        handle = temporal_client.get_workflow_handle(run["run_id"])
        with pytest.raises(WorkflowUpdateFailedError) as raw:
            await handle.execute_update(
                "cancel",
                {"kind": "cancel", "graph": "essay:review", "run": run["run_id"], "by": "ada"},
                result_type=dict,
            )
        still = await ada.show(run["run_id"])

    assert through_the_client["error"]["code"] == "UNAUTHORIZED"
    assert through_the_client["error"]["message"].startswith(
        "A run is cancelled by a verified actor, a signed call"
    )
    assert update_refused(raw.value)["code"] == "UNAUTHORIZED"
    assert still["status"] == "waiting"


async def test_a_cancel_signed_for_one_run_is_refused_by_another(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    ada_signer = people.signer("ada")
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=ada_signer)
        first = await ada.start(EssayReview, ALWAYS_FAILS)
        second = await ada.start(EssayReview, ALWAYS_FAILS)
        # A proof read from the first run's history (anyone may read it), replayed on the second.
        proof = ada_signer.sign(cancel_binding("essay:review", first["run_id"], first["execution"]))
        handle = temporal_client.get_workflow_handle(second["run_id"])
        with pytest.raises(WorkflowUpdateFailedError) as replayed:
            await handle.execute_update("cancel", proof, result_type=dict)
        # Renamed for the second run, the signature no longer holds.
        forged = {**proof, "authorizes": {**proof["authorizes"], "run": second["run_id"]}}
        with pytest.raises(WorkflowUpdateFailedError) as renamed:
            await handle.execute_update("cancel", forged, result_type=dict)
        still = await ada.show(second["run_id"])

    assert update_refused(replayed.value)["code"] == "UNAUTHORIZED"
    assert update_refused(renamed.value)["code"] == "UNAUTHORIZED"
    assert still["status"] == "waiting"


async def test_cancelling_a_finished_run_is_refused_as_nothing_to_cancel(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people(wren={"scopes": ["essay:publish"]})
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        wren = GraphClient(temporal_client, task_queue, signer=people.signer("wren"))
        run = await wren.start(EssayReview, PASSES_FIRST_TIME)
        refused = await wren.cancel(run["run_id"])

    assert run["status"] == "finished"
    assert refused["error"]["code"] == "NOTHING_TO_CANCEL"
    assert refused["error"]["message"] == (
        f"Run '{run['run_id']}' has completed: there is nothing to cancel."
    )


async def test_a_cancel_with_a_reason_too_long_for_the_trail_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        refused = await ada.cancel(run["run_id"], reason="x" * 501)
        still = await ada.show(run["run_id"])

    assert refused["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "A cancel's reason is text of at most 500 characters.",
    }
    assert still["status"] == "waiting"
