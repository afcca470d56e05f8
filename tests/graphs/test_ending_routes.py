"""A route may end the run: ``Route(case, to=END)``, from a gate's option or a node's result.

A refund is screened (spam ends the run at once), quoted, and a support lead approves it (it is
paid) or declines it (the run ends, with no tool that does nothing). ``sam`` asks, ``lee`` is a
lead who may pay, ``lou`` is a lead who may not.
"""

from __future__ import annotations

from datetime import timedelta
from enum import Enum
from typing import Annotated, Any

import pytest
from jinja2 import Environment, PackageLoader
from pydantic import BaseModel
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import (
    END,
    Ask,
    Deadline,
    Edge,
    GraphClient,
    LockgatePlugin,
    Route,
    Target,
    graph,
    tool,
)
from lockgate.cli._runs import _leads_to
from lockgate.contracts import ChoiceView
from lockgate.errors import GraphDeclarationError
from lockgate.graphs._compile import compile_graph
from lockgate.inbox._words import FILTERS, leads_to
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import eventually
from tests.helpers.support import SECRET


class Decision(str, Enum):
    APPROVE = "approve"
    DECLINE = "decline"


class Screening(str, Enum):
    GENUINE = "genuine"
    SPAM = "spam"


class Screened(BaseModel):
    screening: Screening


class Quote(BaseModel):
    cents: int


class Outcome(BaseModel):
    outcome: str


@tool("ending:screen", "Screen a refund request for spam.", local=True)
async def screen(order: str) -> Screened:
    return Screened(screening=Screening.SPAM if order.startswith("spam") else Screening.GENUINE)


@tool("ending:quote", "Work out what the refund would be.", local=True)
async def quote(order: str) -> Quote:
    return Quote(cents=500)


@tool("ending:pay", "Pay the refund.", scopes=["refund:pay"], mutating=True)
async def pay(order: str, cents: int) -> Outcome:
    return Outcome(outcome=f"paid {cents} cents for {order}")


@tool("ending:__end__", "A tool whose state would be the end's.")
async def impostor(order: str) -> None:
    return None


ASK = Ask(Decision, of="support_lead", because="A refund is paid once a lead agrees.")


@graph(
    "ending:refund",
    "Screen a refund, quote it, have a lead approve it, then pay it.",
    start=screen,
    edges=[Edge(quote, Decision)],
    routes=[
        Route(Screening.SPAM, to=END),
        Route(Screening.GENUINE, to=quote),
        Route(Decision.APPROVE, to=pay),
        Route(Decision.DECLINE, to=END),
    ],
    asks=[ASK],
)
class EndingRefund(BaseModel):
    order: Annotated[str, Target()]
    cents: int = 0
    outcome: str = ""
    screening: Screening | None = None


@graph(
    "ending:lapsing",
    "A refund declined when no lead answers within two days.",
    start=quote,
    edges=[Edge(quote, Decision)],
    routes=[Route(Decision.APPROVE, to=pay), Route(Decision.DECLINE, to=END)],
    asks=[
        Ask(
            Decision,
            of="support_lead",
            because="A refund is paid once a lead agrees.",
            deadline=Deadline(timedelta(days=2), take=Decision.DECLINE),
        )
    ],
)
class LapsingRefund(BaseModel):
    order: Annotated[str, Target()]
    cents: int = 0
    outcome: str = ""


def refund_people() -> Identities:
    return Identities(
        {
            "sam": {"roles": ["support_lead"], "scopes": ["refund:pay"]},
            "lee": {"roles": ["support_lead"], "scopes": ["refund:pay"]},
            "lou": {"roles": ["support_lead"]},
        }
    )


def refusal_of(**declared: Any) -> str:
    """The compiler's refusal of a refund graph declared with ``declared``."""
    declaration: dict[str, Any] = {
        "start": quote,
        "edges": [Edge(quote, Decision)],
        "routes": [Route(Decision.APPROVE, to=pay), Route(Decision.DECLINE, to=END)],
        "asks": [ASK],
    } | declared

    @graph("ending:doubtful", "A doubtful refund.", **declaration)
    class Doubtful(BaseModel):
        order: str
        cents: int = 0
        outcome: str = ""
        screening: Screening | None = None

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(Doubtful)
    return str(refused.value)


# Compiling ---------------------------------------------------------------------------------------


def test_a_route_to_end_compiles_to_the_end_state_and_no_node() -> None:
    compiled = compile_graph(EndingRefund)

    assert compiled.routes["decision"]["decline"].to == "__end__"
    assert compiled.routes["screen"]["spam"].to == "__end__"
    assert "__end__" not in compiled.nodes
    assert "__end__" not in compiled.asks
    assert compiled.catalogue()["ends"] == {"screen": ["spam"], "decision": ["decline"]}


def test_a_graph_without_routes_to_end_catalogues_no_ends() -> None:
    @graph("ending:plain", "Quote, and nothing else.", start=quote)
    class Plain(BaseModel):
        order: str
        cents: int = 0

    assert compile_graph(Plain).catalogue()["ends"] == {}


def test_a_deadline_may_take_an_option_that_ends_the_run() -> None:
    compiled = compile_graph(LapsingRefund)

    assert compiled.asks["decision"].deadline is not None
    assert compiled.routes["decision"]["decline"].to == "__end__"


def test_a_graph_that_starts_at_end_is_refused_with_a_sentence() -> None:
    assert refusal_of(start=END) == (
        "Graph Doubtful starts at END, so a run would end before anything ran: start at a node "
        "or a gate. END is only where a Route leads when its case ends the run."
    )


def test_an_edge_to_end_is_refused_as_saying_what_no_edge_says() -> None:
    refused = refusal_of(edges=[Edge(quote, Decision), Edge(pay, END)])  # type: ignore[arg-type]

    assert refused == (
        "Graph Doubtful: Edge(pay, END) says what a node with no edge out already does: it ends "
        "the run after it runs. Drop the Edge; END is for Routes."
    )


def test_a_budget_on_a_route_to_end_is_refused() -> None:
    refused = refusal_of(
        routes=[
            Route(Decision.APPROVE, to=pay),
            Route(Decision.DECLINE, to=END, at_most=2, then_ask=Decision),
        ]
    )

    assert "route 'decline' leads to END with a budget" in refused


def test_end_is_not_a_gate_a_spent_budget_can_open() -> None:
    refused = refusal_of(
        start=screen,
        edges=[Edge(quote, Decision)],
        routes=[
            Route(Screening.SPAM, to=screen, at_most=2, then_ask=END),  # type: ignore[arg-type]
            Route(Screening.GENUINE, to=quote),
            Route(Decision.APPROVE, to=pay),
            Route(Decision.DECLINE, to=END),
        ],
    )

    assert "the then_ask is END, which is not a node" in refused


def test_a_gate_with_an_option_routed_nowhere_is_still_refused_beside_a_route_to_end() -> None:
    refused = refusal_of(routes=[Route(Decision.DECLINE, to=END)])

    assert "declares no Route for case APPROVE" in refused


def test_a_tool_whose_state_would_be_the_ends_is_refused() -> None:
    refused = refusal_of(
        routes=[Route(Decision.APPROVE, to=impostor), Route(Decision.DECLINE, to=END)]
    )

    assert refused == (
        "Graph Doubtful: the tool ending:__end__ compiles to the state '__end__', the state of a "
        "run that has ended (END). Rename it."
    )


# What a person is shown --------------------------------------------------------------------------


def test_the_command_line_and_the_inbox_say_an_ending_option_ends_the_run() -> None:
    ending: ChoiceView = {"option": "decline", "leads_to": None, "operation": "end", "needs": []}
    to_a_gate: ChoiceView = {"option": "escalate", "leads_to": None, "operation": None, "needs": []}
    to_a_node: ChoiceView = {
        "option": "approve",
        "leads_to": "pay",
        "operation": "ending:pay",
        "needs": [],
    }

    assert [leads_to(choice) for choice in (ending, to_a_gate, to_a_node)] == [
        "ends the run",
        "a gate",
        "pay",
    ]
    assert [_leads_to(choice) for choice in (ending, to_a_gate, to_a_node)] == [
        "(ends the run)",
        "(a gate)",
        "pay",
    ]


def test_the_inbox_shows_an_ending_option_as_ending_the_run() -> None:
    pages = Environment(loader=PackageLoader("lockgate.inbox", "templates"), autoescape=True)
    pages.filters.update(FILTERS)
    row = {
        "run_id": "refund-1",
        "gate": "decision#1",
        "choices": [
            {"option": "approve", "leads_to": "pay", "operation": "ending:pay", "needs": []},
            {"option": "decline", "leads_to": None, "operation": "end", "needs": []},
        ],
    }

    shown = pages.get_template("options.html").render(row=row, viewer="lee")

    assert "Next: Pay" in shown
    assert "Ends the run" in shown
    assert shown.count('data-ends-run="yes"') == 1
    assert 'data-choice="decline" data-label="Decline" data-leads-to="" data-ends-run="yes"' in (
        " ".join(shown.split())
    )


# Runs on the dev server --------------------------------------------------------------------------


async def test_the_gates_choices_show_the_option_that_ends_the_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = refund_people()
    async with lockgate_worker(
        tools=[screen, quote, pay], graphs=[EndingRefund], directory=people.directory
    ):
        sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
        asked = await sam.start(EndingRefund, {"order": "A-1"})
        metadata = await temporal_client.get_workflow_handle(asked["run_id"]).query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )

    assert asked["status"] == "waiting"
    gate = asked["awaiting"]
    assert gate is not None
    assert gate["choices"] == [
        {
            "option": "approve",
            "leads_to": "pay",
            "operation": "ending:pay",
            "needs": ["refund:pay"],
        },
        {"option": "decline", "leads_to": None, "operation": "end", "needs": []},
    ]
    assert "`approve`, `decline` (ends the run)" in metadata.current_details


async def test_declining_at_a_gate_routed_to_end_finishes_the_run_with_the_answer_last(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = refund_people()
    async with lockgate_worker(
        tools=[screen, quote, pay], graphs=[EndingRefund], directory=people.directory
    ):
        sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
        lou = GraphClient(temporal_client, task_queue, signer=people.signer("lou"))
        asked = await sam.start(EndingRefund, {"order": "A-1"})
        # lou may not pay, and may still decline: an ending option runs nothing.
        declined = await lou.decide(asked["run_id"], "decline")
        result = await temporal_client.get_workflow_handle(asked["run_id"]).result()

    assert declined["ok"] is True
    assert result["status"] == "finished"
    assert result["state"] is None
    assert result["awaiting"] is None
    assert [(row["node"], row["outcome"]) for row in result["trail"]] == [
        ("screen", "ran"),
        ("quote", "ran"),
        ("decision", "answered"),
    ]
    answered = result["trail"][-1]
    assert (answered["answer"], answered["by"]["actor"]) == ("decline", "lou")
    assert result["fields"]["outcome"] == ""


async def test_the_requester_cannot_take_an_option_that_ends_the_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = refund_people()
    async with lockgate_worker(
        tools=[screen, quote, pay], graphs=[EndingRefund], directory=people.directory
    ):
        sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
        asked = await sam.start(EndingRefund, {"order": "A-1"})
        refused = await sam.decide(asked["run_id"], "decline")
        shown = await sam.show(asked["run_id"])

    assert refused["ok"] is False
    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert shown["status"] == "waiting"


async def test_a_node_result_routed_to_end_finishes_the_run_after_that_node(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = refund_people()
    async with lockgate_worker(
        tools=[screen, quote, pay], graphs=[EndingRefund], directory=people.directory
    ):
        sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
        asked = await sam.start(EndingRefund, {"order": "spam-7"})
        result = await temporal_client.get_workflow_handle(asked["run_id"]).result()

    assert result["status"] == "finished"
    assert result["fields"]["screening"] == "spam"
    assert [(row["node"], row["outcome"]) for row in result["trail"]] == [("screen", "ran")]


async def test_pending_shows_the_ending_option_and_that_a_lead_who_may_not_pay_may_take_it(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = refund_people()
    async with lockgate_worker(
        tools=[screen, quote, pay], graphs=[EndingRefund], directory=people.directory
    ):
        sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
        asked = await sam.start(EndingRefund, {"order": "A-1"})
    reader = GraphClient(temporal_client, task_queue, directory=people.directory)
    rows = await eventually(
        lambda: reader.pending(of="support_lead", viewer="lou"),
        lambda rows: any(row["run_id"] == asked["run_id"] for row in rows),
        what="the run listed as pending",
    )

    row = next(row for row in rows if row["run_id"] == asked["run_id"])
    approve, decline = row["choices"]
    assert (decline["option"], decline["leads_to"], decline["operation"]) == (
        "decline",
        None,
        "end",
    )
    assert (decline["may"], decline["because"]) == (True, None)
    assert (approve["may"], approve["because"]) == (False, "needs")


async def test_a_deadline_that_takes_an_ending_option_finishes_the_run(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = refund_people()
    client = time_skipping_env.client
    plugin = LockgatePlugin([quote, pay], [LapsingRefund], people.directory, secret=SECRET)
    async with Worker(client, task_queue=task_queue, plugins=[plugin]):
        sam = GraphClient(client, task_queue, signer=people.signer("sam"))
        asked = await sam.start(LapsingRefund, {"order": "A-3"})
        result = await client.get_workflow_handle(asked["run_id"]).result()

    assert result["status"] == "finished"
    assert [(row["operation"], row["outcome"]) for row in result["trail"]] == [
        ("ending:quote", "ran"),
        ("deadline", "timed_out"),
    ]
    assert result["trail"][-1]["answer"] == "decline"
