"""A graph nobody serves: refused before anything starts, and a run that ended anyhow lists so.

A mistyped name used to start a run no worker could take: it stayed Running for good while the
worker logged a traceback per task. A client now asks the task queue's catalogue first (a name
found there is believed for a while, so a client starting many runs asks once), and a
``@graph`` class, which is the graph itself, is started without asking.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
)

from lockgate import GraphClient
from lockgate.clients._graph_client import starting_attributes
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import PASSES_FIRST_TIME, essay_people, eventually


class CountingQueries(Interceptor):
    """Counts the queries a client sends, by name."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        counter = self

        class Counting(OutboundInterceptor):
            async def query_workflow(self, input: QueryWorkflowInput) -> Any:
                counter.sent.append(input.query)
                return await super().query_workflow(input)

        return Counting(next)


def counted(client: Client) -> tuple[Client, CountingQueries]:
    queries = CountingQueries()
    settings = client.config()
    settings["interceptors"] = [*settings["interceptors"], queries]
    return Client(**settings), queries


async def test_a_start_of_a_graph_nobody_serves_is_refused_and_starts_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    run_id = f"nope-{uuid4().hex[:12]}"
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        refused = await ada.start("nope:graph", {"title": "x"}, run_id=run_id)
        unsigned = await GraphClient(temporal_client, task_queue).start("nope:graph", {})
        described = await ada.show(run_id)

    assert refused["ok"] is False
    assert refused["error"]["code"] == "NOT_FOUND"
    assert refused["error"]["message"] == (
        f"No graph named 'nope:graph' on task queue '{task_queue}'; served: essay:review. "
        "Nothing was started (`lockgate graphs` lists them with their inputs)."
    )
    assert unsigned["error"] == refused["error"]
    assert described["error"]["code"] == "NOT_FOUND"  # no run under that id: nothing started


async def test_a_start_with_no_worker_to_say_what_it_serves_is_refused(
    temporal_client: Client, task_queue: str
) -> None:
    client = GraphClient(temporal_client, task_queue)
    refused = await client.start("essay:review", PASSES_FIRST_TIME, wait=False)

    assert refused["error"]["code"] == "NOT_FOUND"
    assert refused["error"]["message"].startswith(
        f"Nothing was started: the graphs served on task queue '{task_queue}' cannot be read. "
        f"No worker of task queue '{task_queue}' answered"
    )


async def test_a_graph_named_by_a_string_is_looked_up_once_and_by_its_class_never(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people(wren={"scopes": ["essay:publish"]})
    client, queries = counted(temporal_client)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        wren = GraphClient(client, task_queue, signer=people.signer("wren"))
        by_class = await wren.start(EssayReview, PASSES_FIRST_TIME)
        after_class = queries.sent.count("describe")
        by_name = [await wren.start("essay:review", PASSES_FIRST_TIME) for _ in range(3)]

    assert by_class["status"] == "finished"
    assert [run["status"] for run in by_name] == ["finished"] * 3
    assert after_class == 0  # a class costs the start no round trip
    assert queries.sent.count("describe") == 1  # three starts by name: one catalogue query


async def test_a_run_of_an_unserved_type_ended_with_terminate_lists_as_terminated(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # What an older client, or `temporal workflow start`, leaves behind: a run no worker takes.
    run_id = f"nope-{uuid4().hex[:12]}"
    async with lockgate_worker(graphs=[EssayReview], directory=essay_people().directory):
        handle = await temporal_client.start_workflow(
            "nope:graph",
            {"inputs": {}},
            id=run_id,
            task_queue=task_queue,
            search_attributes=starting_attributes("nope:graph"),
        )
        await handle.terminate("mistyped")
        listed = await eventually(
            lambda: GraphClient(temporal_client, task_queue).list(),
            lambda rows: any(
                row["run_id"] == run_id and row["execution"] != "running" for row in rows
            ),
            what="the terminated run listed as closed",
        )

    assert [row["status"] for row in listed if row["run_id"] == run_id] == ["terminated"]
