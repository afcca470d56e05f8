"""The model requests of graphs' agent steps: one durable activity, ``lockgate.model``.

A request's result (the model's response and its usage) is recorded in the run's history, so a
worker that dies after the model answered replays without asking the model again. The model is
Pydantic AI's (``pydantic_ai.models.Model``), given to the worker by name; Pydantic AI is
imported here only when a request is made, so lockgate imports without the ``pydantic-ai``
extra.

The activity is the deployment's models, paid for and holding its credentials: anyone with
namespace access could schedule it from a workflow of their own. It therefore runs only under
the worker secret's seal, which lockgate's interceptor puts on the requests of lockgate's own
runs (see :mod:`._sealed_calls`); anything else is refused before any model is asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, cast

from temporalio import activity

from lockgate.activities._activity_inputs import MODEL_CALL, ModelCallInput
from lockgate.activities._refusal import Refusal
from lockgate.activities._sealed_calls import own_run_sealed
from lockgate.gates._authority import Authority
from lockgate.graphs._declare_agents import require_pydantic_ai
from lockgate.tools._tool_result import ErrorCode

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelRequest, ModelRequestPart
    from pydantic_ai.models import Model

__all__ = [
    "MAX_TOOL_RETURN_CHARS",
    "ModelCalls",
    "check_models",
]

MAX_TOOL_RETURN_CHARS = 16_000
"""A tool's return shown to the model is cut to this much JSON: the conversation carries every
return into every later request."""

_OUTCOMES = ("success", "denied", "retried", "failed")

ToolOutcome = Literal["success", "denied", "retried", "failed"]


def check_models(models: Mapping[str, Any]) -> dict[str, Model]:
    """The models a worker is given, each refused unless it is a Pydantic AI model.

    Raises:
        TypeError: A name is not text, or a model is not a ``pydantic_ai.models.Model``.
        ImportError: Pydantic AI is not installed.
    """
    if not models:
        return {}
    require_pydantic_ai()
    from pydantic_ai.models import Model

    checked: dict[str, Model] = {}
    for name, model in models.items():
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"A model is given under the name {name!r}; name it with text.")
        if not isinstance(model, Model):
            raise TypeError(
                f"The model '{name}' is a {type(model).__name__}, not a pydantic_ai.models.Model "
                "(for example OpenAIChatModel('gpt-5'), or FunctionModel(...) in tests)."
            )
        checked[name] = model
    return checked


class ModelCalls:
    """The ``lockgate.model`` activity of one worker: its models by name, and who may ask them.

    Args:
        models: Pydantic AI models by the name agent steps give them.
        authority: The worker's judge (its secret opens the seal of lockgate's own requests).
    """

    def __init__(self, models: Mapping[str, Model], authority: Authority) -> None:
        self.models = dict(models)
        self.authority = authority

    @activity.defn(name=MODEL_CALL)
    async def call_model(self, call: ModelCallInput) -> dict[str, Any]:
        """Makes one model request: the request it sent and the response, as Pydantic AI's
        messages (JSON); the tool calls asked for; the final text; the usage.

        Raises:
            Refusal: ``UNAUTHORIZED`` for a request lockgate's own run did not seal;
                ``NOT_FOUND`` for a model this worker was not given; ``VALIDATION_ERROR`` for a
                history that is not Pydantic AI's messages. Never retried.
        """
        if not own_run_sealed(self.authority, call, "model.call", node=call.node, model=call.model):
            raise Refusal(
                ErrorCode.UNAUTHORIZED.value,
                "lockgate.model makes the model requests of lockgate's own runs only: this one "
                "was not scheduled by one.",
            )
        model = self.models.get(call.model)
        if model is None:
            given = ", ".join(sorted(self.models)) or "none"
            raise Refusal(
                ErrorCode.NOT_FOUND.value,
                f"This worker was given no model named '{call.model}' (it has: {given}); give "
                f"it one: LockgatePlugin(models={{'{call.model}': <a pydantic_ai Model>}}).",
            )
        return await _request(model, call)


async def _request(model: Model, call: ModelCallInput) -> dict[str, Any]:
    from pydantic import ValidationError
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.tools import ToolDefinition

    try:
        history = ModelMessagesTypeAdapter.validate_python(call.history)
    except ValidationError:
        raise Refusal(
            ErrorCode.VALIDATION_ERROR.value,
            "The conversation handed to lockgate.model is not Pydantic AI's messages.",
        ) from None
    request = _next_request(call)
    parameters = ModelRequestParameters(
        function_tools=[
            ToolDefinition(
                name=str(offered["name"]),
                description=str(offered.get("description") or ""),
                parameters_json_schema=dict(offered.get("parameters") or {}),
            )
            for offered in call.tools
        ],
        allow_text_output=True,
    )
    response = await model_request(model, [*history, request], model_request_parameters=parameters)
    tool_calls = []
    for part in response.tool_calls:
        arguments: dict[str, Any] | None
        try:
            arguments = part.args_as_dict()
        except ValueError:  # arguments that are not a JSON object
            arguments = None
        tool_calls.append({"name": part.tool_name, "id": part.tool_call_id, "arguments": arguments})
    return {
        # None dropped: Pydantic AI reads its messages back the same without them, and every
        # later request carries the whole conversation.
        "messages": ModelMessagesTypeAdapter.dump_python(
            [request, response], mode="json", exclude_none=True
        ),
        "tool_calls": tool_calls,
        "text": response.text or "",
        "usage": {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
        },
    }


def _next_request(call: ModelCallInput) -> ModelRequest:
    """The request this call sends: the prompt, or what the tools asked for returned."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

    now = datetime.now(timezone.utc)
    parts: list[ModelRequestPart] = []
    if call.prompt is not None:
        parts.append(UserPromptPart(call.prompt, timestamp=now))
    for result in call.tool_results:
        outcome = result.get("outcome")
        parts.append(
            ToolReturnPart(
                tool_name=str(result.get("tool_name")),
                content=_shown(result.get("content")),
                tool_call_id=str(result.get("tool_call_id")),
                timestamp=now,
                outcome=cast(ToolOutcome, outcome if outcome in _OUTCOMES else "failed"),
            )
        )
    return ModelRequest(parts=parts, instructions=call.instructions or None, timestamp=now)


def _shown(content: Any) -> Any:
    text = json.dumps(content, default=str)
    if len(text) <= MAX_TOOL_RETURN_CHARS:
        return content
    return {"truncated": True, "json": text[:MAX_TOOL_RETURN_CHARS]}
