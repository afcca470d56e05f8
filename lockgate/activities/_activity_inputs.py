"""The inputs of lockgate's activities: one dataclass each, as the SDK's samples keep them.

Each is what a workflow hands an activity through Temporal, so anyone with namespace access can
write one; what stands for identity or authority in them is honoured only under the worker
secret's seal (see :mod:`._sealed_calls`) or checked by the activity itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockgate.gating import fingerprint

__all__ = [
    "JudgeSignalsInput",
    "OpenStartInput",
    "PrepareCallInput",
    "SignalEntry",
    "ToolActivityInput",
    "VerifyCarriedInput",
    "carry_binding",
]


@dataclass
class ToolActivityInput:
    """The input of a tool's activity.

    Attributes:
        arguments: The tool's arguments.
        actor: Who calls, as lockgate's workflow code verified them. Honoured only when the
            activity's header carries the worker secret's seal over this input and the execution
            that scheduled it; anyone else's ``actor`` is refused.
        proof: A signed proof of ``{kind: "tool", tool, arguments}`` (the arguments' digest) to
            verify and spend here, when no ``actor`` is given.
        channel: The channel of an unsigned caller (``temporal`` by default).
        request_id: Correlates the call in results and audit records.
        idempotency_key: Stable across retries of one step (run, node, visit): a tool with side
            effects can use it to make them happen once. Handed to the tool in ``ctx.extra``.
        confirmed: The workflow received the confirmation this call needed (sealed, as ``actor``).
        node: The graph node this call runs, for the audit record of a refusal.
    """

    arguments: dict[str, Any] = field(default_factory=dict)
    actor: dict[str, Any] | None = None
    proof: dict[str, Any] | None = None
    channel: str = "temporal"
    request_id: str | None = None
    idempotency_key: str | None = None
    confirmed: bool = False
    node: str | None = None


@dataclass
class OpenStartInput:
    """Opens a graph run's start: its channels checked against the graph's model (defaults made
    for this run), and its proof, if any, verified and spent for this execution.

    Attributes:
        graph: The graph.
        version: The version the run follows.
        run: The run's workflow id.
        execution: Its first run id.
        inputs: The starting channel values as sent.
        proof: The start proof, or None for an unsigned start.
    """

    graph: str
    version: int
    run: str
    execution: str
    inputs: dict[str, Any]
    proof: Any = None


@dataclass
class VerifyCarriedInput:
    """Opens the seal on the state a run was handed at continue-as-new.

    Attributes:
        carried: The carried state as the new run received it.
        seal: The seal from the new run's start header, if any.
        workflow_id: The run's workflow id, as the server reports it.
        execution: Its first run id, as the server reports it.
        previous_run: The run it continued from, as the server reports it.
    """

    carried: Any
    seal: str | None
    workflow_id: str
    execution: str
    previous_run: str | None


def carry_binding(
    workflow_id: str, execution: str, previous_run: str, carried: Any
) -> dict[str, Any]:
    """What a carried state's seal vouches for: this state, handed over by this run of this
    execution."""
    return {
        "workflow_id": workflow_id,
        "execution": execution,
        "from_run": previous_run,
        "carried": fingerprint(carried),
    }


@dataclass
class SignalEntry:
    """One signal waiting to be judged: its name, its value, or why it was refused unread."""

    name: str
    value: Any = None
    problem: dict[str, str] | None = None


@dataclass
class JudgeSignalsInput:
    """Judges the answers and resumes that arrived as signals (the `temporal` CLI / UI path),
    in the order they arrived, as the update validators would have."""

    entries: list[SignalEntry]
    graph: str
    run: str
    execution: str
    status: str
    gate: dict[str, Any] | None = None
    parked: dict[str, Any] | None = None
    spent_nonces: list[str] = field(default_factory=list)


@dataclass
class PrepareCallInput:
    """Checks a durable tool call before it waits for anything: who, which tool, may they."""

    tool: str
    arguments: Any
    proof: Any = None
    channel: str = "temporal"
    request_id: str | None = None
    execution: str = ""
