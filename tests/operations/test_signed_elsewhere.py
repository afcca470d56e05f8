"""The door hands a surface what a resume or a cancel authorizes, and relays the proof someone
signed for it elsewhere (the inbox's page, with a key or a passkey); the run's worker judges
that proof as it judges the CLI's.
"""

from __future__ import annotations

from temporalio.client import Client

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.operations._operations import Operations
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, PASSES_FIRST_TIME, essay_people


async def test_a_parked_run_is_resumed_with_a_proof_signed_for_the_binding_the_door_gave(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, PASSES_FIRST_TIME)  # ada may not publish: parked
        door = Operations(temporal_client, task_queue, channel="web")
        binding = await door.resume_binding(run["run_id"])
        resumed = await door.resume(run["run_id"], proof=people.signer("ed", "web").sign(binding))

    assert run["status"] == "parked"
    assert binding == {
        "kind": "resume",
        "graph": "essay:review",
        "run": run["run_id"],
        "execution": run["execution"],
        "node": "publish",
    }
    assert resumed["status"] == "finished"
    assert resumed["trail"][-2]["outcome"] == "resumed"
    assert resumed["trail"][-2]["by"]["actor"] == "ed"


async def test_a_cancel_signed_elsewhere_ends_the_run_for_its_requester_and_no_one_else(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, PASSES_FIRST_TIME)
        door = Operations(temporal_client, task_queue, channel="web")
        binding = await door.cancel_binding(run["run_id"])
        by_ed = await door.cancel(run["run_id"], proof=people.signer("ed", "web").sign(binding))
        by_ada = await door.cancel(run["run_id"], proof=people.signer("ada", "web").sign(binding))
        not_text = await door.cancel_binding(run["run_id"], reason={"why": 1})

    assert binding["kind"] == "cancel" and binding["reason"] is None
    assert by_ed["error"]["code"] == "FORBIDDEN"
    assert by_ada["status"] == "cancelled"
    assert by_ada["trail"][-1]["by"]["actor"] == "ada"
    assert not_text["error"]["code"] == "VALIDATION_ERROR"


async def test_a_run_that_is_not_parked_has_nothing_to_resume(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)  # waiting at its gate
        refused = await Operations(temporal_client, task_queue).resume_binding(run["run_id"])

    assert refused["error"]["code"] == "NOTHING_TO_RESUME"
