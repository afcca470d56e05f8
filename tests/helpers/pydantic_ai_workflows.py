"""A support agent on Pydantic AI, run by Pydantic AI's Temporal integration in a workflow of the
user's own, its approvals answered by lockgate's gates and its lockgate tools governed.

The model is Pydantic AI's ``FunctionModel`` following a script chosen by the prompt: each of its
responses asks for the script's next tool calls, and the last one is a text that lists every tool
result it was shown, so a test reads what the model saw. It runs in Pydantic AI's model activity;
the workflow is sandboxed, as a user's is.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

from temporalio import workflow

from lockgate import Ask
from tests.helpers.own_workflows import issue_refund, read_ticket

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import (
        Agent,
        ModelMessage,
        ModelResponse,
        PydanticAIDeprecationWarning,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.durable_exec.temporal import TemporalAgent, TemporalDurability
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from lockgate.adapters.pydantic_ai import Approval, LockgateToolset, run_agent


LOCKGATE_TOOLS: list[Callable[..., Any]] = [read_ticket, issue_refund]

Call = tuple[str, "dict[str, Any] | str"]

SCRIPTS: dict[str, list[list[Call]]] = {
    "refund and close": [
        [("tickets__read", {"ticket": 42})],
        [("refunds__issue", {"ticket": 42, "amount": 120})],
        [("close_ticket", {"ticket": 42})],
    ],
    "refund and close at once": [
        [("refunds__issue", {"ticket": 42, "amount": 120}), ("close_ticket", {"ticket": 42})],
    ],
    "read": [[("tickets__read", {"ticket": 42})]],
    "read badly": [[("tickets__read", {"ticket": "forty-two"})]],
    "refund": [[("refunds__issue", {"ticket": 42, "amount": 120})]],
    # A model steered by a prompt: arguments no approver should be shown, or could sign.
    "refund with a long note": [
        [("refunds__issue", {"ticket": 42, "amount": 120, "note": "please " * 4000})]
    ],
    "refund NaN": [[("refunds__issue", '{"ticket": 42, "amount": NaN}')]],
    "archive": [[("archive_ticket", {"ticket": 42})]],
}
"""What the model asks for, by prompt: the tool calls of each of its responses in turn."""


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The prompt's next response of tool calls; after the last, the tool results it saw."""
    prompt = next(
        str(part.content)
        for message in messages
        for part in message.parts
        if isinstance(part, UserPromptPart)
    )
    answered = sum(isinstance(message, ModelResponse) for message in messages)
    script = SCRIPTS[prompt]
    if answered < len(script):
        return ModelResponse(
            parts=[
                ToolCallPart(name, arguments, tool_call_id=f"call-{answered}-{index}")
                for index, (name, arguments) in enumerate(script[answered])
            ]
        )
    seen = [
        {
            "tool": part.tool_name,
            "outcome": part.outcome,
            "content": part.model_response_str(wrap_if_error=False),
        }
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    return ModelResponse(parts=[TextPart(json.dumps(seen))])


def close_ticket(ticket: int) -> str:
    """Close a support ticket."""
    return f"ticket {ticket} closed"


def archive_ticket(ticket: int) -> str:
    """Archive a support ticket."""
    return f"ticket {ticket} archived"


def support_agent(name: str, *, durable: bool = False) -> Agent[None, str]:
    """The agent: lockgate's tools (a refund asks approval first) and two tools of Pydantic AI's
    own that ask approval too; with ``durable``, Temporal's capability makes it durable."""
    agent = Agent(
        FunctionModel(scripted_model, model_name="scripted"),
        name=name,
        output_type=str,
        toolsets=[LockgateToolset(*LOCKGATE_TOOLS, requires_approval=[issue_refund])],
        capabilities=[TemporalDurability()] if durable else [],
    )
    agent.tool_plain(requires_approval=True)(close_ticket)
    agent.tool_plain(requires_approval=True)(archive_ticket)
    return agent


def wrapped_agent() -> TemporalAgent[None, str]:
    """The agent wrapped the way Pydantic AI's Temporal guide long showed."""
    with warnings.catch_warnings():
        # TemporalAgent is deprecated in favour of the TemporalDurability capability; both run
        # tools the same way, and both are tested.
        warnings.simplefilter("ignore", PydanticAIDeprecationWarning)
        return TemporalAgent(support_agent("support"))


SUPPORT_AGENT = wrapped_agent()
DURABLE_AGENT = support_agent("support-durable", durable=True)

REFUND_GATE = Ask(Approval, of="support-lead", because="A refund needs a support lead.")
CLOSE_GATE = Ask(Approval, of="support-lead", because="Someone else checks the refund.")


@workflow.defn(name="support:pydantic-agent")
class SupportAgentWorkflow:
    """The agent, wrapped in ``TemporalAgent``, run with lockgate answering its approvals."""

    __pydantic_ai_agents__: ClassVar[list[Any]] = [SUPPORT_AGENT]

    @workflow.run
    async def run(self, prompt: str) -> dict[str, Any]:
        result = await run_agent(
            SUPPORT_AGENT,
            prompt,
            gates={"refunds:issue": REFUND_GATE, "close_ticket": CLOSE_GATE},
        )
        # A dict: GraphClient.show reads a finished run's result as one.
        return {"seen": json.loads(result.output)}


@workflow.defn(name="support:pydantic-durable-agent")
class DurableAgentWorkflow:
    """The same, with the agent made durable by ``TemporalDurability``."""

    __pydantic_ai_agents__: ClassVar[list[Any]] = [DURABLE_AGENT]

    @workflow.run
    async def run(self, prompt: str) -> dict[str, Any]:
        result = await run_agent(
            DURABLE_AGENT,
            prompt,
            # Keyed by the @tool function here, by the lockgate name above: the same gate.
            gates={issue_refund: REFUND_GATE, "close_ticket": CLOSE_GATE},
        )
        return {"seen": json.loads(result.output)}
