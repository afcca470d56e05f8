"""The tool runtime's parts for a program that hosts tools itself, and the interfaces it calls.

A tool's :class:`ToolDefinition` is what ``@tool`` declares (``registry.get(name)``); a failed
result carries a :class:`ToolError` (``result.error.code``, ``.message``).

A :class:`~lockgate.ToolRegistry` runs every call through one pipeline. Around it, a program
may attach hooks (``registry.on_executing``, ``on_executed``, ``on_failed``, which receive the
events here), render results for a channel's people (the renderers), register the verification
tools (one person asks, another resolves, in this process's memory), and give the registry its
own audit sink or rate limiter (the interfaces here; lockgate's own are
:class:`~lockgate.JsonLinesAuditSink`, :class:`~lockgate.InMemoryRateLimiter` and
:class:`~lockgate.redis_ratelimit.RedisRateLimiter`).
"""

from __future__ import annotations

from lockgate.tools._audit_sinks import AuditSink
from lockgate.tools._events import ExecutedEvent, ExecutingEvent, FailedEvent
from lockgate.tools._ratelimit import RateDecision, RateLimiter
from lockgate.tools._render import ChannelRenderer, CliRenderer, DefaultRenderer, RendererRegistry
from lockgate.tools._tool import ToolDefinition
from lockgate.tools._tool_result import ToolError
from lockgate.tools._verification import register_verification

__all__ = [
    "AuditSink",
    "ChannelRenderer",
    "CliRenderer",
    "DefaultRenderer",
    "ExecutedEvent",
    "ExecutingEvent",
    "FailedEvent",
    "RateDecision",
    "RateLimiter",
    "RendererRegistry",
    "ToolDefinition",
    "ToolError",
    "register_verification",
]
