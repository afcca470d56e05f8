"""A run its last gate declined reads ``declined``, one that ran to its end otherwise
``finished``: a gate names the option that says no (``Ask(rejection=...)``, or its policy's).

``ReviewedEssay``'s editor publishes a draft, asks for another round, or abandons it, the gate's
rejection. ada writes, ed edits and publishes, rita edits and publishes too.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.client import Client

from lockgate import END, Ask, Edge, GraphClient, Quorum, Route, graph
from lockgate.errors import GraphDeclarationError
from lockgate.graphs._compile import compile_graph
from lockgate.testing import WorkerFactory
from lockgate.workflows._search_attributes import LOCKGATE_STATE
from tests.graphs.test_ending_routes import Decision, pay, quote
from tests.helpers.graphs import ReviewedEssay, essay_people, eventually

PEOPLE = essay_people(rita={"roles": ["editor"], "scopes": ["essay:publish"]})
ESSAY = {"title": "Tides"}


def refund_asking(ask: Ask) -> type[BaseModel]:
    @graph(
        "declined:refund",
        "A refund a lead approves or declines.",
        start=quote,
        edges=[Edge(quote, Decision)],
        routes=[Route(Decision.APPROVE, to=pay), Route(Decision.DECLINE, to=END)],
        asks=[ask],
    )
    class Refund(BaseModel):
        order: str
        cents: int = 0
        outcome: str = ""

    return Refund


def refusal_of(ask: Ask) -> str:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(refund_asking(ask))
    return str(refused.value)


# Compiling ---------------------------------------------------------------------------------------


def test_a_gate_of_one_approver_names_its_rejection_in_its_policy() -> None:
    compiled = compile_graph(refund_asking(Ask(Decision, of="lead", rejection=Decision.DECLINE)))

    policy = compiled.asks["decision"].policy
    assert policy.single
    assert policy.rejection == "decline"
    assert policy.declines("decline") and not policy.declines("approve")


def test_a_gate_without_a_rejection_declines_nothing() -> None:
    policy = compile_graph(refund_asking(Ask(Decision, of="lead"))).asks["decision"].policy

    assert policy.rejection is None
    assert not policy.declines("decline")


def test_a_gates_rejection_is_its_panels_too() -> None:
    ask = Ask(Decision, of="lead", policy=Quorum(2, of_n=3), rejection=Decision.DECLINE)

    assert compile_graph(refund_asking(ask)).asks["decision"].policy.rejection == "decline"


def test_a_gate_and_its_policy_naming_different_rejections_is_refused() -> None:
    ask = Ask(
        Decision,
        of="lead",
        policy=Quorum(2, rejection=Decision.APPROVE),
        rejection=Decision.DECLINE,
    )

    assert refusal_of(ask) == (
        "Graph Refund: Ask(Decision) names the rejection <Decision.DECLINE: 'decline'> and its "
        "policy <Decision.APPROVE: 'approve'>: a gate has one option that says no. Name it once "
        "(rejection=)."
    )


def test_a_gate_rejection_that_is_not_one_of_its_options_is_refused() -> None:
    class Elsewhere(str, Enum):
        NO = "no"

    refused = refusal_of(Ask(Decision, of="lead", rejection=Elsewhere.NO))

    assert "Ask(Decision) whose rejection <Elsewhere.NO: 'no'> is not an option of Decision" in (
        refused
    )


# Runs on the dev server --------------------------------------------------------------------------


async def _answered(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    answers: list[tuple[str, str]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An essay started as ada and answered in turn (each ``(who, option)``): the last answer's
    result, and the run as ``show`` reads it once it has closed."""
    async with lockgate_worker(graphs=[ReviewedEssay], directory=PEOPLE.directory):
        as_ = {
            who: GraphClient(temporal_client, task_queue, signer=PEOPLE.signer(who))
            for who in ("ada", *(who for who, _ in answers))
        }
        run = await as_["ada"].start(ReviewedEssay, ESSAY)
        for who, option in answers:
            answered = await as_[who].decide(run["run_id"], option)
        await temporal_client.get_workflow_handle(run["run_id"]).result()
        shown = await as_["ada"].show(run["run_id"])
    return dict(answered), dict(shown)


async def test_a_run_its_gate_declined_reads_declined_in_its_answer_and_show(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    answered, shown = await _answered(
        lockgate_worker, temporal_client, task_queue, [("ed", "abandon")]
    )

    assert answered["status"] == "declined"
    assert shown["status"] == "declined"
    assert shown["trail"][-1]["operation"] == "essay:abandon"


async def test_a_run_its_gate_approved_reads_finished(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    answered, shown = await _answered(
        lockgate_worker, temporal_client, task_queue, [("ed", "publish_as_is")]
    )

    assert answered["status"] == "finished"
    assert shown["status"] == "finished"
    assert shown["fields"]["url"] == "https://essays.example/tides"


async def test_only_the_last_gate_decides_a_later_yes_after_a_no_reads_finished(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """ed asks for another round (no rejection), rita publishes: finished. The run's status is
    the last gate's word, not any gate's."""
    answered, shown = await _answered(
        lockgate_worker,
        temporal_client,
        task_queue,
        [("ed", "one_more_round"), ("rita", "publish_as_is")],
    )

    assert answered["status"] == shown["status"] == "finished"


async def test_list_tells_a_declined_run_from_a_finished_one_and_pending_lists_neither(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    async with lockgate_worker(graphs=[ReviewedEssay], directory=PEOPLE.directory):
        ada = GraphClient(temporal_client, task_queue, signer=PEOPLE.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=PEOPLE.signer("ed"))
        published = await ada.start(ReviewedEssay, ESSAY)
        abandoned = await ada.start(ReviewedEssay, ESSAY)
        await ed.decide(published["run_id"], "publish_as_is")
        await ed.decide(abandoned["run_id"], "abandon")
        await eventually(
            lambda: temporal_client.count_workflows(
                f"TaskQueue = '{task_queue}' AND LockgateGraph = 'essay:reviewed' "
                "AND ExecutionStatus = 'Completed'"
            ),
            lambda counted: counted.count == 2,
            what="both runs closed in visibility",
        )
        listed = {row["run_id"]: row for row in await ada.list(ReviewedEssay)}
        pending = await ed.pending()
        described = await temporal_client.get_workflow_handle(abandoned["run_id"]).describe()

    assert listed[published["run_id"]]["status"] == "finished"
    assert listed[abandoned["run_id"]]["status"] == "declined"
    assert {row["execution"] for row in listed.values()} == {"completed"}
    assert pending == []
    # The run writes how it ended to its memo (not billed); its search attribute is left as
    # the gate wrote it, which `pending` believes only with the run still running.
    assert (await described.memo())["lockgate_status"] == "declined"
    assert described.typed_search_attributes.get(LOCKGATE_STATE) == "waiting"
