"""What a tool was given and what it returned, as the pipeline's arguments and results.

The registry's small helpers: arguments as a dict (or a refusal naming what they were), a
return value as a :class:`ToolResult`, and a value's type in words.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from lockgate.tools._tool_result import ErrorCode, ToolResult

__all__: list[str] = []

_NOT_A_MAPPING = "Arguments for '{tool}' must be a JSON object of named arguments, not {what}."


def _copy(result: ToolResult) -> ToolResult:
    return ToolResult(result.success, result.data, result.message, result.error, dict(result.meta))


def _sentence(kind: str, text: str) -> str:
    text = text.strip()
    said = f"{kind}: {text}" if text else kind
    return said if said.endswith((".", "!", "?")) else said + "."


def _type_in_words(value: object) -> str:
    names = {list: "a list", tuple: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), f"a {type(value).__name__}")


def _as_result(returned: Any) -> ToolResult:
    """A tool's return value as a result: models become their JSON data, enums their value.

    A returned :class:`ToolResult` is copied: its meta gets this call's stamp, and the same
    object may be returned again (a constant, a cache).
    """
    if isinstance(returned, ToolResult):
        return _copy(returned)
    if isinstance(returned, BaseModel):
        returned = returned.model_dump(mode="json")
    elif isinstance(returned, enum.Enum):
        returned = returned.value
    return ToolResult(True, returned)


def _as_arguments(tool: str, arguments: object) -> ToolResult | tuple[dict[str, Any], object]:
    """The arguments as a dict and the confirmation token taken out of them, or a refusal."""
    if arguments is None:
        return {}, None
    if not isinstance(arguments, Mapping):
        return ToolResult.failed(
            ErrorCode.VALIDATION_ERROR,
            _NOT_A_MAPPING.format(tool=tool, what=_type_in_words(arguments)),
        )
    copied = dict(arguments)
    token = copied.pop("confirm_token", None)
    return copied, token
