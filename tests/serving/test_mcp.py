"""``lockgate mcp`` with the MCP SDK's own client, in the protocol Claude's hosts speak.

The server is a client of a real lockgate worker on the real dev server; the MCP client talks to
it in process (the transports have their own tests in test_mcp_transports.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast
from uuid import uuid4

import mcp_types as types
import pytest
from mcp import Client, UriTemplate
from mcp.client.client import ConnectMode
from mcp.client.session import ElicitationFnT, MessageHandlerFnT
from temporalio.client import Client as TemporalClient

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.memo_clearance import MemoClearance
from lockgate.operations import Operations
from lockgate.serving import build_mcp_server
from lockgate.serving._gate_watch import GATE_URI_TEMPLATE, GATES_URI, gate_uri
from lockgate.serving._mcp import PLAN_META_KEY, REQUEST_ID_META_KEY
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, eventually, signed_answer, signed_resume
from tests.helpers.serving import MCP_NAME, RATE_BUDGET, data_of, people, refusal_of, registry, runs

pytestmark = pytest.mark.timeout(90)


@asynccontextmanager
async def mcp_client(
    temporal_client: TemporalClient,
    task_queue: str,
    *,
    mode: ConnectMode = "legacy",
    as_principal: str | None = None,
    identities: Identities | None = None,
    elicit: ElicitationFnT | None = None,
    on_message: MessageHandlerFnT | None = None,
) -> AsyncIterator[Client]:
    """An MCP client (handshake era, as Claude's hosts) of a server for ``task_queue``."""
    signer = None
    if as_principal:
        assert identities is not None, "a server signing as someone needs their Identities"
        signer = identities.signer(as_principal, "mcp")
    operations = Operations(temporal_client, task_queue, signer)
    server = build_mcp_server(operations, poll_seconds=0.1)
    async with Client(
        server,
        mode=mode,
        elicitation_callback=elicit,
        message_handler=on_message,
    ) as client:
        yield client


async def start_essay(client: Client) -> dict[str, Any]:
    """An essay:review run that stops at its editor's gate, started over MCP."""
    return data_of(
        await client.call_tool("graph__start", {"graph": "essay:review", "inputs": ALWAYS_FAILS})
    )


# Tools ------------------------------------------------------------------------------------------


async def test_tools_are_listed_with_names_hosts_accept_and_their_schemas(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    async with (
        lockgate_worker(tools=registry(), graphs=[EssayReview]),
        mcp_client(temporal_client, task_queue) as client,
    ):
        listed = (await client.list_tools()).tools

    names = {each.name: each for each in listed}
    assert all(MCP_NAME.fullmatch(name) for name in names)
    assert {"graph__list", "graph__start", "graph__pending", "graph__show"} <= set(names)
    assert {"graph__decide", "graph__resume", "tools__confirm"} <= set(names)
    count = names["demo__count"]
    assert count.input_schema["type"] == "object"
    assert count.input_schema["required"] == ["token"]
    assert "demo:count" in (count.description or "")
    assert "essay__write" in names


async def test_a_tool_call_runs_once_on_the_worker_and_answers_its_data(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    token = uuid4().hex
    async with (
        lockgate_worker(tools=registry()),
        mcp_client(temporal_client, task_queue) as client,
    ):
        result = await client.call_tool("demo__count", {"token": token})

    assert data_of(result) == {"token": token, "runs": 1}
    assert result.meta is not None and result.meta[REQUEST_ID_META_KEY]
    assert runs[token] == 1


async def test_a_call_asked_again_with_its_request_id_answers_the_first_result(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    token = uuid4().hex
    same = cast(types.RequestParamsMeta, {REQUEST_ID_META_KEY: f"host-retry-{token}"})
    async with (
        lockgate_worker(tools=registry()),
        mcp_client(temporal_client, task_queue) as client,
    ):
        first = await client.call_tool("demo__count", {"token": token}, meta=same)
        again = await client.call_tool("demo__count", {"token": token}, meta=same)
        other = await client.call_tool("demo__count", {"token": token})

    assert data_of(first) == data_of(again) == {"token": token, "runs": 1}
    assert again.meta is not None and again.meta[REQUEST_ID_META_KEY] == f"host-retry-{token}"
    assert data_of(other)["runs"] == 2


async def test_every_refusal_is_a_result_with_its_code_and_sentence(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    token = uuid4().hex
    async with (
        lockgate_worker(tools=registry(), directory=crowd.directory),
        mcp_client(temporal_client, task_queue) as client,
    ):
        invalid = await client.call_tool("demo__count", {"token": 7})
        missing = await client.call_tool("demo__count", {})
        forbidden = await client.call_tool("demo__secret", {})
        unknown = await client.call_tool("demo__nothing", {})
        calls = [await client.call_tool("demo__count", {"token": token}) for _ in range(4)]

    assert refusal_of(invalid)["code"] == "VALIDATION_ERROR"
    assert "token" in refusal_of(missing)["message"]
    assert refusal_of(forbidden)["code"] == "FORBIDDEN"
    assert "demo:secret" in refusal_of(forbidden)["message"]
    assert refusal_of(unknown)["code"] == "TOOL_NOT_FOUND"
    # The pipe is unverified:temporal, one caller with one budget per tool.
    assert [each.is_error for each in calls] == [False] * RATE_BUDGET + [True]
    assert refusal_of(calls[-1])["code"] == "RATE_LIMITED"
    assert runs[token] == RATE_BUDGET


async def test_a_planned_call_is_checked_in_full_and_runs_nothing(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    token = uuid4().hex
    plan = cast(types.RequestParamsMeta, {PLAN_META_KEY: True})
    async with (
        lockgate_worker(tools=registry()),
        mcp_client(temporal_client, task_queue) as client,
    ):
        planned = await client.call_tool("demo__launch", {"token": token}, meta=plan)
        forbidden = await client.call_tool("demo__secret", {}, meta=plan)
        invalid = await client.call_tool("demo__count", {"token": 1}, meta=plan)

    assert data_of(planned)["plan"] == {
        "tool": "demo:launch",
        "mutating": False,
        "requires_confirmation": True,
        "scopes_required": [],
        "timeout": data_of(planned)["plan"]["timeout"],
        "args": {"token": token},
    }
    assert refusal_of(forbidden)["code"] == "FORBIDDEN"
    assert refusal_of(invalid)["code"] == "VALIDATION_ERROR"
    assert runs[token] == 0


async def test_a_tool_that_asks_for_confirmation_asks_the_person_through_elicitation(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    asked: list[str] = []
    yes, no = uuid4().hex, uuid4().hex

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        approve = len(asked) == 1  # yes to the first, no to the second
        return types.ElicitResult(action="accept", content={"approve": approve})

    async with (
        lockgate_worker(tools=registry()),
        mcp_client(temporal_client, task_queue, elicit=answer) as client,
    ):
        confirmed = await client.call_tool("demo__launch", {"token": yes})
        declined = await client.call_tool("demo__launch", {"token": no})

    assert data_of(confirmed) == {"launched": yes, "runs": 1}
    assert refusal_of(declined)["code"] == "CONFIRMATION_DECLINED"
    assert "did not run" in refusal_of(declined)["message"]
    assert len(asked) == 2 and "demo:launch" in asked[0]
    assert runs[no] == 0


async def test_a_2026_client_confirms_through_the_input_required_round_trip(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    token = uuid4().hex

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    async with (
        lockgate_worker(tools=registry()),
        mcp_client(temporal_client, task_queue, mode="auto", elicit=approve) as client,
    ):
        confirmed = await client.call_tool("demo__launch", {"token": token})

    # The retry after the answer carries the first request id (sealed), so it ran once.
    assert data_of(confirmed) == {"launched": token, "runs": 1}


async def test_without_elicitation_a_confirmation_is_the_step_to_call(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    token = uuid4().hex
    async with (
        lockgate_worker(tools=registry()),
        mcp_client(temporal_client, task_queue) as client,
    ):
        asked = data_of(await client.call_tool("demo__launch", {"token": token}))
        ran_before = runs[token]
        wrong = await client.call_tool(
            "tools__confirm", {"request_id": asked["request_id"], "token": "not-it"}
        )
        confirmed = await client.call_tool(
            "tools__confirm",
            {"request_id": asked["request_id"], "token": asked["confirm_token"]},
        )

    assert asked["requires_confirmation"] is True
    assert "tools__confirm" in asked["next"]
    assert ran_before == 0
    assert refusal_of(wrong)["code"] == "VALIDATION_ERROR"
    assert data_of(confirmed) == {"launched": token, "runs": 1}


async def test_an_agent_server_signs_its_calls_and_a_confirmation_still_asks(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    token = uuid4().hex
    async with (
        lockgate_worker(tools=registry(), directory=crowd.directory),
        mcp_client(temporal_client, task_queue, as_principal="agent-7", identities=crowd) as agent,
        mcp_client(temporal_client, task_queue) as anyone,
    ):
        read = await agent.call_tool("demo__secret", {})
        refused = await anyone.call_tool("demo__secret", {})
        asked = data_of(await agent.call_tool("demo__launch", {"token": token}))

    assert data_of(read) == {"secret": "swordfish"}
    assert refusal_of(refused)["code"] == "FORBIDDEN"
    # The server signs for its agent without asking anyone: that is not a "yes".
    assert asked["requires_confirmation"] is True
    assert runs[token] == 0


# Graphs and gates -------------------------------------------------------------------------------


async def test_a_run_its_gate_as_a_resource_an_unsigned_answer_refused_a_signed_one_taken(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    ed = crowd.signer("ed")
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        mcp_client(temporal_client, task_queue, as_principal="ed", identities=crowd) as client,
    ):
        graphs = data_of(await client.call_tool("graph__list", {}))
        run = await start_essay(client)
        pending = await eventually(
            lambda: client.call_tool("graph__pending", {"role": "editor"}),
            lambda listed: data_of(listed)["count"] == 1,
            what="the gate in pending (visibility catches up)",
        )
        resources = (await client.list_resources()).resources
        read = await client.read_resource(gate_uri(run["run_id"]))
        # Started as ed, who holds the key; the server still never answers a gate itself.
        unsigned = await client.call_tool(
            "graph__decide", {"run": run["run_id"], "choice": "publish_as_is"}
        )
        proof = await GraphClient(temporal_client, task_queue, ed).sign_decide(
            run["run_id"], "publish_as_is"
        )
        mismatched = await client.call_tool(
            "graph__decide", {"run": run["run_id"], "choice": "abandon", "proof": proof}
        )
        own = await client.call_tool(
            "graph__decide", {"run": run["run_id"], "choice": "publish_as_is", "proof": proof}
        )
        shown = data_of(await client.call_tool("graph__show", {"run": run["run_id"]}))

    assert graphs["count"] == 1 and graphs["graphs"][0]["name"] == "essay:review"
    assert run["status"] == "waiting" and run["awaiting"]["role"] == "editor"
    assert [row["run_id"] for row in data_of(pending)["pending"]] == [run["run_id"]]
    assert {GATES_URI, gate_uri(run["run_id"])} <= {str(each.uri) for each in resources}
    assert run["run_id"] in read.contents[0].text  # type: ignore[union-attr]
    assert refusal_of(unsigned)["code"] == "UNVERIFIED_APPROVER"
    assert "lockgate sign decide" in refusal_of(unsigned)["message"]
    assert refusal_of(mismatched)["code"] == "INVALID_DECISION"
    # This server started the run as ed, so ed's own signed answer is refused by the worker.
    assert refusal_of(own)["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert shown["run_id"] == run["run_id"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_resource_templates_are_listed_and_a_uri_made_from_one_reads_the_gate(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str, mode: Any
) -> None:
    crowd = people()
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        mcp_client(
            temporal_client, task_queue, mode=mode, as_principal="ada", identities=crowd
        ) as client,
    ):
        templates = (await client.list_resource_templates()).resource_templates
        run = await start_essay(client)
        await eventually(
            lambda: client.call_tool("graph__pending", {}),
            lambda listed: data_of(listed)["count"] == 1,
            what="the gate in pending (visibility catches up)",
        )
        made = UriTemplate.parse(templates[0].uri_template).expand({"run_id": run["run_id"]})
        read = await client.read_resource(made)

    assert [
        (each.uri_template, each.name, bool(each.description), each.mime_type) for each in templates
    ] == [(GATE_URI_TEMPLATE, "gate of a run", True, "application/json")]
    assert made == gate_uri(run["run_id"])
    text = read.contents[0]
    assert isinstance(text, types.TextResourceContents)
    gate = json.loads(text.text)
    assert (gate["run_id"], gate["role"]) == (run["run_id"], "editor")


async def test_an_approver_answers_a_run_an_agent_started_and_an_unsigned_pipe_may_not_start(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    ed = crowd.signer("ed")
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        mcp_client(temporal_client, task_queue) as anyone,
        mcp_client(temporal_client, task_queue, as_principal="ada", identities=crowd) as client,
    ):
        unsigned = await anyone.call_tool(
            "graph__start", {"graph": "essay:review", "inputs": ALWAYS_FAILS}
        )
        run = await start_essay(client)
        proof = signed_answer(ed, run, "publish_as_is")
        answered = await client.call_tool("graph__decide", {"run": run["run_id"], "proof": proof})
        again = await client.call_tool("graph__decide", {"run": run["run_id"], "proof": proof})

    # A graph with gates starts only signed: four eyes need to know who asked.
    assert refusal_of(unsigned)["code"] == "UNAUTHORIZED"
    assert run["requester"]["actor"] == "ada"
    assert data_of(answered)["status"] == "finished"
    assert data_of(answered)["trail"][-1]["by"]["actor"] == "ed"
    assert refusal_of(again)["code"] == "GATE_NOT_PENDING"  # the run has finished


async def test_a_proof_for_another_run_or_by_the_requester_is_refused_and_the_gate_waits(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    ada, ed = crowd.signer("ada"), crowd.signer("ed")
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        mcp_client(temporal_client, task_queue, as_principal="ada", identities=crowd) as client,
    ):
        first, second = [await start_essay(client) for _ in range(2)]
        elsewhere = await client.call_tool(
            "graph__decide",
            {"run": second["run_id"], "proof": signed_answer(ed, first, "publish_as_is")},
        )
        own = await client.call_tool(
            "graph__decide",
            {"run": first["run_id"], "proof": signed_answer(ada, first, "publish_as_is")},
        )
        not_json = await client.call_tool(
            "graph__decide", {"run": first["run_id"], "proof": "{not json"}
        )
        still = data_of(await client.call_tool("graph__show", {"run": first["run_id"]}))

    # A proof binds its run, execution and gate: elsewhere it proves nobody.
    assert refusal_of(elsewhere)["code"] == "UNVERIFIED_APPROVER"
    assert refusal_of(own)["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert refusal_of(not_json)["code"] == "VALIDATION_ERROR"
    assert still["status"] == "waiting"


async def test_start_refuses_what_it_cannot_start_by_name(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    async with (
        lockgate_worker(graphs=[EssayReview]),
        mcp_client(temporal_client, task_queue) as client,
    ):
        unknown = await client.call_tool("graph__start", {"graph": "essay:nothing"})
        not_object = await client.call_tool(
            "graph__start", {"graph": "essay:review", "inputs": "[1, 2]"}
        )
        no_run = await client.call_tool("graph__show", {"run": "essay:review-nothing"})

    assert refusal_of(unknown)["code"] == "NOT_FOUND"
    assert "essay:review" in refusal_of(unknown)["message"]
    assert refusal_of(not_object)["code"] == "VALIDATION_ERROR"
    assert "JSON object of starting fields" in refusal_of(not_object)["message"]
    assert refusal_of(no_run)["code"] == "NOT_FOUND"


async def test_a_parked_run_is_resumed_with_a_signed_proof_and_not_without(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    rod = crowd.signer("rod")
    async with (
        lockgate_worker(graphs=[MemoClearance], directory=crowd.directory),
        mcp_client(temporal_client, task_queue, as_principal="ada", identities=crowd) as client,
        mcp_client(temporal_client, task_queue) as anyone,
    ):
        run = data_of(
            await client.call_tool(
                "graph__start", {"graph": "memo:clearance", "inputs": {"memo": "Lunch menu"}}
            )
        )
        unsigned = await anyone.call_tool("graph__resume", {"run": run["run_id"]})
        as_ada = await client.call_tool("graph__resume", {"run": run["run_id"]})
        resumed = data_of(
            await anyone.call_tool(
                "graph__resume", {"run": run["run_id"], "proof": signed_resume(rod, run)}
            )
        )

    assert run["status"] == "parked" and run["parked"]["node"] == "release"
    assert refusal_of(unsigned)["code"] == "UNAUTHORIZED"
    # The server's own principal may resume, and is judged: ada may not release.
    assert refusal_of(as_ada)["code"] == "FORBIDDEN"
    assert "memo:release, which ada does not hold" in refusal_of(as_ada)["message"]
    assert resumed["status"] == "finished"
    assert resumed["trail"][-1]["by"]["actor"] == "rod"


# Claude's hosts speak the handshake era, where subscribing is how a client asks.
@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
async def test_a_subscribed_client_hears_when_a_gate_opens_and_closes(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            heard.append(message)

    def updates(uri: str) -> int:
        return sum(
            1
            for each in heard
            if isinstance(each, types.ResourceUpdatedNotification) and str(each.params.uri) == uri
        )

    ed = crowd.signer("ed")
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        mcp_client(
            temporal_client,
            task_queue,
            as_principal="ada",
            identities=crowd,
            on_message=on_message,
        ) as client,
    ):
        await client.list_resources()
        await client.subscribe_resource(GATES_URI)
        run = await start_essay(client)
        await client.subscribe_resource(gate_uri(run["run_id"]))
        await eventually(lambda: asyncio.sleep(0.05), lambda _: updates(GATES_URI) >= 1)
        opened = updates(GATES_URI)
        await client.call_tool(
            "graph__decide",
            {"run": run["run_id"], "proof": signed_answer(ed, run, "abandon")},
        )
        await eventually(
            lambda: asyncio.sleep(0.05), lambda _: updates(gate_uri(run["run_id"])) >= 1
        )

    assert opened >= 1
    assert any(isinstance(each, types.ResourceListChangedNotification) for each in heard)
