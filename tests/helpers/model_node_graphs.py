"""Graphs with agent steps, their scripted models, and a worker subprocess a test can kill.

Models are Pydantic AI's deterministic ``FunctionModel``: each answers from a script and keeps
every conversation it was sent, so a test can read what the model was told and count how often
it was asked. No network.

- ``desk:support``: an agent step (``desk:triage``, model ``desk-model``) that may read tickets
  (``tickets:read``) and issue refunds (``refunds:issue``), with a budget of two model requests;
  when it is spent a support lead decides: ``more`` (the step goes on, with a fresh budget) or
  ``stop`` (the ticket is closed unanswered).
- ``crash:desk``: an agent step (model ``crash-model``) whose one tool waits for a release file,
  served by the worker this module runs as a script (``python -m
  tests.helpers.model_node_graphs ADDRESS TASK_QUEUE``): each model request is a line
  ``<messages seen> <pid>`` in the run's folder's ``model-calls``, from whichever process made
  it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio.client import Client

from lockgate import (
    AgentStep,
    Ask,
    Because,
    LockgatePlugin,
    ModelBudget,
    Route,
    Target,
    ToolContext,
    ToolResult,
    WorkerSecret,
    graph,
    tool,
)
from lockgate.testing import Identities
from lockgate.worker import run_worker

# --- desk:support ---------------------------------------------------------------------------


class BudgetCall(str, Enum):
    MORE = "more"
    STOP = "stop"


class Closed(BaseModel):
    answer: str


@tool("tickets:read", "Read a support ticket.", scopes=["tickets:read"])
async def read_ticket(ticket: int) -> ToolResult:
    return ToolResult.ok({"ticket": ticket, "paid": 90})


@tool("refunds:issue", "Refund a customer.", scopes=["refunds:issue"], mutating=True)
async def issue_refund(ticket: int, amount: int) -> ToolResult:
    return ToolResult.ok({"ticket": ticket, "refunded": amount})


@tool("desk:close", "Close the ticket unanswered.")
async def close(question: str) -> Closed:
    return Closed(answer="closed without an answer")


triage = AgentStep(
    "desk:triage",
    model="desk-model",
    instructions="Answer the customer's question; refund only what the ticket shows was paid.",
    tools=[read_ticket, issue_refund],
    prompt_from="question",
    output_into="answer",
    budget=ModelBudget(requests=2, then_ask=BudgetCall),
)


@graph(
    "desk:support",
    "An agent answers a support question, with the desk's tools.",
    start=triage,
    routes=[Route(BudgetCall.MORE, to=triage), Route(BudgetCall.STOP, to=close)],
    asks=[Ask(BudgetCall, of="support_lead", because="The agent used its model budget.")],
)
class SupportDesk(BaseModel):
    question: Annotated[str, Target(), Because("What the customer asks")]
    answer: str = ""


def desk_people() -> Identities:
    """ada asks (and may read tickets, not refund); lena leads the desk."""
    return Identities(
        {
            "ada": {"scopes": ["tickets:read"]},
            "lena": {"roles": ["support_lead"], "scopes": ["tickets:read"]},
        }
    )


class ScriptedModel:
    """A ``FunctionModel`` answering from ``script``, keeping every conversation it was sent.

    ``script`` gets the messages of a request and returns the response's parts.
    """

    def __init__(self, script: Callable[[list[ModelMessage]], list[Any]]) -> None:
        self.seen: list[list[ModelMessage]] = []
        self._script = script
        self.model = FunctionModel(self._answer, model_name="scripted")

    def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        return ModelResponse(parts=self._script(messages))


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """Every tool return in a conversation, in order."""
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def reaching_too_far(messages: list[ModelMessage]) -> list[Any]:
    """Asks for a refund (which ada may not issue), a shell (which the step does not offer)
    and the ticket; then says what it was told of each."""
    returned = tool_returns(messages)
    if not returned:
        return [
            ToolCallPart("refunds__issue", {"ticket": 7, "amount": 90}, tool_call_id="refund"),
            ToolCallPart("shell__run", {"command": "cat /etc/passwd"}, tool_call_id="shell"),
            ToolCallPart("tickets__read", {"ticket": 7}, tool_call_id="read"),
        ]
    told = ", ".join(f"{part.tool_name}: {part.outcome}" for part in returned)
    return [TextPart(f"I could only read the ticket ({told}).")]


def reading_twice(messages: list[ModelMessage]) -> list[Any]:
    """Reads the ticket on each of its first two requests, then answers: a third request."""
    reads = len(tool_returns(messages))
    if reads < 2:
        return [ToolCallPart("tickets__read", {"ticket": 7}, tool_call_id=f"read-{reads + 1}")]
    return [TextPart(f"The ticket shows 90 paid (read {reads} times).")]


# --- crash:desk -----------------------------------------------------------------------------


class Overrun(str, Enum):
    STOP = "stop"


class Waited(BaseModel):
    answer: str


@tool("slow:wait", "Wait for the release file.", heartbeat=1.0, timeout=120)
async def wait_for_release(folder: str, ctx: ToolContext) -> ToolResult:
    with (Path(folder) / "started").open("a") as started:
        started.write(f"{os.getpid()}\n")
    while not (Path(folder) / "release").exists():
        await asyncio.sleep(0.05)
    return ToolResult.ok({"released": True})


@tool("crash:give_up", "Say the agent ran out of budget.")
async def give_up(folder: str) -> Waited:
    return Waited(answer="gave up")


crash_agent = AgentStep(
    "crash:agent",
    model="crash-model",
    tools=[wait_for_release],
    prompt_from="folder",
    output_into="answer",
    budget=ModelBudget(requests=3, then_ask=Overrun),
)


@graph(
    "crash:desk",
    "An agent whose one tool waits for a release file.",
    start=crash_agent,
    routes=[Route(Overrun.STOP, to=give_up)],
    asks=[Ask(Overrun, of="operator", because="The agent ran out of budget.")],
    # Started unsigned by the crash test; its gate only catches a runaway model.
    allow_unsigned_start=True,
)
class CrashDesk(BaseModel):
    folder: Annotated[str, Target()]
    answer: str = ""


def waiting_once(messages: list[ModelMessage]) -> list[Any]:
    """Writes ``<messages seen> <pid>`` to the folder the prompt names, then asks for the wait
    once and answers once it returned."""
    first = messages[0]
    assert isinstance(first, ModelRequest) and isinstance(first.parts[0], UserPromptPart)
    folder = str(first.parts[0].content)
    with (Path(folder) / "model-calls").open("a") as calls:
        calls.write(f"{len(messages)} {os.getpid()}\n")
    if not tool_returns(messages):
        return [ToolCallPart("slow__wait", {"folder": folder}, tool_call_id="wait")]
    return [TextPart("released")]


async def _serve(address: str, task_queue: str) -> None:
    client = await Client.connect(address)
    secret = WorkerSecret.from_environment()
    assert secret is not None, "the crash test hands its workers the secret"
    plugin = LockgatePlugin(
        graphs=[CrashDesk],
        secret=secret,
        models={"crash-model": ScriptedModel(waiting_once).model},
    )
    await run_worker(client, plugin, task_queue, on_ready=lambda: print("worker ready", flush=True))


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], sys.argv[2]))
