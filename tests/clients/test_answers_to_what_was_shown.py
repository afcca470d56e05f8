"""Answering the gate a person was shown: ``decide(..., shown=view)`` and ``gate_shown``.

An answer names the gate as it was shown, so a gate that opened again since is refused by the
run, never answered unseen. The client asks no one before signing: the answer goes pinned to the
execution the view names, so the server refuses it where another execution runs under the id
now, and the run's validator judges the rest. A cold answer (no view) still reads the gate and
the execution from the server's description. ``ada`` starts, ``ed`` and ``rita`` are editors
who may publish.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle

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


async def test_an_answer_to_the_gate_shown_reads_no_description_and_is_sent_pinned(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ada, ed = clients(temporal_client, task_queue, "ada", "ed")
    described: list[str] = []
    pinned: list[str | None] = []
    describe = WorkflowHandle.describe
    execute_update = WorkflowHandle.execute_update

    async def counted_describe(self: WorkflowHandle[Any, Any], *args: Any, **kwargs: Any) -> Any:
        described.append(self.id)
        return await describe(self, *args, **kwargs)

    async def noted_update(self: WorkflowHandle[Any, Any], *args: Any, **kwargs: Any) -> Any:
        pinned.append(self.first_execution_run_id)
        return await execute_update(self, *args, **kwargs)

    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        monkeypatch.setattr(WorkflowHandle, "describe", counted_describe)
        monkeypatch.setattr(WorkflowHandle, "execute_update", noted_update)
        done = await ed.decide(run["run_id"], "publish_as_is", shown=run)

    assert described == []
    assert pinned == [run["execution"]]
    assert done["status"] == "finished"
    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]


async def test_an_answer_to_a_gate_shown_of_an_execution_since_replaced_is_refused_by_the_server(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # The same run id, the same gate key and the same view but for its execution: the answer
    # signed for the execution shown reaches no worker of the one that runs under the id now.
    ada, ed = clients(temporal_client, task_queue, "ada", "ed")
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        first = await ada.start(EssayReview, ALWAYS_FAILS)
        await temporal_client.get_workflow_handle(first["run_id"]).terminate("replaced")
        second = await ada.start(EssayReview, ALWAYS_FAILS, run_id=first["run_id"])
        before = await event_types(temporal_client, second["run_id"])
        refused = await ed.decide(first["run_id"], "publish_as_is", shown=first)
        after = await event_types(temporal_client, second["run_id"])
        still = await ed.show(second["run_id"])

    assert second["execution"] != first["execution"]
    assert gate_of(second)["gate"] == gate_of(first)["gate"] == "editor_call#1"
    assert refused["ok"] is False
    assert refused["error"]["code"] == "GATE_NOT_PENDING"
    assert "is not the run that was shown" in refused["error"]["message"]
    assert after == before  # not even a workflow task: the server refused it
    assert still["status"] == "waiting" and still["execution"] == second["execution"]


async def test_a_cold_answer_still_reads_the_gate_from_the_servers_description(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ada, ed = clients(temporal_client, task_queue, "ada", "ed")
    described: list[str] = []
    describe = WorkflowHandle.describe

    async def counted_describe(self: WorkflowHandle[Any, Any], *args: Any, **kwargs: Any) -> Any:
        described.append(self.id)
        return await describe(self, *args, **kwargs)

    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        monkeypatch.setattr(WorkflowHandle, "describe", counted_describe)
        done = await ed.decide(run["run_id"], "publish_as_is")

    assert described == [run["run_id"]]
    assert done["status"] == "finished"


async def test_a_view_of_an_execution_this_connection_never_learned_is_checked_once(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another connection's client was handed the view: it reads the description once (the run
    # is that execution, on its task queue), and answers the gate it reopens without.
    (ada,) = clients(temporal_client, task_queue, "ada")
    elsewhere = await Client.connect(
        temporal_client.service_client.config.target_host, namespace=temporal_client.namespace
    )
    ed, rita = clients(elsewhere, task_queue, "ed", "rita")
    described: list[str] = []
    describe = WorkflowHandle.describe

    async def counted_describe(self: WorkflowHandle[Any, Any], *args: Any, **kwargs: Any) -> Any:
        described.append(self.id)
        return await describe(self, *args, **kwargs)

    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        monkeypatch.setattr(WorkflowHandle, "describe", counted_describe)
        again = await ed.decide(run["run_id"], "one_more_round", shown=run)
        done = await rita.decide(run["run_id"], "publish_as_is", shown=again)

    assert described == [run["run_id"]]
    assert gate_of(again)["gate"] == "editor_call#2"
    assert done["status"] == "finished"
