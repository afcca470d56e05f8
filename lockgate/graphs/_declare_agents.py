"""Declaring an agent step: a graph node where a model works with the node's tools.

The model is Pydantic AI's (the ``pydantic-ai`` extra): lockgate writes no provider client of
its own. A declaration names the model; the worker is given the model itself under that name
(``LockgatePlugin(models={"support-model": model})``), because a model is a client with
credentials, and nothing of it may cross Temporal.
"""

from __future__ import annotations

import enum
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PYDANTIC_AI_HINT", "AgentStep", "ModelBudget", "require_pydantic_ai"]

PYDANTIC_AI_HINT = (
    "Agent steps call their model through Pydantic AI, which is not installed. Install it with "
    "`pip install 'lockgate[pydantic-ai]'` (Python 3.11 or later)."
)
"""What a model node declared (or a worker given models) without the ``pydantic-ai`` extra
says."""


def require_pydantic_ai() -> None:
    """Raises an :class:`ImportError` with the install hint when Pydantic AI is missing.

    Looks for the package without importing it: declaring a graph stays cheap, and only a
    worker that calls a model imports Pydantic AI.
    """
    if importlib.util.find_spec("pydantic_ai") is None:
        raise ImportError(PYDANTIC_AI_HINT)


@dataclass(frozen=True, slots=True)
class ModelBudget:
    """How much an agent step may use its model before a person decides whether it goes on.

    The budget counts the step's model requests (and, with ``tokens``, the input and output
    tokens its model reports). When it is spent before the model has finished, the gate
    ``then_ask`` opens (an options enum an :class:`~lockgate.Ask` offers), like a
    route's ``at_most`` budget: its routes say what each answer does. A route back to the agent
    step carries the step on where it stopped, with a fresh budget.

    Example::

        budget=ModelBudget(requests=4, then_ask=BudgetCall)

    Attributes:
        requests: At most this many model requests per budget.
        tokens: At most this many tokens (input and output, as the model reports them).
        then_ask: The gate that opens when either is spent.
    """

    requests: int | None = None
    tokens: int | None = None
    then_ask: type[enum.Enum] | None = None


@dataclass(frozen=True, eq=False)
class AgentStep:
    """A node where a model works: it reads a field as its prompt, may call the node's tools,
    and its final text lands in a field.

    Every model request is a durable activity (``lockgate.model``), so a worker that dies after
    the model answered never asks it again. Every tool call the model asks for runs as the
    run's driver, through that tool's own sealed activity and the whole pipeline (validation,
    scopes, confirmation, audit), exactly as a tool node runs. A call the driver may not make,
    or of a tool the step does not offer, is refused back to the model as the tool's return
    (it can go on), and recorded in the trail; the run does not park for it. When the model
    answers with text and no tool call, the step ends and its outgoing edge is followed.

    Example::

        triage = AgentStep(
            "support:triage",
            model="support-model",
            instructions="Answer the customer. Refund only what the ticket shows was paid.",
            tools=[read_ticket, issue_refund],
            prompt_from="question",
            output_into="answer",
            budget=ModelBudget(requests=4, then_ask=BudgetCall),
        )

        @graph("support:desk", start=triage, edges=[Edge(triage, reply)],
               routes=[Route(BudgetCall.MORE, to=triage), Route(BudgetCall.STOP, to=reply)],
               asks=[Ask(BudgetCall, of="support_lead", because="The agent used its budget.")])

    Attributes:
        name: The step's name, as a tool's (``support:triage``): its state is the part after
            the last colon, and the trail names it.
        model: The name the worker's model is given under (``LockgatePlugin(models=...)``).
        instructions: The model's instructions (its system prompt).
        tools: The ``@tool`` functions the model may ask for, offered under
            :func:`lockgate.tools._tool_names.model_tool_name` (``tickets:read`` as
            ``tickets__read``).
        prompt_from: The field whose value is the model's prompt (text as it is, anything
            else as JSON).
        output_into: The field the model's final text is written to.
        budget: How much the step may use its model before a person decides (required: an
            agent without one could call its model for ever).
        timeout: Seconds one model request may take.

    Raises:
        ImportError: Pydantic AI is not installed (``pip install 'lockgate[pydantic-ai]'``).
    """

    name: str
    model: str
    instructions: str = ""
    tools: Sequence[Callable[..., Any]] = field(default=())
    prompt_from: str | None = None
    output_into: str | None = None
    budget: ModelBudget | None = None
    timeout: float = 120.0

    def __post_init__(self) -> None:
        require_pydantic_ai()
        # A list given for tools would be shared with the caller, who could change it later.
        object.__setattr__(self, "tools", tuple(self.tools))
