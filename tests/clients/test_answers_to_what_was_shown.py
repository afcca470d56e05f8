"""Answering the gate a person was shown: ``decide(..., shown=view)`` and ``gate_shown``.

An answer names the gate as it was shown, so a gate that opened again since is refused by the
run, never answered unseen. The client asks only the server again (that the run is still that
execution, on its task queue) before signing. ``ada`` starts, ``ed`` and ``rita`` are editors
who may publish.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import Client

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, essay_people, event_types, trail_of
from tests.helpers.support import assert_nothing_written_but_a_workflow_task, gate_of

PEOPLE = essay_people(rita={"roles": ["editor"], "scopes": ["essay:publish"]})


def clients(temporal_client: Client, task_queue: str, *names: str) -> list[GraphClient]:
    return [GraphClient(temporal_client, task_queue, signer=PEOPLE.signer(name)) for name in names]


async def test_an_answer_to_the_gate_shown_is_accepted_and_publish_runs_as_the_editor(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    ada, ed = clients(temporal_client, task_queue, "ada", "ed")
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        shown = await ed.show(run["run_id"])
        done = await ed.decide(run["run_id"], "publish_as_is", shown=shown)

    assert gate_of(shown)["gate"] == "editor_call#1"
    assert done["status"] == "finished"
    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]


async def test_what_an_answer_returned_answers_the_gate_it_reopened(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    ada, ed, rita = clients(temporal_client, task_queue, "ada", "ed", "rita")
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        again = await ed.decide(run["run_id"], "one_more_round", shown=run)
        done = await rita.decide(run["run_id"], "publish_as_is", shown=again)

    assert gate_of(again)["gate"] == "editor_call#2"
    assert done["status"] == "finished"
    assert trail_of(done)[-2:] == [("editor_call", "answered", "rita"), ("publish", "ran", "rita")]


async def test_an_answer_to_a_gate_that_opened_again_since_it_was_shown_is_refused_unwritten(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    ada, ed, rita = clients(temporal_client, task_queue, "ada", "ed", "rita")
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        stale = await rita.show(run["run_id"])
        await ed.decide(run["run_id"], "one_more_round")
        before = await event_types(temporal_client, run["run_id"])
        refused = await rita.decide(run["run_id"], "publish_as_is", shown=stale)
        after = await event_types(temporal_client, run["run_id"])
        still = await rita.show(run["run_id"])

    assert refused["ok"] is False
    assert refused["error"]["code"] == "GATE_NOT_PENDING"
    assert "answers gate 'editor_call#1'" in refused["error"]["message"]
    assert "('editor_call#2')" in refused["error"]["message"]
    assert_nothing_written_but_a_workflow_task(before, after)
    assert still["status"] == "waiting" and gate_of(still)["gate"] == "editor_call#2"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        pytest.param(
            {"execution": "an-execution-that-never-ran"},
            "is not the run that was shown",
            id="another-execution",
        ),
        pytest.param({"awaiting": None}, "was not waiting for a decision", id="no-gate"),
    ],
)
async def test_a_view_that_is_not_of_this_open_run_signs_nothing(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    change: dict[str, Any],
    says: str,
) -> None:
    ada, ed = clients(temporal_client, task_queue, "ada", "ed")
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        before = await event_types(temporal_client, run["run_id"])
        refused = await ed.decide(run["run_id"], "publish_as_is", shown={**run, **change})
        after = await event_types(temporal_client, run["run_id"])

    assert refused["ok"] is False
    assert refused["error"]["code"] == "GATE_NOT_PENDING"
    assert says in refused["error"]["message"]
    assert after == before


async def test_a_gate_key_shown_that_is_no_longer_open_is_bound_to_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    ada, ed, rita = clients(temporal_client, task_queue, "ada", "ed", "rita")
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        await ed.decide(run["run_id"], "one_more_round")
        stale = await rita.decide_binding(
            run["run_id"], "publish_as_is", gate_shown="editor_call#1"
        )
        fresh = await rita.decide_binding(
            run["run_id"], "publish_as_is", gate_shown="editor_call#2"
        )

    assert stale["error"]["code"] == "GATE_NOT_PENDING"
    assert stale["error"]["message"] == (
        f"Run '{run['run_id']}' now waits at gate 'editor_call#2', not at 'editor_call#1' as it "
        "was shown: look at it again before answering."
    )
    assert fresh["gate"] == "editor_call#2" and fresh["choice"] == "publish_as_is"
