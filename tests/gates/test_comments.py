"""A comment with an answer: free text the approver signs with it, judged by the run's worker,
kept in the answer's trail row as what they said, and never read by any rule that decides.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.gates._evidence import MAX_COMMENT_CHARS
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, event_types, eventually
from tests.helpers.support import assert_nothing_written_but_a_workflow_task

PEOPLE = {"ada": {}, "ed": {"roles": ["editor"], "scopes": ["essay:publish"]}}


async def _at_the_gate(client: Client, task_queue: str, people: Identities) -> dict[str, Any]:
    ada = GraphClient(client, task_queue, signer=people.signer("ada"))
    run = dict(await ada.start(EssayReview, ALWAYS_FAILS))
    assert run["status"] == "waiting", run
    return run


async def _signed_with(
    client: Client, task_queue: str, people: Identities, run_id: str, choice: str, comment: Any
) -> dict[str, Any]:
    """ed's answer of ``choice`` with ``comment`` in what the proof names."""
    ed = GraphClient(client, task_queue, signer=people.signer("ed"))
    binding = await ed.decide_binding(run_id, choice)
    return people.signer("ed").sign({**binding, "comment": comment})


async def test_a_comment_signed_with_an_answer_is_kept_in_its_trail_row(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        run = await _at_the_gate(temporal_client, task_queue, people)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        binding = await ed.decide_binding(
            run["run_id"], "abandon", comment="Too thin for this issue; try again in May."
        )
        done = await ed.decide_signed(run["run_id"], people.signer("ed").sign(binding))

    answered = [row for row in done["trail"] if row["outcome"] == "answered"]
    assert binding["comment"] == "Too thin for this issue; try again in May."
    assert done["status"] == "finished"
    assert [(row["answer"], row.get("comment")) for row in answered] == [
        ("abandon", "Too thin for this issue; try again in May.")
    ]


async def test_an_answer_without_a_comment_names_none_and_its_row_has_none(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        run = await _at_the_gate(temporal_client, task_queue, people)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        binding = await ed.decide_binding(run["run_id"], "abandon")
        done = await ed.decide(run["run_id"], "abandon")

    assert "comment" not in binding
    assert all("comment" not in row for row in done["trail"])


async def test_a_comment_that_is_not_text_or_too_long_is_refused_and_nothing_is_written(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        run = await _at_the_gate(temporal_client, task_queue, people)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        before = await event_types(temporal_client, run["run_id"])
        refused = {}
        for name, comment in (
            ("too long", "x" * (MAX_COMMENT_CHARS + 1)),
            ("blank", "   "),
            ("an object", {"decides": "publish_as_is"}),
        ):
            proof = await _signed_with(
                temporal_client, task_queue, people, run["run_id"], "abandon", comment
            )
            refused[name] = await ed.decide_signed(run["run_id"], proof)
        after = await event_types(temporal_client, run["run_id"])
        still = await ed.show(run["run_id"])

    for name, answer in refused.items():
        assert answer["error"]["code"] == "VALIDATION_ERROR", name
        assert f"text of 1 to {MAX_COMMENT_CHARS} characters" in answer["error"]["message"]
    assert still["status"] == "waiting"
    assert_nothing_written_but_a_workflow_task(before, after)


async def test_a_comment_changed_after_signing_is_refused_as_unverified(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        run = await _at_the_gate(temporal_client, task_queue, people)
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        proof = await _signed_with(
            temporal_client, task_queue, people, run["run_id"], "abandon", "Not this one."
        )
        proof["authorizes"]["comment"] = "Approved by the board."
        refused = await ed.decide_signed(run["run_id"], proof)

    assert refused["error"]["code"] == "UNVERIFIED_APPROVER"


async def test_a_comment_by_signal_is_judged_and_kept_as_by_update(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(PEOPLE)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        run = await _at_the_gate(temporal_client, task_queue, people)
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        handle = temporal_client.get_workflow_handle(run["run_id"])
        too_long = await _signed_with(
            temporal_client,
            task_queue,
            people,
            run["run_id"],
            "abandon",
            "x" * (MAX_COMMENT_CHARS + 1),
        )
        await handle.signal("decide", too_long)
        kept = await _signed_with(
            temporal_client, task_queue, people, run["run_id"], "abandon", "Abandoned: off topic."
        )
        await handle.signal("decide", kept)
        shown = await eventually(
            lambda: ada.show(run["run_id"]),
            lambda found: found.get("status") == "finished",
            what="both signals judged",
        )

    refused, answered = [
        row for row in shown["trail"] if row["outcome"] in ("refused", "answered")
    ][-2:]
    assert (refused["outcome"], refused.get("code")) == ("refused", "VALIDATION_ERROR")
    assert "comment" not in refused
    assert (answered["outcome"], answered.get("comment")) == ("answered", "Abandoned: off topic.")
