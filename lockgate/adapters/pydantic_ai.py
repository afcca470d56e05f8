"""Pydantic AI agents on Temporal, with lockgate's verified gates and governed tools.

Pydantic AI runs an agent durably with its own integration (``pydantic_ai.durable_exec.temporal``:
``TemporalAgent``, or an ``Agent`` with the ``TemporalDurability`` capability; ``PydanticAIPlugin``
on the client and worker). A tool declared ``requires_approval=True`` makes the run end with
``DeferredToolRequests``, and whoever builds the ``DeferredToolResults`` approves it: nothing
there checks who that is. :func:`run_agent` runs the agent in a workflow of your own and answers
every approval with a lockgate gate (:func:`lockgate.gate`): a verified approver of
the gate's role, neither the run's requester nor someone who drove a governed tool call since
the last gate, who may run the lockgate tool the approval leads to. It then runs the agent
again with the message history and the answers, until the agent finishes with its real output.

:class:`LockgateToolset` offers lockgate tools to the agent as a Pydantic AI toolset, named as
model providers accept them (``tickets:read`` is ``tickets__read``). Each call is
:func:`lockgate.call_tool` as the run's driver, so validation, scopes, confirmation,
rate limits and audit all apply; a refusal comes back as Pydantic AI's own tool error, which the
model reads (``FORBIDDEN: ...``) and the run goes on. The toolset runs in the workflow, not in an
activity of Pydantic AI's: Pydantic AI moves only the toolsets it knows (function, dynamic, MCP)
into activities and leaves any other toolset where the agent runs, and each lockgate call
schedules its own sealed activity from there.

Needs ``lockgate[pydantic-ai]`` (``pydantic-ai-slim[temporal]``), which needs Python 3.11 or
later. The worker runs both plugins. ``PydanticAIPlugin()`` goes on the ``Client`` the worker is
built from (a plugin given only to a ``Worker`` cannot set the payload converter, and
:func:`run_agent` fails the run saying so); the worker takes it from there, with its sandbox
passthrough and failure types. lockgate's payloads are JSON data and dataclasses, which Pydantic
AI's converter writes as JSON as well, and the two plugins' sandbox settings compose (each passes
its own packages through; lockgate's own workflows run unsandboxed). The agent's activities are
registered by ``AgentPlugin(agent)`` or by naming the agent in the workflow's
``__pydantic_ai_agents__``.

Example::

    @tool("refunds:issue", "Refund a customer", scopes=["refunds:issue"], mutating=True)
    def issue_refund(ticket: int, amount: int) -> ToolResult: ...

    agent = Agent(model, name="support", output_type=str, capabilities=[TemporalDurability()],
                  toolsets=[LockgateToolset(read_ticket, issue_refund,
                                            requires_approval=[issue_refund])])

    @workflow.defn
    class SupportAgent:
        @workflow.run
        async def run(self, prompt: str) -> str:
            result = await run_agent(agent, prompt, gates={
                issue_refund: Ask(Approval, of="support-lead", because="Refunds need a lead.")})
            return result.output

    client = await Client.connect("localhost:7233", plugins=[PydanticAIPlugin()])
    worker = Worker(client, task_queue="support", workflows=[SupportAgent], plugins=[
        AgentPlugin(agent), LockgatePlugin(tools=[read_ticket, issue_refund],
                                           directory="directory.toml")])

``TemporalAgent(agent)`` (deprecated by Pydantic AI for the capability) works the same way.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from temporalio import workflow
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.exceptions import ApplicationError

from lockgate.adapters._approvals import APPROVE, MAX_SUBJECT_BYTES, Approval
from lockgate.adapters._client_plugins import require_client_plugin
from lockgate.gates._limits import measure
from lockgate.graphs._declare import Ask
from lockgate.identity._canonical import canonical_json
from lockgate.tools._tool import ToolDefinition as LockgateTool
from lockgate.tools._tool import definition_of
from lockgate.tools._tool_names import model_tool_name
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._authority_context import current_tools
from lockgate.workflows._own_workflows import call_tool, gate

try:
    # One copy of Pydantic AI for the whole worker (PydanticAIPlugin passes it through the
    # sandbox), even where this module is first imported by a sandboxed workflow module.
    with workflow.unsafe.imports_passed_through():
        from pydantic_ai import (
            AbstractToolset,
            ApprovalRequired,
            DeferredToolRequests,
            DeferredToolResults,
            ModelRetry,
            RunContext,
            ToolApproved,
            ToolCallPart,
            ToolDefinition,
            ToolDenied,
            ToolsetTool,
        )
        from pydantic_ai.agent import AbstractAgent, AgentRunResult
        from pydantic_ai.exceptions import ToolFailed, UserError
        from pydantic_core import SchemaValidator, core_schema
except ImportError as missing:  # pragma: no cover - exercised on Python 3.10, without the extra
    raise ImportError(
        "lockgate.adapters.pydantic_ai needs Pydantic AI with its Temporal integration (Python "
        "3.11 or later): install lockgate with `pip install 'lockgate[pydantic-ai]'`."
    ) from missing

__all__ = ["MAX_SUBJECT_BYTES", "Approval", "LockgateToolset", "run_agent"]

# The key, in a tool's and a deferred call's metadata, naming the lockgate tool behind it.
_LOCKGATE_TOOL = "lockgate_tool"

OutputT = TypeVar("OutputT")

# lockgate validates the arguments in its pipeline (a refusal the model can correct comes back as
# a retry); here they need only be an object.
_ARGUMENTS_OBJECT = SchemaValidator(
    core_schema.dict_schema(
        keys_schema=core_schema.str_schema(), values_schema=core_schema.any_schema()
    )
)


async def run_agent(
    agent: AbstractAgent[Any, OutputT],
    user_prompt: str | Sequence[Any] | None = None,
    *,
    gates: Mapping[str | Callable[..., Any], Ask],
    leads_to: Mapping[str | Callable[..., Any], str | Callable[..., Any]] | None = None,
    **run_options: Any,
) -> AgentRunResult[OutputT]:
    """Runs a Pydantic AI agent in this workflow, answering its tool approvals with lockgate.

    Each call the agent asks approval for (a tool declared ``requires_approval=True``, or one
    that raised ``ApprovalRequired``) opens the gate declared for its tool, showing the approver
    the tool's name and its arguments (``{"tool": ..., "arguments": {...}}``). The approving
    option answers ``ToolApproved()`` (for exactly those arguments); any other option answers
    ``ToolDenied`` with a sentence naming who declined. A call whose arguments no approver can
    be shown (over :data:`MAX_SUBJECT_BYTES`, or not JSON data) is declined without a gate, and
    the model is told why. Then the agent runs again with the message history and the answers
    (and the usage so far, so ``usage_limits`` bound the whole run), until it finishes.

    An approved call of a :class:`LockgateToolset` runs as the run's driver, who after a gate is
    its approver; having driven it, they may not answer the next gate. Pydantic AI takes the
    answers to the calls of one model response together, so when the model asks several
    approvals at once, each is decided at its own gate, in turn, and the approved calls then run
    as the approver of the last of those gates: lockgate's pipeline judges each call as that
    driver again, so a call they may not make is refused to the model, never run.

    The run's output type is made to admit ``DeferredToolRequests`` when it does not (the agent
    would otherwise refuse to pause); what this returns is never one.

    Args:
        agent: A ``TemporalAgent``, or an ``Agent`` with the ``TemporalDurability`` capability.
        user_prompt: The prompt of the first run.
        gates: For each tool that may ask approval, its gate: an :class:`~lockgate.Ask`
            whose options include an ``"approve"`` case (:class:`Approval` has one). A tool is
            named as the agent knows it (``refunds__issue``), by its lockgate name
            (``refunds:issue``) or by its ``@tool`` function.
        leads_to: For a tool that is not a lockgate tool, the lockgate tool (name or ``@tool``
            function) an approver must be allowed to run. A tool of a :class:`LockgateToolset`
            leads to itself without being named here.
        run_options: Anything else ``agent.run`` takes (``deps``, ``message_history``,
            ``model_settings``, ``usage_limits``, ``output_type``...).

    Returns:
        The last run's result: its output is the agent's real output, its messages the whole
        conversation.

    Raises:
        ApplicationError: A gate is not an approval (no ``"approve"`` option), the agent asked
            approval for a tool no gate is declared for, or deferred a call for external
            execution (nothing here may approve it), or the worker's client lacks
            ``PydanticAIPlugin``: the workflow fails with the sentence.

    Example::

        result = await run_agent(agent, "Refund ticket 42.", gates={
            "refunds:issue": Ask(Approval, of="support-lead", because="Refunds need a lead.")})
    """
    if not workflow.in_workflow():
        raise UserError(
            "run_agent runs an agent inside a Temporal workflow, where lockgate's gates answer its "
            "approvals; call it from the workflow's run method."
        )
    require_client_plugin(PydanticPayloadConverter, "PydanticAIPlugin()")
    declared = {_gate_name(name): ask for name, ask in gates.items()}
    approving = {name: _approving_option(name, ask) for name, ask in declared.items()}
    options = dict(run_options)
    options["output_type"] = _admitting_deferred(options.pop("output_type", agent.output_type))
    leads = {_gate_name(key): tool for key, tool in (leads_to or {}).items()}
    result: AgentRunResult[Any] = await agent.run(user_prompt, **options)
    while isinstance(result.output, DeferredToolRequests):
        requests = result.output
        _check_answerable(requests, declared)
        # Pydantic AI takes the answers to one response's calls only all together (it refuses
        # a partial answer), so each is decided at its own gate before the agent runs again.
        answers = DeferredToolResults()
        for call in requests.approvals:
            name = _gate_name(call.tool_name)
            answers.update(
                await _answer(
                    call,
                    requests.metadata.get(call.tool_call_id) or {},
                    declared[name],
                    approving[name],
                    leads.get(name),
                )
            )
        options["message_history"] = result.all_messages()
        options["usage"] = result.usage
        options["deferred_tool_results"] = answers
        result = await agent.run(None, **options)
    return cast("AgentRunResult[OutputT]", result)


def _gate_name(tool: str | Callable[..., Any]) -> str:
    return model_tool_name(_tool_name(tool))


def _approving_option(name: str, ask: Ask) -> enum.Enum:
    options = ask.options
    if isinstance(options, type) and issubclass(options, enum.Enum):
        for case in options:
            if str(case.value) == APPROVE:
                return case
    raise ApplicationError(
        f"The gate declared for tool '{name}' offers {getattr(options, '__name__', options)!r}, "
        f"which has no '{APPROVE}' option: a Pydantic AI approval is approved or declined, so "
        "declare it as Ask(Approval, of=...) or give the enum a case whose value is 'approve'.",
        type=ErrorCode.VALIDATION_ERROR.value,
        non_retryable=True,
    )


def _admitting_deferred(output_type: Any) -> Any:
    if _admits_deferred(output_type):
        return output_type
    return [output_type, DeferredToolRequests]


def _admits_deferred(output_type: Any) -> bool:
    if output_type is DeferredToolRequests:
        return True
    if isinstance(output_type, (list, tuple)):
        return any(_admits_deferred(item) for item in output_type)
    return False


def _check_answerable(requests: DeferredToolRequests, gates: Mapping[str, Ask]) -> None:
    """Fails the run before anyone is asked if some deferred call has nobody to answer it."""
    if requests.calls:
        names = ", ".join(sorted({call.tool_name for call in requests.calls}))
        raise ApplicationError(
            f"The agent deferred {names} for external execution, which run_agent does not "
            "perform: it answers approvals only. Run those tools in the agent, or handle the "
            "DeferredToolRequests yourself.",
            type=ErrorCode.NOT_FOUND.value,
            non_retryable=True,
        )
    undeclared = sorted(
        {call.tool_name for call in requests.approvals if _gate_name(call.tool_name) not in gates}
    )
    if undeclared:
        raise ApplicationError(
            f"The agent asked approval to call {', '.join(undeclared)}, and no lockgate gate is "
            f"declared for {'it' if len(undeclared) == 1 else 'them'}: declare one in "
            f"run_agent(gates={{'{undeclared[0]}': Ask(Approval, of='<role>')}}). An approval "
            "nobody verified is never given.",
            type=ErrorCode.NOT_FOUND.value,
            non_retryable=True,
        )


async def _answer(
    call: ToolCallPart,
    metadata: Mapping[str, Any],
    ask: Ask,
    approve: enum.Enum,
    leads_to: str | Callable[..., Any] | None,
) -> DeferredToolResults:
    """Opens the gate for one approval; the answer, for the agent's next run."""
    subject = {"tool": call.tool_name, "arguments": call.args_as_dict()}
    unshowable = _unshowable(subject)
    if unshowable is not None:
        denied = ToolDenied(f"{unshowable} No approver was asked; the call did not run.")
        return DeferredToolResults(approvals={call.tool_call_id: denied})
    tool = leads_to or metadata.get(_LOCKGATE_TOOL)
    decided = await gate(
        ask, subject=subject, leads_to={approve: tool} if tool is not None else None
    )
    who = str(decided.by.get("actor"))
    answer: ToolApproved | ToolDenied
    if decided.choice is approve:
        answer = ToolApproved()
    elif decided.by_deadline:
        answer = ToolDenied(
            f"The call to {call.tool_name} was declined: nobody decided within the gate's "
            f"deadline, which takes '{decided.choice.value}'."
        )
    else:
        answer = ToolDenied(
            f"The call to {call.tool_name} was declined by {who}, who chose "
            f"'{decided.choice.value}' at lockgate's gate for '{ask.of}'."
        )
    return DeferredToolResults(
        approvals={call.tool_call_id: answer}, answered_by={call.tool_call_id: who}
    )


def _unshowable(subject: dict[str, Any]) -> str | None:
    """Why an approver cannot be shown ``subject`` (``CODE: sentence``), or None if they can."""
    problem = measure(subject, what="The call's arguments", max_bytes=MAX_SUBJECT_BYTES)
    if problem is not None:
        return f"{problem.code}: {problem.sentence}"
    try:
        canonical_json(subject)
    except (TypeError, ValueError):
        return (
            f"{ErrorCode.VALIDATION_ERROR.value}: The call's arguments are not JSON data an "
            "approver can sign (NaN, infinity, or text that is not Unicode)."
        )
    return None


class LockgateToolset(AbstractToolset[Any]):
    """lockgate tools as a Pydantic AI toolset, each call governed as the workflow's driver.

    The model sees each tool under its provider-safe name (``tickets:read`` is
    ``tickets__read``), with the tool's description and JSON Schema. A call is
    :func:`lockgate.call_tool` as whoever drives the run (the requester until a gate is
    decided, then its approver): the tool's own activity, through the whole pipeline. What a
    refusal becomes is Pydantic AI's own tool error, which the model reads as ``CODE: sentence``:
    arguments lockgate refuses as invalid are a ``ModelRetry``, as Pydantic AI's own tools'
    invalid arguments are (the model is asked to correct them, within ``max_retries``); any
    other refusal or failure (a scope the driver lacks, a rate limit, a confirmation) is a
    ``ToolFailed``, which the model reads and which spends no retries, since asking again
    cannot change the answer: a model made to insist on a forbidden call never ends the run.

    The toolset runs in the workflow, never in an activity: Pydantic AI leaves toolsets it does
    not know where the agent runs, and each call schedules lockgate's sealed activity itself.

    Args:
        tools: ``@tool`` functions, or names of tools the worker's ``LockgatePlugin`` serves.
        requires_approval: The tools (or ``True`` for all) whose every call asks approval first,
            the Pydantic AI way (``ApprovalRequired``); :func:`run_agent` answers it with a
            lockgate gate that leads to the tool. An approved call counts as confirmed for a
            ``confirm=True`` tool: its approver saw exactly these arguments.
        id: The toolset's id, unique among the agent's toolsets (Temporal's integration needs
            one for every toolset).
        max_retries: How often the model may correct a call lockgate refused as invalid.

    Example::

        toolset = LockgateToolset(read_ticket, issue_refund, requires_approval=[issue_refund])
        agent = Agent(model, name="support", toolsets=[toolset],
                      capabilities=[TemporalDurability()])
    """

    def __init__(
        self,
        *tools: str | Callable[..., Any],
        requires_approval: bool | Iterable[str | Callable[..., Any]] = False,
        id: str = "lockgate",
        max_retries: int = 1,
    ) -> None:
        self._tools = {_tool_name(tool): tool for tool in tools}
        self._model_names: dict[str, str] = {}
        for name in self._tools:
            model_name = model_tool_name(name)
            if model_name in self._model_names:
                raise UserError(
                    f"lockgate tools '{self._model_names[model_name]}' and '{name}' are both "
                    f"'{model_name}' to a model; give them LockgateToolsets of their own with "
                    "prefixes (toolset.prefixed(...))."
                )
            self._model_names[model_name] = name
        if isinstance(requires_approval, bool):
            self._approval = set(self._tools) if requires_approval else set()
        else:
            self._approval = {_tool_name(tool) for tool in requires_approval}
            unknown = sorted(self._approval - set(self._tools))
            if unknown:
                raise UserError(
                    f"requires_approval names {', '.join(unknown)}, which this toolset does not "
                    "offer; list it among the toolset's tools."
                )
        self._id = id
        self.max_retries = max_retries

    @property
    def id(self) -> str:
        """The toolset's id."""
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The tools, as the model is offered them."""
        offered: dict[str, ToolsetTool[Any]] = {}
        for model_name, name in self._model_names.items():
            definition = self._definition(name)
            offered[model_name] = ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=model_name,
                    description=definition.description,
                    parameters_json_schema=definition.input_schema,
                    metadata={_LOCKGATE_TOOL: definition.name},
                ),
                max_retries=self.max_retries,
                args_validator=_ARGUMENTS_OBJECT,
            )
        return offered

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
    ) -> Any:
        """Calls the lockgate tool as the run's driver; a refusal is a tool error for the model."""
        lockgate_name = self._model_names[name]
        if lockgate_name in self._approval and not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={_LOCKGATE_TOOL: lockgate_name})
        if not workflow.in_workflow():
            raise UserError(
                f"Tool '{lockgate_name}' is a lockgate tool: it runs in a Temporal workflow (as "
                "the run's verified driver), so run the agent from one, on a worker with "
                "LockgatePlugin."
            )
        result = await call_tool(lockgate_name, tool_args, confirmed=ctx.tool_call_approved)
        if result.success:
            return result.data
        error = result.error
        said = f"{error.code}: {error.message}" if error else "INTERNAL_ERROR: the tool failed."
        if error is not None and error.code == ErrorCode.VALIDATION_ERROR.value:
            raise ModelRetry(said)
        raise ToolFailed(said)

    def _definition(self, name: str) -> LockgateTool:
        tool = self._tools[name]
        if not isinstance(tool, str):
            return definition_of(tool)
        served = current_tools()
        definition = served.get(name) if served is not None else None
        if definition is None:
            raise UserError(
                f"Tool '{name}' is not served by this worker: give LockgatePlugin the tool (or "
                "pass the @tool function to LockgateToolset)."
            )
        return definition


def _tool_name(tool: str | Callable[..., Any]) -> str:
    return tool if isinstance(tool, str) else definition_of(tool).name
