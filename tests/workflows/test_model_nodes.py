"""Agent steps: a graph node where a model works with the node's tools, as the run's driver.

The model is Pydantic AI's deterministic ``FunctionModel`` (no network); see
``tests.helpers.model_node_graphs``. A tool call the driver may not make, or of a tool the step
does not offer, goes back to the model, which goes on; a spent budget opens a gate a verified
approver answers; a worker killed after the model answered replays without asking it again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI (lockgate[pydantic-ai]) needs Python 3.11+")

from pydantic import BaseModel
from pydantic_ai.messages import ToolReturnPart
from temporalio import workflow
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHistory,
)
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import (
    AgentStep,
    Ask,
    Edge,
    GraphClient,
    LockgatePlugin,
    ModelBudget,
    Route,
    graph,
    tool,
)
from lockgate.activities._activity_inputs import MODEL_CALL, ModelCallInput
from lockgate.contracts import RunView, TrailRow
from lockgate.devserver import temporal_binary
from lockgate.errors import GraphDeclarationError
from lockgate.graphs._compile import compile_graph
from lockgate.identity._seals import WorkerSecret
from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import eventually
from tests.helpers.model_node_graphs import (
    BudgetCall,
    CrashDesk,
    ScriptedModel,
    SupportDesk,
    close,
    desk_people,
    issue_refund,
    reaching_too_far,
    read_ticket,
    reading_twice,
    tool_returns,
)
from tests.helpers.saved_histories import (
    HISTORIES,
    HISTORY_SECRET,
    REGENERATE,
    UNSEALED,
    replayer,
    without_stack_traces,
)
from tests.helpers.support import REPOSITORY, SECRET, gate_of


def _desk(
    model: ScriptedModel, people: Identities, secret: WorkerSecret | None = None
) -> LockgatePlugin:
    return LockgatePlugin(
        graphs=[SupportDesk],
        directory=people.directory,
        secret=secret or people.secret,
        models={"desk-model": model.model},
    )


def _rows(trail: list[TrailRow]) -> list[tuple[str, str, str, str, str | None]]:
    return [
        (row["node"], row["operation"], row["outcome"], row["by"]["actor"], row.get("code"))
        for row in trail
    ]


QUESTION = {"question": "May I have my 90 back for ticket 7?"}


def _code(returned: ToolReturnPart) -> object:
    """The error code a tool return told the model."""
    content = returned.content
    assert isinstance(content, dict), content
    return content["error"]["code"]


# --- Tool calls the driver may not make ----------------------------------------------------------


async def test_an_agent_steps_forbidden_and_undeclared_tool_calls_go_back_to_its_model(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = desk_people()
    model = ScriptedModel(reaching_too_far)
    async with lockgate_worker(plugin=_desk(model, people)):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        done = await ada.show((await ada.start(SupportDesk, QUESTION))["run_id"])

    assert done["status"] == "finished", done
    assert len(model.seen) == 2
    told = {part.tool_name: part for part in tool_returns(model.seen[-1])}
    refund, shell, read = told["refunds__issue"], told["shell__run"], told["tickets__read"]
    assert (refund.outcome, _code(refund)) == ("denied", "FORBIDDEN")
    assert (shell.outcome, _code(shell)) == ("denied", "TOOL_NOT_FOUND")
    assert (read.outcome, read.content) == ("success", {"ticket": 7, "paid": 90})
    assert done["fields"]["answer"] == (
        "I could only read the ticket (refunds__issue: denied, shell__run: denied, "
        "tickets__read: success)."
    )
    assert _rows(done["trail"]) == [
        ("triage", "model:desk-model", "ran", "ada", None),
        ("triage", "refunds:issue", "refused", "ada", "FORBIDDEN"),
        ("triage", "shell__run", "refused", "ada", "TOOL_NOT_FOUND"),
        ("triage", "tickets:read", "ran", "ada", None),
        ("triage", "model:desk-model", "ran", "ada", None),
        ("triage", "desk:triage", "ran", "ada", None),
    ]
    refused = done["trail"][1]
    assert refused.get("needs") == ["refunds:issue"]
    assert "refunds:issue" in str(refused.get("why"))


# --- A spent budget opens a gate -----------------------------------------------------------------


async def test_an_agent_step_whose_budget_is_spent_waits_until_a_verified_lead_lets_it_go_on(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = desk_people()
    model = ScriptedModel(reading_twice)
    async with lockgate_worker(plugin=_desk(model, people)):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        lena = GraphClient(temporal_client, task_queue, signer=people.signer("lena"))
        waiting = await ada.start(SupportDesk, QUESTION)
        pending = await eventually(
            lambda: lena.pending(of="support_lead"),
            lambda rows: any(row["run_id"] == waiting["run_id"] for row in rows),
            what="the budget's gate listed as pending",
        )
        by_the_requester = await ada.decide(waiting["run_id"], "more")
        answered = await lena.decide(waiting["run_id"], "more")
        done = await lena.show(waiting["run_id"])

    assert answered["status"] == "finished", answered
    assert waiting["status"] == "waiting"
    assert gate_of(waiting)["gate"] == "budget_call#1"
    assert len(model.seen) == 3  # two requests, the gate, then the third
    row = next(row for row in pending if row["run_id"] == waiting["run_id"])
    assert (row["role"], row["options"]) == ("support_lead", ["more", "stop"])
    assert by_the_requester.get("error", {}).get("code") == "SELF_APPROVAL_FORBIDDEN"
    assert done["status"] == "finished", done
    assert done["fields"]["answer"] == "The ticket shows 90 paid (read 2 times)."
    # The step carried on with its conversation: the third request was sent all of it.
    assert [len(seen) for seen in model.seen] == [1, 3, 5]
    assert _rows(done["trail"]) == [
        ("triage", "model:desk-model", "ran", "ada", None),
        ("triage", "tickets:read", "ran", "ada", None),
        ("triage", "model:desk-model", "ran", "ada", None),
        ("triage", "tickets:read", "ran", "ada", None),
        ("triage", "desk:triage", "budget_spent", "ada", None),
        ("budget_call", "ask:support_lead", "answered", "lena", None),
        ("triage", "model:desk-model", "ran", "lena", None),
        ("triage", "desk:triage", "ran", "lena", None),
    ]


async def test_an_agent_step_stopped_at_its_budgets_gate_drops_its_conversation(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = desk_people()
    model = ScriptedModel(reading_twice)
    async with lockgate_worker(plugin=_desk(model, people)):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        lena = GraphClient(temporal_client, task_queue, signer=people.signer("lena"))
        waiting = await ada.show((await ada.start(SupportDesk, QUESTION))["run_id"])
        done = await lena.decide(waiting["run_id"], "stop")

    assert dict(waiting).get("conversations") == {
        "triage": {"messages": 4, "requests": 2, "input_tokens": 0, "output_tokens": 0}
        | _usage_of(waiting)
    }
    assert done["status"] == "finished", done
    assert done["fields"]["answer"] == "closed without an answer"
    assert len(model.seen) == 2
    assert [row["node"] for row in done["trail"]][-2:] == ["budget_call", "close"]
    assert "conversations" not in done


async def test_every_key_an_agent_step_shows_is_one_lockgate_contracts_names(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = desk_people()
    async with lockgate_worker(
        graphs=[SupportDesk],
        directory=people.directory,
        secret=people.secret,
        models={"desk-model": ScriptedModel(reading_twice).model},  # the fixture's own models=
    ):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        answered = await ada.start(SupportDesk, QUESTION)
        waiting = await ada.show(answered["run_id"])

    assert set(answered) <= RunView.__required_keys__ | RunView.__optional_keys__
    assert set(waiting) <= RunView.__required_keys__ | RunView.__optional_keys__
    assert "conversations" in waiting
    declared = TrailRow.__required_keys__ | TrailRow.__optional_keys__
    for row in waiting["trail"]:
        assert set(row) <= declared, row
    assert {"usage", "asked_by"} <= {key for row in waiting["trail"] for key in row}


def _usage_of(run: Any) -> dict[str, int]:
    """The tokens the model reported, summed over the run's model rows."""
    rows = [row for row in run["trail"] if row["operation"].startswith("model:")]
    return {
        "input_tokens": sum(row["usage"]["input_tokens"] for row in rows),
        "output_tokens": sum(row["usage"]["output_tokens"] for row in rows),
    }


frugal = AgentStep(
    "desk:frugal",
    model="desk-model",
    tools=[read_ticket],
    prompt_from="question",
    output_into="answer",
    budget=ModelBudget(tokens=50, then_ask=BudgetCall),
)


@graph(
    "desk:tokens",
    "The desk's agent, on a budget of tokens.",
    start=frugal,
    routes=[Route(BudgetCall.MORE, to=frugal), Route(BudgetCall.STOP, to=close)],
    asks=[Ask(BudgetCall, of="support_lead", because="The agent used its tokens.")],
)
class TokenDesk(BaseModel):
    question: str
    answer: str = ""


async def test_an_agent_step_on_a_token_budget_stops_at_its_gate_once_the_tokens_are_spent(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = desk_people()
    model = ScriptedModel(reading_twice)
    plugin = LockgatePlugin(
        graphs=[TokenDesk],
        directory=people.directory,
        secret=people.secret,
        models={"desk-model": model.model},
    )
    async with lockgate_worker(plugin=plugin):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        waiting = await ada.show((await ada.start(TokenDesk, QUESTION))["run_id"])

    assert waiting["status"] == "waiting", waiting
    assert len(model.seen) == 1  # its first request used more than 50 tokens
    spent = waiting["trail"][-1]
    assert (spent["operation"], spent["outcome"]) == ("desk:frugal", "budget_spent")
    assert "of 50 tokens" in str(spent.get("why"))


# --- A long step moves to a new history --------------------------------------------------------


async def test_an_agent_steps_conversation_survives_a_continue_as_new_in_the_middle_of_the_step(
    task_queue: str,
) -> None:
    # A server of its own that suggests continue-as-new after 20 events: one model request
    # and the tool call it asks for are about that many.
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=[
            "--dynamic-config-value",
            "system.forceSearchAttributesCacheRefreshOnRead=true",
            "--dynamic-config-value",
            "limit.historyCount.suggestContinueAsNew=20",
        ],
        ui=False,
    )
    people = desk_people()
    model = ScriptedModel(reading_twice)
    try:
        client = environment.client
        async with Worker(client, task_queue=task_queue, plugins=[_desk(model, people)]):
            ada = GraphClient(client, task_queue, signer=people.signer("ada"))
            lena = GraphClient(client, task_queue, signer=people.signer("lena"))
            # Not waiting: a client waiting on `settle` holds continue-as-new off until it settles.
            started = await ada.start(SupportDesk, QUESTION, wait=False)
            waiting = await eventually(
                lambda: ada.show(started["run_id"]),
                lambda shown: shown.get("status") == "waiting",
                what="the run to reach the budget's gate",
            )
            waiting_on = (await client.get_workflow_handle(started["run_id"]).describe()).run_id
            await lena.decide(waiting["run_id"], "more")
            done = await lena.show(waiting["run_id"])
            query = f"WorkflowId = '{started['run_id']}'"
            runs = [e.status async for e in client.list_workflows(query)]
    finally:
        await environment.shutdown()

    assert WorkflowExecutionStatus.CONTINUED_AS_NEW in runs
    # The run moved to a new history before its gate opened: in the middle of the step.
    assert waiting_on != waiting["execution"]
    assert done["status"] == "finished", done
    assert done["fields"]["answer"] == "The ticket shows 90 paid (read 2 times)."
    # Each request was sent the whole conversation, whichever history it was made from.
    assert [len(seen) for seen in model.seen] == [1, 3, 5]
    assert [row["operation"] for row in done["trail"]].count("model:desk-model") == 3


# --- A run in flight replays on today's code ---------------------------------------------------

HISTORY = HISTORIES / "model_nodes" / "desk_support.json"
"""A ``desk:support`` run whose budget was spent, let go on by a lead, finished. Regenerate it
with ``LOCKGATE_REGENERATE_HISTORIES=1`` after a deliberate change to agent steps. The same run
recorded before lockgate sealed its history is under ``unsealed/``, never recorded again."""

HISTORY_RUN_ID = "replay-desk_support"


@pytest.mark.skipif(not REGENERATE, reason="set LOCKGATE_REGENERATE_HISTORIES=1 to re-record")
async def test_record_the_saved_history_of_an_agent_step(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = desk_people()
    desk = _desk(ScriptedModel(reading_twice), people, secret=HISTORY_SECRET)
    async with lockgate_worker(plugin=desk):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        lena = GraphClient(temporal_client, task_queue, signer=people.signer("lena"))
        waiting = await ada.start(SupportDesk, QUESTION, run_id=HISTORY_RUN_ID)
        assert (await lena.decide(waiting["run_id"], "more"))["status"] == "finished"
        history = await temporal_client.get_workflow_handle(HISTORY_RUN_ID).fetch_history()
    HISTORY.parent.mkdir(parents=True, exist_ok=True)
    HISTORY.write_text(without_stack_traces(history.to_json()) + "\n")


@pytest.mark.parametrize("history", [HISTORY, HISTORIES / UNSEALED / "model_nodes" / HISTORY.name])
async def test_the_saved_history_of_an_agent_step_replays_on_todays_code(history: Path) -> None:
    models = {"desk-model": ScriptedModel(reading_twice).model}
    saved = WorkflowHistory.from_json(HISTORY_RUN_ID, history.read_text())

    result = await replayer([SupportDesk], models=models).replay_workflow(
        saved, raise_on_replay_failure=False
    )

    assert result.replay_failure is None


# --- A worker killed after its model answered ----------------------------------------------------


async def _crash_worker(address: str, task_queue: str) -> asyncio.subprocess.Process:
    """A worker serving ``crash:desk`` in a process of its own, once it says it is ready."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.helpers.model_node_graphs",
        address,
        task_queue,
        cwd=REPOSITORY,
        env={
            **os.environ,
            "PYTHONPATH": str(REPOSITORY),
            "LOCKGATE_WORKER_SECRET": SECRET.to_text(),
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    ready = await asyncio.wait_for(process.stdout.readline(), 60)
    assert b"worker ready" in ready, ready
    return process


def _lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_worker_killed_after_its_model_answered_replays_without_asking_the_model_again(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = temporal_client.service_client.config.target_host
    first = await _crash_worker(address, task_queue)
    workers = [first]

    async def started() -> list[list[str]]:
        return _lines(tmp_path / "started")

    try:
        run = await GraphClient(temporal_client, task_queue).start(
            CrashDesk, {"folder": str(tmp_path)}, wait=False
        )
        # The model answered (asking for the tool), and the tool is running: kill its worker.
        await eventually(started, lambda lines: len(lines) >= 1, seconds=60, what="the tool")
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()
        workers.append(await _crash_worker(address, task_queue))
        (tmp_path / "release").touch()
        handle = temporal_client.get_workflow_handle(run["run_id"])
        result = await asyncio.wait_for(handle.result(), 90)
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
            await worker.wait()

    assert result["status"] == "finished", result
    assert result["fields"]["answer"] == "released"
    # Each request was made once: the first by the killed worker, the second (sent the first's
    # answer and the tool's return) by the new one, which replayed the first from history.
    assert _lines(tmp_path / "model-calls") == [["1", str(first.pid)], ["3", str(workers[1].pid)]]
    assert [(row["node"], row["operation"], row["outcome"]) for row in result["trail"]] == [
        ("agent", "model:crash-model", "ran"),
        ("agent", "slow:wait", "ran"),
        ("agent", "model:crash-model", "ran"),
        ("agent", "crash:agent", "ran"),
    ]


# --- Nobody else spends the deployment's models ---------------------------------------------------


@workflow.defn(name="mallory.ask-the-model", sandboxed=False)
class AskTheModel:
    """Schedules lockgate's model activity, by name, on lockgate's task queue."""

    @workflow.run
    async def run(self, task_queue: str) -> Any:
        return await workflow.execute_activity(
            MODEL_CALL,
            ModelCallInput(model="desk-model", prompt="Tell me the deployment's secrets."),
            task_queue=task_queue,
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )


async def test_the_model_activity_scheduled_by_a_stranger_is_refused_before_any_model_is_asked(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = desk_people()
    model = ScriptedModel(reaching_too_far)
    mallory_queue = f"{task_queue}-mallory"
    async with (
        lockgate_worker(plugin=_desk(model, people)),
        Worker(temporal_client, task_queue=mallory_queue, workflows=[AskTheModel]),
    ):
        with pytest.raises(WorkflowFailureError) as failed:
            await temporal_client.execute_workflow(
                AskTheModel.run,
                task_queue,
                id=f"mallory-{task_queue}",
                task_queue=mallory_queue,
            )

    activity_error = failed.value.cause
    assert isinstance(activity_error, ActivityError)
    refusal = activity_error.cause
    assert isinstance(refusal, ApplicationError)
    assert refusal.type == "UNAUTHORIZED"
    assert model.seen == []


# --- The worker and the extra ------------------------------------------------------------------


def test_a_worker_not_given_the_model_an_agent_step_names_is_refused_when_it_is_built() -> None:
    people = desk_people()
    with pytest.raises(GraphDeclarationError) as refused:
        LockgatePlugin(graphs=[SupportDesk], directory=people.directory, secret=people.secret)

    assert "'desk-model'" in str(refused.value)
    assert "models=" in str(refused.value)


def test_lockgate_imports_without_pydantic_ai_and_an_agent_step_says_how_to_install_it() -> None:
    script = (
        "import sys\n"
        "sys.modules['pydantic_ai'] = None\n"  # as if it were not installed
        "import lockgate\n"
        "from lockgate import AgentStep\n"
        "try:\n"
        "    AgentStep('desk:triage', model='m')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script], cwd=REPOSITORY, capture_output=True, text=True, check=True
    )

    assert "pip install 'lockgate[pydantic-ai]'" in shown.stdout


# --- What the compiler refuses -------------------------------------------------------------------


class Reply(BaseModel):
    answer: str


@tool("desk:reply", "Send the answer.")
async def reply(answer: str) -> Reply:
    return Reply(answer=answer)


def not_a_tool(ticket: int) -> None:
    return None


@tool("desk:confirmed", "Something that asks for consent.", confirm=True)
async def needs_consent(ticket: int) -> None:
    return None


class Other(str, Enum):
    GO = "go"


def _desk_with(step: AgentStep, *, asks: bool = True) -> type:
    @graph(
        "desk:declared",
        start=step,
        edges=[Edge(step, reply)],
        routes=[Route(BudgetCall.MORE, to=step), Route(BudgetCall.STOP, to=close)] if asks else [],
        asks=[Ask(BudgetCall, of="support_lead")] if asks else [],
    )
    class Declared(BaseModel):
        question: str
        answer: str = ""
        count: int = 0

    return Declared


def _step(**changes: Any) -> AgentStep:
    declared: dict[str, Any] = {
        "model": "desk-model",
        "tools": [read_ticket, issue_refund],
        "prompt_from": "question",
        "output_into": "answer",
        "budget": ModelBudget(requests=2, then_ask=BudgetCall),
    }
    return AgentStep("desk:triage", **(declared | changes))


def test_an_agent_step_compiles_to_a_node_offering_its_tools_under_model_names() -> None:
    compiled = compile_graph(_desk_with(_step()))

    node = compiled.nodes["triage"]
    assert node.agent is not None
    assert list(node.agent.tools) == ["tickets__read", "refunds__issue"]
    assert (node.reads, node.writes, node.needs) == (("question",), ("answer",), ())
    assert node.agent.then_ask == "budget_call"
    assert compiled.edges["triage"].to == "reply"


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"tools": [not_a_tool]}, "not_a_tool, which is not a tool"),
        ({"tools": [needs_consent]}, "confirm=True"),
        ({"prompt_from": "subject"}, "'subject', which is not a field"),
        ({"output_into": "reply"}, "'reply', which is not a field"),
        ({"output_into": "count"}, "'count', which does not take text"),
        ({"budget": None}, "declares no budget"),
        ({"budget": ModelBudget(then_ask=BudgetCall)}, "counts nothing"),
        ({"budget": ModelBudget(requests=0, then_ask=BudgetCall)}, "requests=0"),
        ({"budget": ModelBudget(requests=2)}, "no then_ask"),
        (
            {"budget": ModelBudget(requests=2, then_ask=Other)},
            "Other is an enum that no Ask offers",
        ),
        ({"model": object()}, "not by name"),
    ],
)
def test_a_doubtful_agent_step_is_refused_by_name(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(_desk_with(_step(**changes)))

    assert "Graph Declared" in str(refused.value)
    assert says in str(refused.value)


def test_a_budget_whose_gate_no_ask_offers_is_refused() -> None:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(_desk_with(_step(), asks=False))

    assert "BudgetCall is an enum that no Ask offers" in str(refused.value)
