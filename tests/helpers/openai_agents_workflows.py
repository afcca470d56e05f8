"""A support agent on the OpenAI Agents SDK, run by Temporal's plugin, governed by lockgate: it
reads a ticket, refunds it once a support lead approves, and closes it once a second lead does
(the first ran the refund, so may not approve what follows it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from agents import Agent, ToolCallOutputItem
from temporalio import workflow

from lockgate import Ask, Param, ToolResult, tool
from lockgate.adapters.openai_agents import (
    Approval,
    GateKey,
    governed_tool,
    governed_tools,
    run_agent,
)
from tests.helpers.own_workflows import issue_refund, read_ticket


@tool("tickets:close", "Close a support ticket", scopes=["tickets:close"], mutating=True)
def close_ticket(ticket: Annotated[int, Param("The ticket number")]) -> ToolResult:
    return ToolResult.ok({"closed": ticket})


AGENT_TOOLS: list[Callable[..., Any]] = [read_ticket, issue_refund, close_ticket]

LEAD = Ask(Approval, of="support-lead", because="The agent's refunds and closures need a lead.")


@dataclass
class AgentRequest:
    prompt: str
    gated: bool = True


def support_agent() -> Agent[Any]:
    return Agent(
        name="support",
        instructions="Read the ticket, refund what it asks, then close it.",
        tools=[
            *governed_tools(read_ticket),
            governed_tool(issue_refund, needs_approval=True),
            governed_tool(close_ticket, needs_approval=True),
        ],
    )


@workflow.defn(name="support:agent")
class SupportAgentWorkflow:
    @workflow.run
    async def run(self, request: AgentRequest) -> dict[str, Any]:
        gates: dict[GateKey, Ask] | None = (
            {issue_refund: LEAD, close_ticket: LEAD} if request.gated else None
        )
        result = await run_agent(support_agent(), request.prompt, gates=gates)
        return {
            "final": result.final_output,
            "outputs": [
                str(item.output)
                for item in result.new_items
                if isinstance(item, ToolCallOutputItem)
            ],
        }
