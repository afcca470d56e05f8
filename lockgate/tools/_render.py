"""Turning a result into text for the channel that asked."""

from __future__ import annotations

import json
from typing import Any, Protocol

from lockgate.tools._context import ToolContext
from lockgate.tools._tool_result import ToolResult

__all__ = ["ChannelRenderer", "CliRenderer", "DefaultRenderer", "RendererRegistry"]


class ChannelRenderer(Protocol):
    """Renders results for the channels it supports."""

    def supports(self, channel: str) -> bool:
        """Whether this renderer speaks ``channel``."""
        ...

    def render(self, result: ToolResult) -> str:
        """The text a person on that channel reads."""
        ...


def _label(item: Any) -> str:
    if isinstance(item, dict):
        for key in ("name", "title", "nombre"):
            if item.get(key) is not None:
                return str(item[key])
    return "N/A"


def _value_text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


class DefaultRenderer:
    """Plain text for any channel: the message, then the data as list or detail lines."""

    def supports(self, channel: str) -> bool:
        """Every channel."""
        return True

    def render(self, result: ToolResult) -> str:
        """See :class:`ChannelRenderer`."""
        if not result.success:
            text = f"Error: {result.error.message if result.error else 'Unknown error'}"
            suggestion = result.meta.get("suggestion")
            if result.is_blocked and suggestion:
                text += f"\n\nSuggestion: {suggestion}"
            return text
        lines = [result.message or "Operation completed successfully."]
        data = result.data
        if result.type == "list" and isinstance(data, list):
            lines += [
                f"#{item.get('id', index + 1) if isinstance(item, dict) else index + 1}: "
                f"{_label(item)}"
                for index, item in enumerate(data)
            ]
            pagination = result.meta.get("pagination")
            if isinstance(pagination, dict):
                lines.append(
                    f"Page {pagination['page']} of {pagination['total_pages']} "
                    f"({pagination['total_items']} items total)"
                )
        elif isinstance(data, dict):
            lines += [
                f"- {str(key).replace('_', ' ').capitalize()}: {_value_text(value)}"
                for key, value in data.items()
            ]
        elif data is not None:
            lines.append(_value_text(data))
        return "\n".join(lines)


class CliRenderer:
    """Terminal text with a mark per result type (✓, ✗, ?, ⊘)."""

    def supports(self, channel: str) -> bool:
        """Only ``cli``."""
        return channel == "cli"

    def render(self, result: ToolResult) -> str:
        """See :class:`ChannelRenderer`."""
        kind = result.type
        if kind == "blocked":
            suggestion = result.meta.get("suggestion")
            text = f"⊘ Blocked: {result.error.message if result.error else ''}"
            return text + (f"\n  Suggestion: {suggestion}" if suggestion else "")
        if not result.success:
            code = f" [{result.code}]" if result.code else ""
            return f"✗ Error{code}: {result.error.message if result.error else 'Unknown error'}"
        if kind == "confirmation":
            token = result.confirm_token
            text = f"? Confirm: {result.message}"
            return text + (f"\n  confirm_token: {token}" if token else "")
        body = DefaultRenderer().render(result)
        return f"✓ {body}"


class RendererRegistry:
    """Picks the first renderer that supports the context's channel; JSON when none does."""

    def __init__(self, *renderers: ChannelRenderer, default: ChannelRenderer | None = None):
        self._renderers = list(renderers)
        self.default = default

    def add(self, renderer: ChannelRenderer) -> None:
        """Adds a renderer, consulted after those added before it."""
        self._renderers.append(renderer)

    def render(self, result: ToolResult, ctx: ToolContext | None = None) -> str:
        """The text for ``ctx``'s channel (``default`` when there is no context)."""
        channel = ctx.channel if ctx is not None else "default"
        for renderer in self._renderers:
            if renderer.supports(channel):
                return renderer.render(result)
        if self.default is not None:
            return self.default.render(result)
        return result.to_json()
