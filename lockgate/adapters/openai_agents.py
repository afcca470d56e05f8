"""The OpenAI Agents SDK on Temporal's plugin, with lockgate's verified gates and governed tools.

A tool the SDK's way marked ``needs_approval`` stops the agent's run with an interruption; on
Temporal, the workflow would then approve it on an update anyone may send. Run the agent with
:func:`run_agent` instead: each interruption opens a lockgate gate
(:func:`lockgate.gate`: a verified approver of the role, neither the run's requester
nor a maker, who may run what approving leads to) whose subject is the tool and its arguments,
so the approver signs what they were shown. The decision approves or rejects the call in the
SDK's run state, and the run resumes, until it finishes. A tool that needs approval and has no
gate declared fails the run with a sentence naming what to declare; it is never approved.

:func:`governed_tool` and :func:`governed_tools` offer lockgate tools as the SDK's function tools,
named as model providers accept them (``tickets:read`` is ``tickets__read``), described by the
tool's own definition. The plugin runs function tools in the workflow; each call is
:func:`lockgate.call_tool`, as the run's driver (the requester until a gate is decided,
then its approver): validation, scopes, confirmation, rate limits and audit are lockgate's, and a
refusal comes back as the tool's output (``CODE: sentence``), which the model reads and the run
goes on from. A governed tool that needs approval runs, once approved, as its approver.

Needs ``lockgate[openai-agents]`` (``temporalio-openai-agents``).

Example::

    @workflow.defn
    class SupportAgent:
        @workflow.run
        async def run(self, request: str) -> str:
            agent = Agent(
                name="support",
                instructions="Read the ticket, then refund what it asks.",
                tools=[
                    *governed_tools(read_ticket),
                    governed_tool(issue_refund, needs_approval=True),
                ],
            )
            lead = Ask(Approval, of="support-lead", because="A refund needs a support lead.")
            result = await run_agent(agent, request, gates={issue_refund: lead})
            return str(result.final_output)

The worker needs both plugins. ``OpenAIAgentsPlugin`` goes on the client: the payload converter
the agent's model activities need is a client's setting, which a plugin given only to a
``Worker`` cannot change (lockgate's workflows and activities work under that converter too)::

    client = await Client.connect("localhost:7233", plugins=[OpenAIAgentsPlugin()])
    worker = Worker(client, task_queue="support", workflows=[SupportAgent],
                    plugins=[LockgatePlugin(tools=[read_ticket, issue_refund],
                                            directory="directory.toml")])
    await GraphClient(client, "support", signer=agent_key).start_workflow(
        SupportAgent.run, "Refund ticket 42", id="refund-42")
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError
from typing_extensions import Unpack

from lockgate.adapters._approvals import APPROVE, MAX_SUBJECT_BYTES, Approval
from lockgate.adapters._client_plugins import require_client_plugin
from lockgate.gates._limits import measure
from lockgate.graphs._declare import Ask, GraphDeclarationError
from lockgate.tools._tool import ToolDefinition, definition_of
from lockgate.tools._tool_names import model_tool_name
from lockgate.tools._tool_result import ErrorCode, ToolResult
from lockgate.workflows._own_workflows import Decision, call_tool, gate

_EXTRA_MODULES = ("agents", "openai", "temporalio")
"""The top-level packages the extra brings (``temporalio.openai_agents`` is a namespace
package inside temporalio)."""

try:
    from agents import (
        Agent,
        FunctionTool,
        RunContextWrapper,
        Runner,
        RunResult,
        ToolApprovalItem,
        TResponseInputItem,
    )
    from agents.run_config import RunOptions
    from agents.tool_context import ToolContext
    from temporalio.openai_agents import OpenAIPayloadConverter
except ModuleNotFoundError as missing:
    if (missing.name or "").split(".")[0] not in _EXTRA_MODULES:
        raise
    raise ImportError(
        "lockgate.adapters.openai_agents needs the OpenAI Agents SDK and Temporal's plugin for "
        "it; install them with: pip install 'lockgate[openai-agents]'"
    ) from missing

__all__ = [
    "MAX_SUBJECT_BYTES",
    "Approval",
    "ApprovalSetting",
    "GateKey",
    "governed_tool",
    "governed_tools",
    "run_agent",
]

ApprovalSetting = bool | Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]
"""The SDK's ``needs_approval``: always, never, or a function of the call that says."""

GateKey = str | Callable[..., Any] | ToolDefinition | FunctionTool
"""What :func:`run_agent`'s ``gates`` are keyed by: the tool's name as the agent offers it
(``refunds__issue``), the lockgate tool's own name (``refunds:issue``), its ``@tool`` function
or definition, or the SDK tool itself."""


async def run_agent(
    agent: Agent[Any],
    input: str | list[TResponseInputItem],
    *,
    gates: Mapping[GateKey, Ask] | None = None,
    **options: Unpack[RunOptions[Any]],
) -> RunResult:
    """Runs an agent in this workflow to the end, answering each tool approval with a gate.

    Each approval the run stops for opens the gate declared for its tool, with the subject
    ``{agent, tool, arguments}``. Approving runs the call (a governed tool as the approver, who
    must hold what the lockgate tool needs); any other option rejects it, and the model is told
    who declined. Interruptions are decided one at a time, the run resuming after each: so the
    approver of one call, who then ran it, is a maker at the next gate and may not answer it.

    Args:
        agent: The agent, as the SDK declares it.
        input: Its input.
        gates: The gate for each tool that may need approval (see :data:`GateKey`).
        options: Anything else ``Runner.run`` takes (``context``, ``max_turns``,
            ``run_config``, ...), for the first run and every resumption.

    Returns:
        The SDK's result of the finished run.

    Raises:
        ApplicationError: A tool may need approval but no gate is declared for it, a gate is
            declared wrong (options without an ``approve`` case, a governed tool the worker
            does not serve), or the worker's client lacks ``OpenAIAgentsPlugin``: the run
            fails with the sentence (non-retryable), instead of retrying a task for ever.
    """
    require_client_plugin(OpenAIPayloadConverter, "OpenAIAgentsPlugin()")
    declared = _declared(gates or {})
    undeclared = sorted(
        name for name in _tools_needing_approval(agent, set()) if name not in declared
    )
    if undeclared:
        raise _no_gate(undeclared[0], agent.name, declared)
    result = await Runner.run(agent, input, **options)
    while result.interruptions:
        asked = result.interruptions[0]
        state = result.to_state()
        rejection = await _decide(asked, declared)
        if rejection is None:
            state.approve(asked)
        else:
            state.reject(asked, rejection_message=rejection)
        result = await Runner.run(agent, state, **options)
    return result


def governed_tool(
    tool: Callable[..., Any] | ToolDefinition,
    *,
    needs_approval: ApprovalSetting = False,
    confirmed: bool = False,
) -> FunctionTool:
    """A lockgate tool as the SDK's function tool, for an agent run in a workflow.

    Example::

        Agent(name="support", tools=[governed_tool(issue_refund, needs_approval=True)])

    Args:
        tool: The ``@tool`` function, or its definition; its name (made valid for model
            providers), description and input schema are the SDK tool's.
        needs_approval: The SDK's own setting: whether a call stops the run for approval,
            which :func:`run_agent` answers with the gate declared for this tool.
        confirmed: This workflow's code stands for the confirmation a ``confirm=True`` tool
            asks for, as in :func:`lockgate.call_tool` (an approval is not one).

    Returns:
        The function tool. Its calls run through lockgate's pipeline as the run's driver; a
        refusal or failure is its output, ``CODE: sentence``, and the run goes on.
    """
    definition = tool if isinstance(tool, ToolDefinition) else definition_of(tool)
    return FunctionTool(
        name=model_tool_name(definition.name),
        description=definition.description,
        # lockgate validates every call against the schema as declared; the SDK's strict mode
        # would rewrite it (every property required, no open objects).
        params_json_schema=json.loads(json.dumps(definition.input_schema)),
        on_invoke_tool=_GovernedCall(definition.name, confirmed),
        strict_json_schema=False,
        needs_approval=needs_approval,
    )


def governed_tools(*tools: Callable[..., Any] | ToolDefinition) -> list[FunctionTool]:
    """lockgate tools as the SDK's function tools that need no approval (see
    :func:`governed_tool`).

    Example::

        Agent(name="support", tools=governed_tools(read_ticket, list_orders))
    """
    return [governed_tool(tool) for tool in tools]


@dataclasses.dataclass(frozen=True)
class _GovernedCall:
    """A governed tool's ``on_invoke_tool``: the call, as lockgate's, from the workflow."""

    tool: str
    confirmed: bool

    async def __call__(self, context: ToolContext[Any], arguments: str) -> str:
        if not workflow.in_workflow():
            raise RuntimeError(
                f"lockgate tool '{self.tool}' runs only in a Temporal workflow, where the agent "
                "runs under OpenAIAgentsPlugin on a worker with LockgatePlugin."
            )
        parsed = _json_data(arguments)
        if not isinstance(parsed, dict):
            return (
                f"{ErrorCode.VALIDATION_ERROR.value}: The arguments of '{self.tool}' are not a "
                "JSON object; nothing ran."
            )
        return _model_output(await call_tool(self.tool, parsed, confirmed=self.confirmed))


def _model_output(result: ToolResult) -> str:
    if not result.success:
        error = result.error
        return f"{error.code}: {error.message}" if error else "INTERNAL_ERROR: The tool failed."
    if result.data is not None:
        return json.dumps(result.data, ensure_ascii=False)
    return result.message or "Done."


def _declared(gates: Mapping[GateKey, Ask]) -> dict[str, tuple[Ask, enum.Enum]]:
    declared: dict[str, tuple[Ask, enum.Enum]] = {}
    for key, ask in gates.items():
        name = _gate_name(key)
        options = ask.options if isinstance(ask.options, type) else None
        approve = (
            next((case for case in options if case.value == APPROVE), None)
            if options is not None and issubclass(options, enum.Enum)
            else None
        )
        if approve is None:
            raise _declaration_error(
                f"The gate for tool '{name}' offers {ask.options!r}, not an enum with a case "
                f"'{APPROVE}': that case approves the call and every other rejects it "
                "(lockgate's Approval enum has both)."
            )
        declared[name] = (ask, approve)
    return declared


def _declaration_error(sentence: str) -> ApplicationError:
    """The run's declaration cannot be honoured: the run fails with the sentence, where a
    plain exception would fail its workflow task again on every retry."""
    return ApplicationError(sentence, type=GraphDeclarationError.__name__, non_retryable=True)


def _gate_name(key: GateKey) -> str:
    if isinstance(key, FunctionTool):
        return key.name
    if isinstance(key, ToolDefinition):
        return model_tool_name(key.name)
    if isinstance(key, str):
        return model_tool_name(key)
    return model_tool_name(definition_of(key).name)


def _tools_needing_approval(agent: Agent[Any], seen: set[int]) -> Iterator[str]:
    """The tools of ``agent`` and of the agents it hands off to that may stop for approval."""
    if id(agent) in seen:
        return
    seen.add(id(agent))
    for tool in agent.tools:
        name = getattr(tool, "name", None)
        if isinstance(name, str) and getattr(tool, "needs_approval", False) is not False:
            yield name
    for handoff in agent.handoffs:
        if isinstance(handoff, Agent):
            yield from _tools_needing_approval(handoff, seen)


def _no_gate(tool: str, agent: str, declared: Mapping[str, Any]) -> ApplicationError:
    return ApplicationError(
        f"Tool '{tool}' of agent '{agent}' needs approval, and run_agent declares no gate for it "
        f"(gates for: {', '.join(sorted(declared)) or 'none'}): declare one, as "
        f"run_agent(..., gates={{'{tool}': Ask(Approval, of='<role>')}}).",
        type=ErrorCode.NOT_FOUND.value,
        non_retryable=True,
    )


async def _decide(
    asked: ToolApprovalItem, declared: Mapping[str, tuple[Ask, enum.Enum]]
) -> str | None:
    """Opens the gate for one approval: None when the call is approved, else what the model is
    told instead of its output."""
    name = asked.tool_name or asked.name or ""
    agent = getattr(asked.agent, "name", "")
    if name not in declared:
        raise _no_gate(name, agent, declared)
    ask, approve = declared[name]
    arguments = asked.arguments
    parsed = _json_data(arguments) if arguments is not None else None
    subject = {
        "agent": agent,
        "tool": name,
        "arguments": parsed if parsed is not None else arguments,
    }
    problem = measure(subject, what="The call", max_bytes=MAX_SUBJECT_BYTES)
    if problem is not None:
        return f"{problem.code}: {problem.sentence} No approver was asked; the call did not run."
    governed = _governed_tool(asked)
    try:
        decided: Decision[Any] = await gate(
            ask, subject=subject, leads_to={approve: governed} if governed is not None else None
        )
    except GraphDeclarationError as error:  # before the gate opens: its Ask, or an unserved tool
        raise _declaration_error(str(error)) from None
    if decided.choice is approve:
        return None
    who = "the gate's deadline" if decided.by_deadline else str(decided.by.get("actor"))
    return f"Not approved: {who} chose '{decided.choice.value}'; the call did not run."


def _governed_tool(asked: ToolApprovalItem) -> str | None:
    """The lockgate tool an approval is for, if the agent's tool of that name is governed."""
    for tool in getattr(asked.agent, "tools", ()):
        if isinstance(tool, FunctionTool) and tool.name == asked.tool_name:
            invoker = tool.on_invoke_tool
            return invoker.tool if isinstance(invoker, _GovernedCall) else None
    return None


def _json_data(text: str) -> Any:
    """``text`` as JSON data, or None if it is not JSON (``NaN`` and the like are not)."""

    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError:
        return None
