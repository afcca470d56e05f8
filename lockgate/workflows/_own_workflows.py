"""Verified gates and governed tools in a workflow of the user's own.

A workflow lockgate did not declare — hand-written, or a LangGraph graph on Temporal's plugin —
asks a gate with :func:`gate` and calls a tool with :func:`call_tool`. The first use gives the
run what a graph run has: its requester, verified from the start proof
``GraphClient.start_workflow`` put in its memo (:mod:`lockgate.activities._workflow_starts`);
the ``decide`` update, whose validator judges every answer by the gate rules before anything is
written; the ``awaiting`` and ``show`` queries clients sign against; and the search attributes
and memo through which ``pending``, the inbox, MCP and the notifier find its open gate. Who
drives the run is the requester until a gate is decided, then whoever decided it; a tool call
runs as the driver, sealed as a graph node's is, and the drivers of the calls since the last gate
are its makers, who may not answer the next one. The run's trail (``show``) records each answer
and each call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from temporalio import workflow

from lockgate.graphs._declare import Ask, GraphDeclarationError
from lockgate.tools._result import ToolResult
from lockgate.workflows._authority_context import OWN_RUN_FINISHED
from lockgate.workflows._own_gates import Decision, OwnGates
from lockgate.workflows._own_tools import OwnTools

__all__ = ["Decision", "call_tool", "gate"]

_RUN = "__lockgate_run__"
_UPDATES = ("decide",)
_QUERIES = ("awaiting", "show")


async def gate(
    ask: Ask,
    *,
    subject: Mapping[str, Any] | None = None,
    leads_to: Mapping[Any, str | Callable[..., Any]] | None = None,
) -> Decision[Any]:
    """Opens a gate in this workflow and waits until it is decided.

    An answer counts only if a verified approver gave it for exactly this opening of this
    execution, as it shows now; the approver is neither the run's requester nor a driver of a
    tool call since the last gate, holds ``ask.of``, and holds what the tool the option leads
    to needs. ``ask.policy``, ``ask.evidence``, ``ask.waivable_by`` and ``ask.deadline`` are
    honoured as at a graph's gate (``evidence_into`` is a graph's: here the evidence comes
    back in the :class:`Decision`).

    Args:
        ask: The gate: its options enum, role, reason, policy, evidence, waiver, deadline.
        subject: What the approver is shown and approves (JSON data); a proof signed for
            another subject is refused.
        leads_to: For the options that lead to a tool, the tool (its name or ``@tool``
            function): an approver choosing that option must be allowed to run it.

    Returns:
        The decision, ``choice`` a case of ``ask.options``.
    """
    return await _own_run().ask(ask, dict(subject) if subject is not None else None, leads_to)


async def call_tool(
    tool: str | Callable[..., Any],
    arguments: Mapping[str, Any] | None = None,
    *,
    confirmed: bool = False,
) -> ToolResult:
    """Calls a lockgate tool from this workflow, as its driver, through the whole pipeline.

    The call is the tool's activity (a local one for a tool declared ``local=True``), with its
    own timeout and retries; who it runs as is sealed, as a graph node's is. A refusal (a
    validation error, a scope the driver lacks, a rate limit) or a failure after its retries
    comes back as an error result, never as an exception.

    Args:
        tool: The tool's name or its ``@tool`` function.
        arguments: Its arguments.
        confirmed: This workflow's code stands for the confirmation a ``confirm=True`` tool
            asks for (as a graph's declaration does for its nodes).

    Returns:
        The tool's result.
    """
    return await _own_run().call(tool, dict(arguments or {}), confirmed)


def _own_run() -> _OwnRun:
    instance = workflow.instance()
    run = getattr(instance, _RUN, None)
    if run is None:
        run = _OwnRun()
        setattr(instance, _RUN, run)
        setattr(instance, OWN_RUN_FINISHED, run.finished)
    return run


class _OwnRun(OwnGates, OwnTools):
    """lockgate in one run of a workflow of the user's own: its state, gates and tool calls,
    and the handlers through which it is answered and read."""

    def __init__(self) -> None:
        super().__init__()
        self._register_handlers()

    def _register_handlers(self) -> None:
        taken = [name for name in _UPDATES if workflow.get_update_handler(name) is not None] + [
            name for name in _QUERIES if workflow.get_query_handler(name) is not None
        ]
        if taken:
            raise GraphDeclarationError(
                f"Workflow '{self.workflow_type}' defines {', '.join(taken)} itself; lockgate's "
                "gates answer through handlers of those names. Rename the workflow's own."
            )
        workflow.set_update_handler("decide", self.decide, validator=self.validate_decide)
        workflow.set_query_handler("awaiting", self.awaiting)
        workflow.set_query_handler("show", self.show)
