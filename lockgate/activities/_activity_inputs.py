"""The names and inputs of lockgate's activities: one dataclass each, as the SDK's samples keep
them, and one name each, shared by the workflows that schedule them and the worker that runs them.

Every activity lockgate registers is named under ``lockgate.``: a tool ``essay:publish`` is the
activity ``lockgate.tool:essay:publish``, so no activity of the worker it joins can collide with
one of lockgate's.

Each is what a workflow hands an activity through Temporal, so anyone with namespace access can
write one; what stands for identity or authority in them is honoured only under the worker
secret's seal (see :mod:`._sealed_calls`) or checked by the activity itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockgate.identity._canonical import fingerprint

__all__ = [
    "DECLINED_PROTOCOL",
    "JUDGE_SIGNALS",
    "MODEL_CALL",
    "OPEN_START",
    "OPEN_WORKFLOW_START",
    "PREPARE_CALL",
    "QUIET_ANSWERS_PROTOCOL",
    "RECORD_ACCEPTANCE",
    "RUN_PROTOCOL",
    "SETTLING_PROTOCOL",
    "TOOL_ACTIVITY_PREFIX",
    "VERIFY_CARRIED",
    "JudgeSignalsInput",
    "ModelCallInput",
    "OpenStartInput",
    "OpenWorkflowStartInput",
    "PrepareCallInput",
    "SignalEntry",
    "ToolActivityInput",
    "VerifyCarriedInput",
    "carry_binding",
    "handover_binding",
    "tool_activity_name",
]

TOOL_ACTIVITY_PREFIX = "lockgate.tool:"
"""What a tool's activity name starts with; the tool's own name follows."""

OPEN_START = "lockgate.open_start"
"""Checks a graph run's starting fields and start proof (a local activity)."""

OPEN_WORKFLOW_START = "lockgate.open_workflow_start"
"""Verifies the start proof of a workflow of the user's own that uses lockgate (a local
activity)."""

VERIFY_CARRIED = "lockgate.verify_carried"
"""Opens the seal of a state carried across continue-as-new (a local activity)."""

JUDGE_SIGNALS = "lockgate.judge_signals"
"""Judges a batch of signals a graph run received."""

PREPARE_CALL = "lockgate.prepare_call"
"""Verifies and plans a durable tool call (a local activity)."""

RECORD_ACCEPTANCE = "lockgate.record_acceptance"
"""Records in a run's history the seal of the worker whose validator accepted an update (a local
activity: its result is what replay reads back)."""

MODEL_CALL = "lockgate.model"
"""One model request of a graph's agent step (a regular activity, under the worker secret's
seal: only lockgate's own runs spend the deployment's models)."""


RUN_PROTOCOL = 4
"""How a run started today behaves, as its start check records it (``protocol`` in the result of
``lockgate.open_start``, ``lockgate.verify_carried``, ``lockgate.open_workflow_start`` and
``lockgate.prepare_call``), so that every replay of its history behaves the same way.

2: its search attributes are written when it settles (a gate opens, a node parks) and never when
it ends; its start proof came after the start, naming the execution; a refused run completes
with its refusal as its result. A history recorded before has no protocol: 1.

3: besides, an answer or a resume that sends it on writes no search attributes (its memo says
the gate or park closed, and ``pending`` and ``list`` believe the memo only); and a gate closed
where another gate opens or the run ends before the workflow task does writes no memo of its
closing either.

4: besides, a run that ends after its last gate took the option that gate names as its
``rejection`` ends ``declined``, not ``finished``; and every run writes the status it ended with
to its memo (``lockgate_status``) as it ends.
"""

SETTLING_PROTOCOL = 2
"""The protocol that brought what :data:`RUN_PROTOCOL` 2 describes. A run asks whether its
recorded protocol is at least this one, never at least :data:`RUN_PROTOCOL`, which grows: a
run recorded with protocol 2 keeps behaving so under any later one."""

QUIET_ANSWERS_PROTOCOL = 3
"""The protocol that brought what :data:`RUN_PROTOCOL` 3 adds: no visibility write at an answer
or a resume that the run's next state makes redundant."""

DECLINED_PROTOCOL = 4
"""The protocol that brought what :data:`RUN_PROTOCOL` 4 adds: a run its last gate declined
ends ``declined``."""


def tool_activity_name(tool: str) -> str:
    """The activity name of tool ``tool``: ``lockgate.tool:<tool>``."""
    return TOOL_ACTIVITY_PREFIX + tool


@dataclass
class ToolActivityInput:
    """The input of a tool's activity.

    Attributes:
        arguments: The tool's arguments.
        actor: Who calls, as lockgate's workflow code verified them. Honoured only when the
            activity's header carries the worker secret's seal over this input and the execution
            that scheduled it; anyone else's ``actor`` is refused.
        proof: Refused: a tool activity takes no proof, since nothing could keep one from being
            used again by another activity. A signed call is a durable call
            (``lockgate.tool_call``), whose proof names its execution.
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
class OpenWorkflowStartInput:
    """Opens a workflow of the user's own that uses lockgate: the tools it runs local, and a
    start proof in its memo as lockgate wrote it before proofs named their execution (refused
    now; a history recorded then keeps its verdict).

    Attributes:
        workflow_type: The workflow type, as the server names it.
        run: The workflow id.
        execution: Its first run id.
        arguments: The run's arguments as its payload converter writes them (JSON values).
        proof: The start proof an older client put in the memo, or None.
        local_tools: The worker's tools that this run will run as local activities; the
            activity hands them back, so the run's history keeps the choice for every replay.
    """

    workflow_type: str
    run: str
    execution: str
    arguments: list[Any] = field(default_factory=list)
    proof: Any = None
    local_tools: list[str] = field(default_factory=list)


@dataclass
class OpenStartInput:
    """Opens a graph run's start: its fields checked against the graph's model (defaults made
    for this run), and what a parent run handed it. Who started it is judged before, by the
    ``start`` update's validator.

    Attributes:
        graph: The graph.
        version: The version the run follows.
        run: The run's workflow id.
        execution: Its first run id.
        inputs: The starting field values as sent.
        proof: A start proof inside the start input, as lockgate sent it before proofs named
            their execution: refused now (a history recorded then keeps its verdict).
        handed: What a parent run handed this sub-graph run (its driver, depth and parent),
            believed only if ``seal`` opens for exactly the parent run the server names.
        seal: The seal on ``handed``, from the start's headers.
        parent_id: The parent's workflow id, as the server names it.
        parent_run: The parent's run id, as the server names it.
        local_tools: The graph's tools that this run will run as local activities; the
            activity hands them back, so the run's history keeps the choice for every replay.
        accepted: The seal this worker made on the ``start`` update its validator accepted,
            handed back so that the run's history records it (see
            :mod:`lockgate.workflows._accepted_updates`); None for a run started otherwise.
        scheduled: The schedule grant a run a Temporal Schedule started carries (see
            :mod:`lockgate.activities._scheduled_starts`); None for any other run.
        started_at: When the server started this execution (unix seconds), for a scheduled
            run's window.
    """

    graph: str
    version: int
    run: str
    execution: str
    inputs: dict[str, Any]
    proof: Any = None
    handed: Any = None
    seal: str | None = None
    parent_id: str | None = None
    parent_run: str | None = None
    local_tools: list[str] = field(default_factory=list)
    accepted: str | None = None
    scheduled: Any = None
    started_at: float | None = None


@dataclass
class VerifyCarriedInput:
    """Opens the seal on the state a run was handed at continue-as-new.

    Attributes:
        carried: The carried state as the new run received it.
        seal: The seal from the new run's start header, if any.
        workflow_id: The run's workflow id, as the server reports it.
        execution: Its first run id, as the server reports it.
        previous_run: The run it continued from, as the server reports it.
        local_tools: As for :class:`OpenStartInput`: handed back, for the new run's history.
    """

    carried: Any
    seal: str | None
    workflow_id: str
    execution: str
    previous_run: str | None
    local_tools: list[str] = field(default_factory=list)


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


def handover_binding(child: str, parent_id: str, parent_run: str, handed: Any) -> dict[str, Any]:
    """What a sub-graph's seal vouches for: this handover, from this parent run, to this child."""
    return {
        "child": child,
        "parent": parent_id,
        "parent_run": parent_run,
        "handed": fingerprint(handed),
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
    version: int | None = None
    """The run's graph version: whose evidence models judge the answers."""


@dataclass
class ModelCallInput:
    """One model request of an agent step: the conversation so far and what comes next.

    Attributes:
        model: The name the worker's model is given under.
        history: The conversation so far, as Pydantic AI's ``ModelMessagesTypeAdapter`` writes
            it (JSON).
        prompt: The prompt of the conversation's first request (None after it).
        tool_results: What the tools the model asked for last returned, each ``{tool_name,
            tool_call_id, content, outcome}`` (``outcome`` as Pydantic AI's tool returns have
            it: ``success``, ``denied``, ``retried``, ``failed``).
        instructions: The model's instructions.
        tools: The tools offered, each ``{name, description, parameters}`` (a JSON Schema).
        node: The agent step, for the audit record of a refusal.
    """

    model: str
    history: list[Any] = field(default_factory=list)
    prompt: str | None = None
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    instructions: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    node: str | None = None


@dataclass
class PrepareCallInput:
    """Checks a durable tool call before it waits for anything: which tool, may its caller.

    Attributes:
        tool: The tool.
        arguments: Its arguments, as sent.
        proof: A proof inside the call's start input, as lockgate sent it before proofs named
            their execution: refused now (a history recorded then keeps its verdict).
        channel: The channel of an unsigned caller.
        request_id: The call's request id.
        execution: The call's first run id.
        actor: Who calls, as the ``call`` update's validator verified them; None for an
            unsigned call.
        accepted: The seal this worker made on the ``call`` update its validator accepted,
            handed back so that the call's history records it; None for an unsigned call.
        plan: The call asks for its plan only: the plan is handed back (and recorded) for such
            a call alone; a call that runs reads nothing of it.
    """

    tool: str
    arguments: Any
    proof: Any = None
    channel: str = "temporal"
    request_id: str | None = None
    execution: str = ""
    actor: dict[str, Any] | None = None
    accepted: str | None = None
    plan: bool = False
