"""Answers racing for one gate: exactly one is accepted, the others refused, nothing doubled."""

from __future__ import annotations

import asyncio

from temporalio.client import Client, WorkflowUpdateFailedError

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS
from tests.helpers.support import gate_of

EDITORS = [f"editor{number}" for number in range(10)]


def _people() -> Identities:
    editors = {name: {"roles": ["editor"], "scopes": ["essay:publish"]} for name in EDITORS}
    return Identities({"ada": {}, **editors})


async def test_ten_approvers_answering_one_gate_at_once_one_is_accepted_the_rest_not_pending(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = _people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        approvers = [
            GraphClient(temporal_client, task_queue, signer=people.signer(name)) for name in EDITORS
        ]
        answers = await asyncio.gather(
            *(approver.decide(run["run_id"], "publish_as_is") for approver in approvers)
        )
        final = await ada.show(run["run_id"])

    accepted = [answer for answer in answers if answer.get("ok") is not False]
    refused = [answer for answer in answers if answer.get("ok") is False]
    answered_rows = [row for row in final["trail"] if row["outcome"] == "answered"]
    published_rows = [row for row in final["trail"] if row["node"] == "publish"]
    assert len(accepted) == 1
    assert len(refused) == 9
    assert {answer["error"]["code"] for answer in refused} == {"GATE_NOT_PENDING"}
    assert len(answered_rows) == 1 and len(published_rows) == 1
    assert answered_rows[0]["by"]["actor"] == published_rows[0]["by"]["actor"]


async def test_the_same_signed_answer_sent_twice_at_once_is_accepted_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = _people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        answer = people.signer("editor0").sign(answer_binding(gate_of(run), "abandon"))
        handle = temporal_client.get_workflow_handle(run["run_id"])
        outcomes = await asyncio.gather(
            handle.execute_update("decide", answer, result_type=dict),
            handle.execute_update("decide", answer, result_type=dict),
            return_exceptions=True,
        )
        final = await ada.show(run["run_id"])

    failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert len(failures) == 1
    assert isinstance(failures[0], WorkflowUpdateFailedError)
    assert [row["outcome"] for row in final["trail"]].count("answered") == 1
    assert [row["node"] for row in final["trail"]].count("abandon") == 1
